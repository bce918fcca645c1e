//! How the stream doors (TCP, DNS over TLS, DNS over HTTPS) ask upstream (the validating
//! resolver, or dnsmasq): over UDP first, as port 53 does, and over TCP only for an answer
//! that did not fit (TC).
//!
//! Why not TCP for everything: a resolver serves few TCP connections at once (unbound: 10 a
//! thread, `incoming-num-tcp`; dnsmasq: 20 children), and a TCP connection carries one query
//! at a time here. Thirty pipelined queries of a phone's DNS over TLS meant thirty upstream
//! connections; past the resolver's limit they waited in its accept queue until the
//! client's own timeout, and never-seen names over TLS and HTTPS were lost where port 53,
//! over UDP, lost none. Over UDP every query is in flight at once, under a random id of our
//! own, and an answer counts only from the address it was sent to, under an id we gave,
//! with the question we asked (forward.rs's table, as port 53).

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::forward::{InFlight, Table, VALIDATOR_TIMEOUT};
use crate::wire;

/// A query asked over UDP gets this long (the validating resolver may be fetching keys).
const UDP_TIMEOUT: Duration = VALIDATOR_TIMEOUT;
/// An answer too big for UDP, asked again over TCP.
const TCP_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle upstream TCP connections kept per upstream (few: TCP is for big answers only).
const POOL_IDLE: usize = 8;
const FLAG_TC: u8 = 0x02;

pub struct Upstream {
    udp4: Option<Arc<Mux>>,
    udp6: Option<Arc<Mux>>,
    tcp: Pool,
}

impl Upstream {
    /// A UDP socket (and its reader thread) per address family this host has.
    pub fn start() -> io::Result<Arc<Upstream>> {
        let udp4 = Some(Mux::start("0.0.0.0:0")?);
        let udp6 = Mux::start("[::]:0").ok(); // a host without IPv6 asks IPv4 upstreams only
        Ok(Arc::new(Upstream { udp4, udp6, tcp: Pool::default() }))
    }

    /// The upstream's answer to `msg` (the client's id in it), or None when it gave none.
    pub fn ask(&self, upstream: SocketAddr, msg: &[u8]) -> Option<Vec<u8>> {
        let mux = if upstream.is_ipv4() { &self.udp4 } else { &self.udp6 };
        if let Some(mux) = mux {
            let answer = mux.ask(upstream, msg)?;
            if answer[2] & FLAG_TC == 0 {
                return Some(answer);
            }
        }
        self.tcp.ask(upstream, msg)
    }
}

// ------------------------------------------------------------------ UDP

/// One UDP socket: the queries in flight on it (each waiting on its own channel), and a
/// thread that hands each answer to its query.
struct Mux {
    sock: UdpSocket,
    table: Mutex<Table<SyncSender<Vec<u8>>>>,
}

impl Mux {
    fn start(bind: &str) -> io::Result<Arc<Mux>> {
        let sock = UdpSocket::bind(bind)?;
        let mux = Arc::new(Mux { sock: sock.try_clone()?, table: Mutex::new(Table::new()) });
        let reader = mux.clone();
        thread::Builder::new().name("stream-up-udp".into()).spawn(move || {
            let mut buf = vec![0u8; 65535];
            loop {
                let Ok((n, from)) = sock.recv_from(&mut buf) else { continue };
                // anything but the answer to a question in flight is dropped (see forward.rs)
                let taken = reader.lock().take_answer(from, &buf[..n]);
                if let Ok(q) = taken {
                    let _ = q.data.try_send(buf[..n].to_vec()); // its asker may have given up
                }
            }
        })?;
        Ok(mux)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table<SyncSender<Vec<u8>>>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ask(&self, upstream: SocketAddr, msg: &[u8]) -> Option<Vec<u8>> {
        let question_end = wire::parse_query(msg).ok()?.end;
        let (tx, rx) = sync_channel(1);
        let now = Instant::now();
        let q = InFlight::new(upstream, now, msg.to_vec(), question_end, tx);
        let sent = {
            let mut table = self.lock();
            drop(table.expired(now)); // the slots of questions nobody waits for any more
            let id = table.insert(q, 0, upstream, UDP_TIMEOUT, now).ok()?;
            table.query(id).to_vec()
        };
        self.sock.send_to(&sent, upstream).ok()?;
        let mut answer = rx.recv_timeout(UDP_TIMEOUT).ok()?;
        answer[..2].copy_from_slice(&msg[..2]);
        Some(answer)
    }
}

// ------------------------------------------------------------------ TCP

/// TCP connections to the upstreams, for answers too big for UDP: one is taken for a
/// query and put back after its answer.
#[derive(Default)]
struct Pool {
    idle: Mutex<HashMap<SocketAddr, Vec<TcpStream>>>,
}

impl Pool {
    fn take(&self, upstream: SocketAddr) -> Option<TcpStream> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&upstream).and_then(Vec::pop)
    }

    fn put(&self, upstream: SocketAddr, conn: TcpStream) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.entry(upstream).or_default();
        if list.len() < POOL_IDLE {
            list.push(conn);
        }
    }

    fn ask(&self, upstream: SocketAddr, msg: &[u8]) -> Option<Vec<u8>> {
        // a kept connection the upstream has closed meanwhile fails: then once more, fresh
        for reuse in [true, false] {
            let mut conn = match if reuse { self.take(upstream) } else { None } {
                Some(c) => c,
                None if reuse => continue,
                None => {
                    let s = TcpStream::connect_timeout(&upstream, Duration::from_secs(2)).ok()?;
                    let _ = s.set_read_timeout(Some(TCP_TIMEOUT));
                    let _ = s.set_nodelay(true);
                    s
                }
            };
            if conn.write_all(&framed(msg)).is_ok() {
                if let Some(ans) = read_frame(&mut conn) {
                    self.put(upstream, conn);
                    return Some(ans);
                }
            }
        }
        None
    }
}

/// A DNS message with its two-byte length, as TCP carries it.
pub fn framed(msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len() + 2);
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    out
}

pub fn read_frame<S: io::Read>(stream: &mut S) -> Option<Vec<u8>> {
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
