//! The SRPC server loop: one UDP socket, one thread, many connections. Requests are
//! handed to a `Handler` as soon as they are complete and its answer is sent back as a
//! (possibly fragmented) RESPONSE. Per connection it keeps the last answer so a
//! duplicate QUERY is answered again instead of being executed twice.

use std::collections::HashMap;
use std::io::{self, ErrorKind};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::transfer::{Incoming, Outgoing, TimerResult};
use super::wire::{self, Command, Packet};
use super::Timing;

/// What the server does with a complete request.
pub trait Handler {
    fn handle(&mut self, peer: SocketAddr, request: &[u8]) -> Vec<u8>;
    /// Called once per loop turn (after packets and timers); for housekeeping.
    fn idle(&mut self) {}
}

impl<F: FnMut(SocketAddr, &[u8]) -> Vec<u8>> Handler for F {
    fn handle(&mut self, peer: SocketAddr, request: &[u8]) -> Vec<u8> {
        self(peer, request)
    }
}

/// A lost datagram is handled by retransmission, so a send error is treated the same.
fn send(sock: &UdpSocket, peer: SocketAddr, pkt: &[u8]) {
    let _ = sock.send_to(pkt, peer);
}

/// Most connections kept at once; beyond this new CONNECTs are refused (ignored).
const MAX_CONNECTIONS: usize = 4096;

struct Conn {
    /// Seqno of the newest request accepted (requests at or below it are duplicates).
    last_seqno: u32,
    incoming: Option<Incoming>,
    /// The response being delivered.
    outgoing: Option<Outgoing>,
    /// Last piece of the newest delivered response, resent on a duplicate QUERY.
    cached_final: Option<(u32, Vec<u8>)>,
    next_ping: Instant,
    ping_outstanding: bool,
    missed_pings: u32,
}

/// Counters for tests and logs.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub requests: u64,
    pub duplicates: u64,
    pub bad_packets: u64,
    pub timeouts: u64,
    pub purged: u64,
}

pub struct Server {
    sock: UdpSocket,
    service: String,
    timing: Timing,
    conns: HashMap<(SocketAddr, u32), Conn>,
    buf: Vec<u8>,
    pub stats: Stats,
}

impl Server {
    pub fn bind(addr: SocketAddr, service: &str, timing: Timing) -> io::Result<Server> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_read_timeout(Some(timing.tick))?;
        Ok(Server { sock, service: service.to_string(), timing, conns: HashMap::new(), buf: vec![0u8; 65536], stats: Stats::default() })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("bound socket has an address")
    }

    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Serve until `stop` is set.
    pub fn run(&mut self, handler: &mut dyn Handler, stop: &AtomicBool) -> io::Result<()> {
        self.run_until(handler, stop, None)
    }

    /// Serve for a while (tests drive the server from their own thread with this).
    pub fn run_for(&mut self, handler: &mut dyn Handler, d: Duration) -> io::Result<()> {
        self.run_until(handler, &AtomicBool::new(false), Some(Instant::now() + d))
    }

    fn run_until(&mut self, handler: &mut dyn Handler, stop: &AtomicBool, end: Option<Instant>) -> io::Result<()> {
        let mut next_timer = Instant::now() + self.timing.tick;
        while !stop.load(Ordering::Relaxed) && end.is_none_or(|e| Instant::now() < e) {
            self.poll(handler)?;
            let now = Instant::now();
            if now >= next_timer {
                self.timers(now);
                next_timer = now + self.timing.tick;
            }
            handler.idle();
        }
        Ok(())
    }

    /// Receive and handle at most one datagram (waits up to one tick).
    pub fn poll(&mut self, handler: &mut dyn Handler) -> io::Result<()> {
        match self.sock.recv_from(&mut self.buf) {
            Ok((n, peer)) => {
                let pkt = self.buf[..n].to_vec();
                match wire::decode(&pkt) {
                    Ok(p) => self.on_packet(peer, &p, handler),
                    Err(_) => self.stats.bad_packets += 1,
                }
                Ok(())
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => Ok(()),
            // ICMP errors from earlier sends to vanished peers surface here on some systems.
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::ConnectionReset) => Ok(()),
            Err(e) => Err(e),
        }
    }


    fn new_conn(&self, seqno: u32) -> Conn {
        Conn {
            last_seqno: seqno,
            incoming: None,
            outgoing: None,
            cached_final: None,
            next_ping: Instant::now() + self.timing.ping_interval,
            ping_outstanding: false,
            missed_pings: 0,
        }
    }

    fn on_packet(&mut self, peer: SocketAddr, p: &Packet, handler: &mut dyn Handler) {
        let key = (peer, p.subport);
        if p.command == Command::Connect {
            if p.data != self.service.as_bytes() {
                self.stats.bad_packets += 1;
                return;
            }
            // A repeated CONNECT (retransmitted, duplicated or late) must not reset the
            // connection: that would forget which queries were already executed.
            if !self.conns.contains_key(&key) {
                if self.conns.len() >= MAX_CONNECTIONS {
                    return;
                }
                let c = self.new_conn(p.seqno);
                self.conns.insert(key, c);
            }
            send(&self.sock, peer, &wire::control(p.subport, p.seqno, Command::Cack));
            return;
        }
        let Some(conn) = self.conns.get_mut(&key) else {
            // Unknown connection (purged, or the server restarted): tell the client to reconnect.
            if matches!(p.command, Command::Query | Command::Fragment | Command::Ping | Command::Seqno) {
                send(&self.sock, peer, &wire::control(p.subport, p.seqno, Command::Disconnect));
            }
            return;
        };
        let now = Instant::now();
        conn.next_ping = now + self.timing.ping_interval;
        conn.ping_outstanding = false;
        conn.missed_pings = 0;
        match p.command {
            Command::Fragment | Command::Query => self.on_data(peer, key, p, handler),
            Command::Fack => {
                if let Some(out) = conn.outgoing.as_mut().filter(|o| o.seqno == p.seqno) {
                    out.on_fack(p.fnum, now);
                    let pkts: Vec<Vec<u8>> = out.pump().into_iter().map(|s| s.to_vec()).collect();
                    for q in pkts {
                        send(&self.sock, peer, &q);
                    }
                }
            }
            Command::Rack => {
                if conn.outgoing.as_ref().is_some_and(|o| o.seqno == p.seqno) {
                    let out = conn.outgoing.take().expect("checked");
                    conn.cached_final = Some((out.seqno, out.final_packet().to_vec()));
                }
            }
            Command::Ping => send(&self.sock, peer, &wire::control(p.subport, p.seqno, Command::Pack)),
            Command::Pack => {}
            Command::Disconnect => {
                self.conns.remove(&key);
                send(&self.sock, peer, &wire::control(p.subport, p.seqno, Command::Dack));
            }
            Command::Seqno => {
                conn.last_seqno = p.seqno;
                conn.incoming = None;
                send(&self.sock, peer, &wire::control(p.subport, p.seqno, Command::Sack));
            }
            _ => self.stats.bad_packets += 1,
        }
    }

    fn on_data(&mut self, peer: SocketAddr, key: (SocketAddr, u32), p: &Packet, handler: &mut dyn Handler) {
        let conn = self.conns.get_mut(&key).expect("caller checked");
        if p.seqno <= conn.last_seqno {
            // A duplicate of a request we already have.
            self.stats.duplicates += 1;
            if p.command == Command::Fragment {
                send(&self.sock, peer, &wire::fack(p.subport, p.seqno, p.fnum, p.nfrags));
            } else if conn.outgoing.as_ref().is_some_and(|o| o.seqno == p.seqno) {
                // Still delivering the answer: acknowledge the query, the timer resends the rest.
                send(&self.sock, peer, &wire::control(p.subport, p.seqno, Command::Qack));
            } else if let Some((_, pkt)) = conn.cached_final.as_ref().filter(|(s, _)| *s == p.seqno) {
                send(&self.sock, peer, pkt);
            }
            return;
        }
        if conn.outgoing.is_some() {
            // One outstanding message per connection: a new request means the client
            // gave up on the previous answer.
            conn.outgoing = None;
        }
        if !conn.incoming.as_ref().is_some_and(|i| i.matches(p.seqno, p.nfrags, p.tlen)) {
            conn.incoming = Some(Incoming::new(p.seqno, p.nfrags, p.tlen));
        }
        let inc = conn.incoming.as_mut().expect("just set");
        if p.command == Command::Fragment {
            inc.add(p.fnum, p.data);
            send(&self.sock, peer, &wire::fack(p.subport, p.seqno, p.fnum, p.nfrags));
            return;
        }
        if inc.received_before_last() != inc.nfrags - 1 {
            return; // The last piece before its fragments: the client will resend.
        }
        inc.add(p.fnum, p.data);
        let request = conn.incoming.take().expect("present").take();
        conn.last_seqno = p.seqno;
        self.stats.requests += 1;
        let response = handler.handle(peer, &request);
        let packets = wire::split_message(p.subport, p.seqno, Command::Response, &response);
        let conn = self.conns.get_mut(&key).expect("still there");
        let mut out = Outgoing::new(p.seqno, packets, &self.timing, Instant::now());
        let first: Vec<Vec<u8>> = out.pump().into_iter().map(|s| s.to_vec()).collect();
        conn.outgoing = Some(out);
        for q in first {
            let _ = self.sock.send_to(&q, peer);
        }
    }

    /// Retransmissions, liveness pings and purging.
    fn timers(&mut self, now: Instant) {
        let mut dead = Vec::new();
        for (key, conn) in self.conns.iter_mut() {
            if let Some(out) = conn.outgoing.as_mut() {
                match out.on_timer(now) {
                    TimerResult::Resend => {
                        for q in out.unacked() {
                            let _ = self.sock.send_to(q, key.0);
                        }
                    }
                    TimerResult::TimedOut => {
                        self.stats.timeouts += 1;
                        dead.push(*key);
                    }
                    TimerResult::Idle => {}
                }
                continue;
            }
            if now >= conn.next_ping {
                if conn.ping_outstanding {
                    conn.missed_pings += 1;
                }
                if conn.missed_pings >= self.timing.max_missed_pings {
                    self.stats.purged += 1;
                    dead.push(*key);
                    continue;
                }
                let _ = self.sock.send_to(&wire::control(key.1, conn.last_seqno, Command::Ping), key.0);
                conn.ping_outstanding = true;
                conn.next_ping = now + self.timing.ping_interval;
            }
        }
        for k in dead {
            self.conns.remove(&k);
        }
    }
}

/// Run a server on a background thread (tests, the CLI's subscription listener).
pub struct BackgroundServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundServer {
    pub fn start<H: Handler + Send + 'static>(addr: SocketAddr, service: &str, timing: Timing, mut handler: H) -> io::Result<BackgroundServer> {
        let mut server = Server::bind(addr, service, timing)?;
        let addr = server.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let thread = std::thread::spawn(move || {
            let _ = server.run(&mut handler, &s2);
        });
        Ok(BackgroundServer { addr, stop, thread: Some(thread) })
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        self.stop();
    }
}
