//! DNS over TCP (port 53) and over TLS (port 853): a thread per client connection (a
//! bounded number), which reads a query, decides it like any other (`handle`: the device is
//! the connection's source address, nftables kept it), answers from the cache or asks the
//! upstream over a TCP connection of its own, and writes the answer, one query after the
//! other. The TLS ends here, in dnsd, so the source address is the device's own: a proxy in
//! front would hide it (docs/dns-resolver.md).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::forward::Route;
use crate::server::{count_step, finish, from_cache, give_cd, guard, handle, take_cd, Outcome, Shared};
use crate::tls::Tls;
use crate::wire;

const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);
/// Plain TCP: a client that sends nothing for this long is closed (as dnsmasq does).
const TCP_IDLE: Duration = Duration::from_secs(10);
/// TLS connections cost a handshake: phones keep them open between lookups (RFC 7858 3.4).
const TLS_IDLE: Duration = Duration::from_secs(30);
const MAX_TCP_CLIENTS: usize = 128;
const MAX_TLS_CLIENTS: usize = 256;

/// Which kind of listener: plain TCP, or TLS with the router's certificate.
#[derive(Clone)]
pub enum Kind {
    Tcp,
    Tls(Arc<Tls>),
}

pub fn serve(shared: Arc<Shared>, listen: SocketAddr, route: Route, kind: Kind) -> std::io::Result<thread::JoinHandle<()>> {
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
            let (shared, active, route, kind) = (shared.clone(), active.clone(), route.clone(), kind.clone());
            let spawned = thread::Builder::new().name("stream-client".into()).spawn(move || {
                guard(&shared, || connection(&shared, conn, &route, &kind));
                active.fetch_sub(1, Ordering::SeqCst);
            });
            if spawned.is_err() {
                // could not start a thread: the closure (and the connection) is gone
            }
        }
    })
}

fn connection(shared: &Shared, conn: TcpStream, route: &Route, kind: &Kind) {
    let Ok(peer) = conn.peer_addr() else { return };
    let idle = if matches!(kind, Kind::Tcp) { TCP_IDLE } else { TLS_IDLE };
    let _ = conn.set_read_timeout(Some(idle));
    let _ = conn.set_write_timeout(Some(idle));
    let _ = conn.set_nodelay(true);
    match kind {
        Kind::Tcp => client(shared, conn, peer.ip(), route, &shared.stats.tcp_queries),
        Kind::Tls(tls) => {
            let Ok(server) = rustls::ServerConnection::new(tls.config()) else { return };
            client(shared, rustls::StreamOwned::new(server, conn), peer.ip(), route, &shared.stats.dot_queries);
        }
    }
}

pub fn read_frame<S: Read>(stream: &mut S) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).ok()?;
    let len = u16::from_be_bytes(len) as usize;
    if len == 0 {
        return None;
    }
    let mut msg = vec![0u8; len];
    stream.read_exact(&mut msg).ok()?;
    Some(msg)
}

pub fn write_frame<S: Write>(stream: &mut S, msg: &[u8]) -> bool {
    let mut out = Vec::with_capacity(msg.len() + 2);
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    stream.write_all(&out).and_then(|_| stream.flush()).is_ok()
}

/// The connection's queries, one after the other.
fn client<S: Read + Write>(shared: &Shared, mut conn: S, peer: IpAddr, route: &Route, counter: &AtomicU64) {
    let mut ups = Upstreams::default();
    while let Some(msg) = read_frame(&mut conn) {
        counter.fetch_add(1, Ordering::Relaxed);
        match answer(shared, peer, msg, route, &mut ups) {
            Some(reply) if !write_frame(&mut conn, &reply) => return,
            _ => {}
        }
    }
}

/// The answer to one query that came over a stream (TCP, TLS, HTTPS): None to send nothing.
pub fn answer(shared: &Shared, peer: IpAddr, mut msg: Vec<u8>, route: &Route, ups: &mut Upstreams) -> Option<Vec<u8>> {
    let t0 = Instant::now();
    let cd = take_cd(&mut msg, route.validator.is_some());
    match handle(shared, peer, &msg, true) {
        Outcome::Reply(r) => Some(r),
        Outcome::Drop => None,
        Outcome::Forward(mut fwd) => {
            fwd.cd = cd;
            if let Some(mut reply) = from_cache(shared, &fwd, &msg, t0) {
                give_cd(&mut reply, cd);
                return Some(reply).filter(|r| !r.is_empty());
            }
            shared.stats.forwarded.fetch_add(1, Ordering::Relaxed);
            let target = route.tcp_target(&fwd.name);
            count_step(shared, target == route.fallback);
            let mut reply = match ups.ask(target, fwd.upstream_query(&msg)) {
                Some(ans) => finish(shared, &fwd, &ans, t0.elapsed().as_micros() as u64).unwrap_or(ans),
                None => {
                    shared.stats.timeouts.fetch_add(1, Ordering::Relaxed);
                    shared.query_event(&fwd.mac, fwd.qtype, "timeout", t0.elapsed().as_micros() as u64, &fwd.name);
                    wire::parse_query(&msg).map(|q| wire::reply(&msg, &q, wire::RCODE_SERVFAIL)).unwrap_or_default()
                }
            };
            give_cd(&mut reply, cd);
            Some(reply).filter(|r| !r.is_empty())
        }
    }
}

/// Upstream TCP connections of one client connection, one per upstream it has used.
#[derive(Default)]
pub struct Upstreams(Vec<(SocketAddr, TcpStream)>);

impl Upstreams {
    pub fn ask(&mut self, upstream: SocketAddr, msg: &[u8]) -> Option<Vec<u8>> {
        for _attempt in 0..2 {
            let i = match self.0.iter().position(|(a, _)| *a == upstream) {
                Some(i) => i,
                None => {
                    let s = TcpStream::connect_timeout(&upstream, Duration::from_secs(2)).ok()?;
                    let _ = s.set_read_timeout(Some(UPSTREAM_TIMEOUT));
                    let _ = s.set_nodelay(true);
                    self.0.push((upstream, s));
                    self.0.len() - 1
                }
            };
            let s = &mut self.0[i].1;
            if write_frame(s, msg) {
                if let Some(ans) = read_frame(s) {
                    return Some(ans);
                }
            }
            self.0.swap_remove(i); // the upstream closed an idle connection: reconnect once
        }
        None
    }
}
