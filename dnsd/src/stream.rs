//! DNS over TCP (port 53) and over TLS (port 853): a thread per client connection (a
//! bounded number) reads its queries and decides each like any other (`handle`: the device
//! is the connection's source address, which nftables kept). Answers it has at once (the
//! policy's, the cache's) go back at once; the others are asked upstream on a thread each
//! (at most MAX_PENDING a connection, then the reader waits its turn), over UDP as port
//! 53's are (upstream.rs: a resolver serves few TCP connections at once), and go back as
//! they come: out of order, as RFC 7766 allows, so one slow name does not hold up the rest
//! of a page's lookups. The TLS ends here, in dnsd,
//! so the source address is the device's own: a proxy in front would hide it
//! (docs/dns-resolver.md).

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::forward::Route;
use crate::server::{count_step, finish, from_cache, give_cd, guard, handle, take_cd, Forward, Outcome, Shared};
use crate::tls::Tls;
use crate::upstream::{framed, read_frame, Upstream};
use crate::wire;

/// Plain TCP: a client that sends nothing for this long is closed (as dnsmasq does).
const TCP_IDLE: Duration = Duration::from_secs(10);
/// TLS connections cost a handshake: phones keep them open between lookups (RFC 7858 3.4).
const TLS_IDLE: Duration = Duration::from_secs(30);
const MAX_TCP_CLIENTS: usize = 128;
const MAX_TLS_CLIENTS: usize = 256;
/// Queries of one connection being asked upstream at once.
const MAX_PENDING: usize = 32;

/// Which kind of listener: plain TCP, or TLS with the router's certificate.
#[derive(Clone)]
pub enum Kind {
    Tcp,
    Tls(Arc<Tls>),
}

pub fn serve(shared: Arc<Shared>, listen: SocketAddr, route: Route, pool: Arc<Upstream>, kind: Kind)
             -> io::Result<thread::JoinHandle<()>> {
    let listener = TcpListener::bind(listen)?;
    let active = Arc::new(AtomicUsize::new(0));
    let (limit, name) = match kind {
        Kind::Tcp => (MAX_TCP_CLIENTS, "tcp-accept"),
        Kind::Tls(_) => (MAX_TLS_CLIENTS, "tls-accept"),
    };
    thread::Builder::new().name(name.into()).spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            if active.fetch_add(1, Ordering::SeqCst) >= limit {
                active.fetch_sub(1, Ordering::SeqCst);
                continue; // dropping `conn` closes it
            }
            let (shared, active, route, pool, kind) = (shared.clone(), active.clone(), route.clone(), pool.clone(), kind.clone());
            let spawned = thread::Builder::new().name("stream-client".into()).spawn(move || {
                guard(&shared, || connection(&shared, conn, &route, &pool, &kind));
                active.fetch_sub(1, Ordering::SeqCst);
            });
            if spawned.is_err() {
                // could not start a thread: the closure (and the connection) is gone
            }
        }
    })
}

// ------------------------------------------------------------------ the client's connection

/// Where a connection's answers are written: by its reader and by its queries' threads.
trait Sink: Send + Sync {
    fn send(&self, msg: &[u8]) -> bool;
}

struct PlainSink(Mutex<TcpStream>);

impl Sink for PlainSink {
    fn send(&self, msg: &[u8]) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).write_all(&framed(msg)).is_ok()
    }
}

/// TLS: the session's state under one lock; the socket is read outside it (a blocking
/// read would hold every writer up) and written under it.
struct TlsSink(Mutex<(rustls::ServerConnection, TcpStream)>);

impl TlsSink {
    fn flush(state: &mut (rustls::ServerConnection, TcpStream)) -> bool {
        while state.0.wants_write() {
            if state.0.write_tls(&mut state.1).is_err() {
                return false;
            }
        }
        true
    }
}

impl Sink for TlsSink {
    fn send(&self, msg: &[u8]) -> bool {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        state.0.writer().write_all(&framed(msg)).is_ok() && Self::flush(&mut state)
    }
}

/// What comes in: whole DNS messages, from the socket directly or through TLS.
trait Source {
    fn next(&mut self) -> Option<Vec<u8>>;
}

struct PlainSource(TcpStream);

impl Source for PlainSource {
    fn next(&mut self) -> Option<Vec<u8>> {
        read_frame(&mut self.0)
    }
}

struct TlsSource {
    raw: TcpStream,
    sink: Arc<TlsSink>,
    plain: Vec<u8>,
}

impl Source for TlsSource {
    fn next(&mut self) -> Option<Vec<u8>> {
        let mut net = [0u8; 16 * 1024];
        loop {
            if self.plain.len() >= 2 {
                let len = u16::from_be_bytes([self.plain[0], self.plain[1]]) as usize;
                if len == 0 {
                    return None;
                }
                if self.plain.len() >= 2 + len {
                    let msg = self.plain[2..2 + len].to_vec();
                    self.plain.drain(..2 + len);
                    return Some(msg);
                }
            }
            let n = self.raw.read(&mut net).ok().filter(|&n| n > 0)?;
            let mut state = self.sink.0.lock().unwrap_or_else(|e| e.into_inner());
            let mut input = &net[..n];
            while !input.is_empty() {
                state.0.read_tls(&mut input).ok()?;
                state.0.process_new_packets().ok()?; // a bad record or handshake: the connection ends
            }
            let mut chunk = [0u8; 16 * 1024];
            loop {
                match state.0.reader().read(&mut chunk) {
                    Ok(0) => return None, // close_notify
                    Ok(k) => self.plain.extend_from_slice(&chunk[..k]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => return None,
                }
            }
            if !TlsSink::flush(&mut state) {
                return None;
            }
        }
    }
}

fn connection(shared: &Arc<Shared>, conn: TcpStream, route: &Route, pool: &Arc<Upstream>, kind: &Kind) {
    let Ok(peer) = conn.peer_addr() else { return };
    let idle = if matches!(kind, Kind::Tcp) { TCP_IDLE } else { TLS_IDLE };
    let _ = conn.set_read_timeout(Some(idle));
    let _ = conn.set_write_timeout(Some(idle));
    let _ = conn.set_nodelay(true);
    let Ok(writer) = conn.try_clone() else { return };
    match kind {
        Kind::Tcp => {
            let sink: Arc<dyn Sink> = Arc::new(PlainSink(Mutex::new(writer)));
            client(shared, PlainSource(conn), sink, peer.ip(), route, pool, &shared.stats.tcp_queries);
        }
        Kind::Tls(tls) => {
            let Ok(session) = rustls::ServerConnection::new(tls.config()) else { return };
            let sink = Arc::new(TlsSink(Mutex::new((session, writer))));
            let source = TlsSource { raw: conn, sink: sink.clone(), plain: Vec::new() };
            client(shared, source, sink, peer.ip(), route, pool, &shared.stats.dot_queries);
        }
    }
}

/// The connection's queries: answered at once where possible, else asked upstream on a
/// thread each (answers out of order); at MAX_PENDING the reader asks itself, so a client
/// that sends faster than the upstream answers waits.
fn client<S: Source>(shared: &Arc<Shared>, mut source: S, sink: Arc<dyn Sink>, peer: IpAddr, route: &Route,
                     pool: &Arc<Upstream>, counter: &AtomicU64) {
    let pending = Arc::new(AtomicUsize::new(0));
    while let Some(msg) = source.next() {
        counter.fetch_add(1, Ordering::Relaxed);
        match prepare(shared, peer, msg, route) {
            Step::Done(Some(reply)) => {
                if !sink.send(&reply) {
                    return;
                }
            }
            Step::Done(None) => {}
            Step::Ask(ask) => {
                if pending.fetch_add(1, Ordering::SeqCst) >= MAX_PENDING {
                    pending.fetch_sub(1, Ordering::SeqCst);
                    if let Some(reply) = resolve(shared, ask, route, pool) {
                        if !sink.send(&reply) {
                            return;
                        }
                    }
                    continue;
                }
                let (shared, sink, route, pool, pending) =
                    (shared.clone(), sink.clone(), route.clone(), pool.clone(), pending.clone());
                let spawned = thread::Builder::new().name("stream-ask".into()).spawn(move || {
                    guard(&shared, || {
                        if let Some(reply) = resolve(&shared, ask, &route, &pool) {
                            sink.send(&reply);
                        }
                    });
                    pending.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    return; // out of threads: the client tries again
                }
            }
        }
    }
}

#[cfg(test)]
fn write_frame<S: Write>(stream: &mut S, msg: &[u8]) -> bool {
    stream.write_all(&framed(msg)).is_ok()
}

// ------------------------------------------------------------------ one query

/// A query that must be asked upstream: what `resolve` needs.
pub struct Ask {
    fwd: Forward,
    msg: Vec<u8>,
    t0: Instant,
}

pub enum Step {
    /// The answer (None: send nothing).
    Done(Option<Vec<u8>>),
    Ask(Ask),
}

/// The first half of a query that came over a stream (TCP, TLS, HTTPS): the policy's
/// answer or the cache's, or what to ask upstream.
pub fn prepare(shared: &Shared, peer: IpAddr, mut msg: Vec<u8>, route: &Route) -> Step {
    let t0 = Instant::now();
    let cd = take_cd(&mut msg, route.validator.is_some());
    match handle(shared, peer, &msg, true) {
        Outcome::Reply(r) => Step::Done(Some(r)),
        Outcome::Drop => Step::Done(None),
        Outcome::Forward(mut fwd) => {
            fwd.cd = cd;
            if let Some(mut reply) = from_cache(shared, &fwd, &msg, t0) {
                give_cd(&mut reply, cd);
                return Step::Done(Some(reply).filter(|r| !r.is_empty()));
            }
            Step::Ask(Ask { fwd, msg, t0 })
        }
    }
}

/// The second half: ask upstream over TCP, check and log the answer.
pub fn resolve(shared: &Shared, ask: Ask, route: &Route, pool: &Upstream) -> Option<Vec<u8>> {
    let Ask { fwd, msg, t0 } = ask;
    shared.stats.forwarded.fetch_add(1, Ordering::Relaxed);
    let target = route.tcp_target(&fwd.name);
    count_step(shared, target == route.fallback);
    let mut reply = match pool.ask(target, fwd.upstream_query(&msg)) {
        Some(ans) => finish(shared, &fwd, &ans, t0.elapsed().as_micros() as u64).unwrap_or(ans),
        None => {
            shared.stats.timeouts.fetch_add(1, Ordering::Relaxed);
            shared.query_event(&fwd.mac, fwd.qtype, "timeout", t0.elapsed().as_micros() as u64, &fwd.name);
            wire::parse_query(&msg).map(|q| wire::reply(&msg, &q, wire::RCODE_SERVFAIL)).unwrap_or_default()
        }
    };
    give_cd(&mut reply, fwd.cd);
    Some(reply).filter(|r| !r.is_empty())
}

/// Both halves, one after the other (DNS over HTTPS: a request is one query).
pub fn answer(shared: &Shared, peer: IpAddr, msg: Vec<u8>, route: &Route, pool: &Upstream) -> Option<Vec<u8>> {
    match prepare(shared, peer, msg, route) {
        Step::Done(reply) => reply,
        Step::Ask(ask) => resolve(shared, ask, route, pool),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::policy::{Device, State};
    use std::net::Ipv4Addr;

    /// The answer a fake resolver gives: one A record (192.0.2.9).
    fn a_record(q: &[u8]) -> Vec<u8> {
        let mut a = q.to_vec();
        a[2] |= 0x80;
        a[7] = 1;
        a.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 9]);
        a
    }

    /// A resolver like unbound on one port: UDP, and TCP serving at most `tcp_slots`
    /// connections at once (unbound's `incoming-num-tcp`; the others wait in its accept
    /// queue, and a served one stays open while its client keeps it). Names starting "slow"
    /// are answered after half a second; over UDP, names starting "big" get a truncated
    /// answer (TC, nothing in it), as if the answer did not fit.
    pub(crate) fn fake_resolver(tcp_slots: usize) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let udp = std::net::UdpSocket::bind(addr).unwrap();
        let slow = |name: &str| {
            if name.starts_with("slow") {
                thread::sleep(Duration::from_millis(500));
            }
        };
        thread::spawn(move || {
            let mut buf = [0u8; 512];
            while let Ok((n, from)) = udp.recv_from(&mut buf) {
                let (q, udp) = (buf[..n].to_vec(), udp.try_clone().unwrap());
                thread::spawn(move || {
                    let name = wire::parse_query(&q).unwrap().name;
                    slow(&name);
                    let answer = if name.starts_with("big") {
                        let mut tc = q.clone();
                        tc[2] |= 0x82;
                        tc
                    } else {
                        a_record(&q)
                    };
                    udp.send_to(&answer, from).unwrap();
                });
            }
        });
        let open = Arc::new(AtomicUsize::new(0));
        thread::spawn(move || loop {
            if open.load(Ordering::SeqCst) >= tcp_slots {
                thread::sleep(Duration::from_millis(5));
                continue;
            }
            let Ok((mut conn, _)) = listener.accept() else { continue };
            open.fetch_add(1, Ordering::SeqCst);
            let open = open.clone();
            thread::spawn(move || {
                while let Some(q) = read_frame(&mut conn) {
                    slow(&wire::parse_query(&q).unwrap().name);
                    if !write_frame(&mut conn, &a_record(&q)) {
                        break;
                    }
                }
                open.fetch_sub(1, Ordering::SeqCst);
            });
        });
        addr
    }

    /// dnsd's state with one permitted device, 127.0.0.1, and the route to `upstream` (the
    /// validating resolver).
    pub(crate) fn one_device(upstream: SocketAddr) -> (Arc<Shared>, Route) {
        let (tx, rx) = std::sync::mpsc::sync_channel(100_000);
        std::mem::forget(rx);
        let shared = Shared::new(tx);
        let dev = Device { mac: Arc::from("02:00:00:00:00:01"), state: State::Permitted, allowlist: false,
                           router: Ipv4Addr::new(10, 2, 0, 1), router6: None };
        shared.policy.write().unwrap().devices.insert("127.0.0.1".parse().unwrap(), dev);
        (shared, Route::new("127.0.0.1:9".parse().unwrap(), Some(upstream), vec![]))
    }

    /// dnsd's TCP door in front of `upstream`, and a client connection to it from the device.
    fn door(upstream: SocketAddr) -> (Arc<Shared>, TcpStream) {
        let (shared, route) = one_device(upstream);
        let listen: SocketAddr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        serve(shared.clone(), listen, route, Upstream::start().unwrap(), Kind::Tcp).unwrap();
        let c = loop {
            if let Ok(c) = TcpStream::connect(listen) {
                break c;
            }
            thread::sleep(Duration::from_millis(10));
        };
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        (shared, c)
    }

    fn id(m: &[u8]) -> u16 {
        u16::from_be_bytes([m[0], m[1]])
    }

    #[test]
    fn answers_come_back_as_they_come_not_in_order() {
        let (shared, mut c) = door(fake_resolver(64));
        assert!(write_frame(&mut c, &wire::build_query(1, "slow.example", wire::TYPE_A)));
        assert!(write_frame(&mut c, &wire::build_query(2, "fast.example", wire::TYPE_A)));
        let first = read_frame(&mut c).unwrap();
        let second = read_frame(&mut c).unwrap();
        assert_eq!((id(&first), id(&second)), (2, 1), "the fast name is not held up by the slow one");
        assert_eq!(shared.stats.tcp_queries.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn pipelined_queries_are_all_answered_by_a_resolver_that_serves_few_tcp_connections() {
        // A phone's DNS over TLS sends a page's names down one connection at once. Asked one
        // upstream TCP connection per query, a resolver serving two at a time left the rest
        // waiting in its accept queue until dnsd gave up: SERVFAIL.
        let (shared, mut c) = door(fake_resolver(2));
        let count = MAX_PENDING as u16;
        for i in 0..count {
            assert!(write_frame(&mut c, &wire::build_query(100 + i, &format!("slow-{i}.example"), wire::TYPE_A)));
        }
        let mut answered: Vec<u16> = Vec::new();
        for _ in 0..count {
            let answer = read_frame(&mut c).expect("an answer for every query");
            let rcode = answer[3] & 0x0f;
            assert_eq!((rcode, answer[7]), (0, 1), "query {} answered with its record, not SERVFAIL", id(&answer));
            answered.push(id(&answer));
        }
        answered.sort();
        assert_eq!(answered, (100..100 + count).collect::<Vec<_>>());
        assert_eq!(shared.stats.timeouts.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn an_answer_too_big_for_udp_is_asked_again_over_tcp() {
        let (_, mut c) = door(fake_resolver(2));
        assert!(write_frame(&mut c, &wire::build_query(7, "big.example", wire::TYPE_A)));
        let answer = read_frame(&mut c).unwrap();
        assert_eq!(id(&answer), 7);
        assert_eq!(answer[2] & 0x02, 0, "not truncated");
        assert_eq!(answer[7], 1, "the record, from the TCP answer");
    }
}
