//! SRPC: fragmentation both ways, a lossy/duplicating/reordering network, many clients,
//! duplicate suppression, timeouts, purge of dead connections and the SEQNO reset.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use hwdb::clock::SystemClock;
use hwdb::result::parse_wire;
use hwdb::server::{HwdbService, Notifier};
use hwdb::srpc::client::Client;
use hwdb::srpc::server::{BackgroundServer, Server};
use hwdb::srpc::wire::{self, Command, SEQNO_LIMIT};
use hwdb::srpc::Timing;
use hwdb::Database;

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn hwdb_server() -> BackgroundServer {
    let db = Database::new(Arc::new(SystemClock), 256 << 20, None).unwrap();
    let svc = HwdbService::new(db, Notifier::new(Duration::from_secs(2), Timing::default()));
    BackgroundServer::start(local(), "HWDB", Timing::default(), svc).unwrap()
}

fn sql(c: &mut Client, stmt: &str) -> hwdb::result::WireResult {
    let raw = c.call(format!("SQL:{stmt}\n").as_bytes()).unwrap_or_else(|e| panic!("{stmt}: {e}"));
    let r = parse_wire(&String::from_utf8(raw).unwrap()).unwrap();
    assert_eq!(r.status, 0, "{stmt}: {}", r.message);
    r
}

mod common;
use common::Rng;


#[test]
fn multi_megabyte_messages_both_ways() {
    // Echo server that answers with a transformed, larger message.
    let server = BackgroundServer::start(local(), "ECHO", Timing::default(), |_p: SocketAddr, req: &[u8]| {
        let mut out = req.to_vec();
        out.reverse();
        out.extend_from_slice(req);
        out
    })
    .unwrap();
    let mut c = Client::connect(server.addr, "ECHO", Duration::from_secs(20)).unwrap();
    let req: Vec<u8> = (0..2_500_000u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    let resp = c.call(&req).unwrap();
    assert_eq!(resp.len(), 5_000_000);
    let mut rev = req.clone();
    rev.reverse();
    assert_eq!(&resp[..req.len()], &rev[..]);
    assert_eq!(&resp[req.len()..], &req[..]);
    // Sizes around every boundary: empty, one fragment, classic maximum, first extended.
    for n in [0usize, 1, 1023, 1024, 1025, 65535, 65536, 300_001] {
        let m = vec![b'x'; n];
        assert_eq!(c.call(&m).unwrap().len(), 2 * n, "size {n}");
    }
}

#[test]
fn multi_megabyte_select_result() {
    let server = hwdb_server();
    let mut c = Client::connect(server.addr, "HWDB", Duration::from_secs(20)).unwrap();
    sql(&mut c, "create table Flows (proto integer, saddr varchar(16), sport integer, daddr varchar(16), dport integer, npkts integer, nbytes integer)");
    for chunk in 0..10 {
        let mut body = String::new();
        for i in 0..5000 {
            body.push_str(&format!("insert into Flows values (6, '192.168.1.{}', {}, '10.0.0.1', 443, 1, {})\n", i % 250, chunk * 5000 + i, i));
        }
        let raw = c.call(format!("BULK:5000\n{body}").as_bytes()).unwrap();
        assert!(raw.starts_with(b"0<|>"));
    }
    let raw = c.call(b"SQL:select * from Flows\n").unwrap();
    assert!(raw.len() > 3_000_000, "response is {} bytes", raw.len());
    let r = parse_wire(&String::from_utf8(raw).unwrap()).unwrap();
    assert_eq!(r.rows.len(), 50_000);
    assert_eq!(r.rows[49_999][3], "49999");
}

/// A UDP relay between one client and a server that drops, duplicates and reorders.
struct FaultProxy {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
    forwarded: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl FaultProxy {
    fn start(server: SocketAddr, seed: u64, drop_pct: u64, dup_pct: u64, reorder_pct: u64) -> FaultProxy {
        let front = UdpSocket::bind(local()).unwrap();
        let back = UdpSocket::bind(local()).unwrap();
        front.set_read_timeout(Some(Duration::from_millis(2))).unwrap();
        back.set_read_timeout(Some(Duration::from_millis(2))).unwrap();
        let addr = front.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (forwarded, dropped) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (s2, f2, d2) = (stop.clone(), forwarded.clone(), dropped.clone());
        let thread = thread::spawn(move || {
            let mut rng = Rng(seed);
            let mut client: Option<SocketAddr> = None;
            // Held packets (for reordering): (to_server, bytes, release time).
            let mut held: Vec<(bool, Vec<u8>, Instant)> = Vec::new();
            let mut buf = vec![0u8; 65536];
            let deliver = |to_server: bool, pkt: &[u8], client: Option<SocketAddr>| {
                if to_server {
                    let _ = back.send_to(pkt, server);
                } else if let Some(c) = client {
                    let _ = front.send_to(pkt, c);
                }
            };
            while !s2.load(Ordering::Relaxed) {
                let mut got: Vec<(bool, Vec<u8>)> = Vec::new();
                if let Ok((n, from)) = front.recv_from(&mut buf) {
                    client = Some(from);
                    got.push((true, buf[..n].to_vec()));
                }
                if let Ok((n, _)) = back.recv_from(&mut buf) {
                    got.push((false, buf[..n].to_vec()));
                }
                for (to_server, pkt) in got {
                    if rng.chance(drop_pct) {
                        d2.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    if rng.chance(reorder_pct) {
                        held.push((to_server, pkt, Instant::now() + Duration::from_millis(1 + rng.next() % 8)));
                        continue;
                    }
                    deliver(to_server, &pkt, client);
                    f2.fetch_add(1, Ordering::Relaxed);
                    if rng.chance(dup_pct) {
                        deliver(to_server, &pkt, client);
                    }
                }
                let now = Instant::now();
                let (due, keep): (Vec<_>, Vec<_>) = held.drain(..).partition(|h| h.2 <= now);
                held = keep;
                for (to_server, pkt, _) in due {
                    deliver(to_server, &pkt, client);
                    f2.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        FaultProxy { addr, stop, thread: Some(thread), forwarded, dropped }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn lossy_network_answers_every_query_exactly_once() {
    let server = hwdb_server();
    let proxy = FaultProxy::start(server.addr, 0x9e37_79b9_7f4a_7c15, 10, 10, 10);
    let mut c = Client::connect(proxy.addr, "HWDB", Duration::from_secs(30)).unwrap();
    sql(&mut c, "create table Events (id integer, note varchar(64))");
    const N: i64 = 300;
    for id in 0..N {
        sql(&mut c, &format!("insert into Events values ({id}, 'event {id}')"));
    }
    // A fragmented request and a fragmented response through the same faults.
    let mut body = String::new();
    for id in N..N + 200 {
        body.push_str(&format!("insert into Events values ({id}, 'bulk event number {id} with some padding')\n"));
    }
    let raw = c.call(format!("BULK:200\n{body}").as_bytes()).unwrap();
    assert!(raw.starts_with(b"0<|>"), "{}", String::from_utf8_lossy(&raw));
    let r = sql(&mut c, "select id from Events");
    let mut ids: Vec<i64> = r.rows.iter().map(|row| row[0].parse().unwrap()).collect();
    assert_eq!(ids.len() as i64, N + 200, "every insert applied exactly once");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len() as i64, N + 200);
    assert!(proxy.dropped.load(Ordering::Relaxed) > 20, "the proxy really dropped packets");
    assert!(proxy.forwarded.load(Ordering::Relaxed) > 1000);
}

#[test]
fn fifty_concurrent_clients() {
    let server = hwdb_server();
    let addr = server.addr;
    let mut setup = Client::connect(addr, "HWDB", Duration::from_secs(10)).unwrap();
    sql(&mut setup, "create table Hits (client integer, n integer)");
    let failures = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..50)
        .map(|k| {
            let failures = failures.clone();
            thread::spawn(move || {
                let run = || -> Result<(), String> {
                    let mut c = Client::connect(addr, "HWDB", Duration::from_secs(20)).map_err(|e| e.to_string())?;
                    for n in 0..20 {
                        let raw = c.call(format!("SQL:insert into Hits values ({k}, {n})\n").as_bytes()).map_err(|e| e.to_string())?;
                        if !raw.starts_with(b"0<|>") {
                            return Err(String::from_utf8_lossy(&raw).into());
                        }
                    }
                    let raw = c.call(format!("SQL:select count(*) from Hits where client = {k}\n").as_bytes()).map_err(|e| e.to_string())?;
                    let r = parse_wire(&String::from_utf8_lossy(&raw)).map_err(|e| e.to_string())?;
                    if r.rows[0][0] != "20" {
                        return Err(format!("client {k} sees {}", r.rows[0][0]));
                    }
                    c.disconnect();
                    Ok(())
                };
                if let Err(e) = run() {
                    failures.lock().unwrap().push(e);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(failures.lock().unwrap().is_empty(), "{:?}", failures.lock().unwrap());
    let r = sql(&mut setup, "select count(*) from Hits");
    assert_eq!(r.rows[0][0], "1000");
}

#[test]
fn duplicate_query_is_answered_from_cache_not_rerun() {
    let calls = Arc::new(AtomicU64::new(0));
    let c2 = calls.clone();
    let server = BackgroundServer::start(local(), "CNT", Timing::default(), move |_p: SocketAddr, _r: &[u8]| {
        format!("call {}", c2.fetch_add(1, Ordering::SeqCst) + 1).into_bytes()
    })
    .unwrap();
    let sock = UdpSocket::bind(local()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 2048];
    let mut recv = |want: Command| -> Vec<u8> {
        loop {
            let (n, _) = sock.recv_from(&mut buf).expect("reply");
            let p = wire::decode(&buf[..n]).unwrap();
            if p.command == want {
                return p.data.to_vec();
            }
        }
    };
    sock.send_to(&wire::connect(77, 1, "CNT"), server.addr).unwrap();
    recv(Command::Cack);
    let q = wire::split_message(77, 2, Command::Query, b"hello").remove(0);
    sock.send_to(&q, server.addr).unwrap();
    assert_eq!(recv(Command::Response), b"call 1");
    // The RESPONSE "got lost": the client retransmits the same QUERY.
    sock.send_to(&q, server.addr).unwrap();
    assert_eq!(recv(Command::Response), b"call 1");
    sock.send_to(&wire::control(77, 2, Command::Rack), server.addr).unwrap();
    sock.send_to(&q, server.addr).unwrap();
    assert_eq!(recv(Command::Response), b"call 1", "still cached after RACK");
    let q3 = wire::split_message(77, 3, Command::Query, b"again").remove(0);
    sock.send_to(&q3, server.addr).unwrap();
    assert_eq!(recv(Command::Response), b"call 2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // A packet for a connection the server does not know gets DISCONNECT.
    let stray = wire::split_message(999, 5, Command::Query, b"x").remove(0);
    sock.send_to(&stray, server.addr).unwrap();
    recv(Command::Disconnect);
}

#[test]
fn calls_to_a_dead_server_time_out() {
    // Nobody listening at all.
    let free = UdpSocket::bind(local()).unwrap().local_addr().unwrap();
    let t = Instant::now();
    let e = Client::connect(free, "HWDB", Duration::from_millis(600)).err().expect("must fail");
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    assert!(t.elapsed() < Duration::from_secs(3));
    // A server that goes away mid-session.
    let mut server = hwdb_server();
    let mut c = Client::connect(server.addr, "HWDB", Duration::from_millis(800)).unwrap();
    sql(&mut c, "show tables");
    server.stop();
    let t = Instant::now();
    let e = c.call(b"SQL:show tables\n").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    assert!(t.elapsed() < Duration::from_secs(3), "bounded by the call timeout");
    // A wrong service name is never acknowledged.
    let server = hwdb_server();
    assert!(Client::connect(server.addr, "NOTHWDB", Duration::from_millis(300)).is_err());
}

/// Drive `server` from this thread until `done` holds (checked every 10 ms) or `max` passes.
fn serve_until(server: &mut Server, handler: &mut dyn hwdb::srpc::server::Handler, max: Duration, mut done: impl FnMut(&Server) -> bool) -> Duration {
    let start = Instant::now();
    while !done(server) && start.elapsed() < max {
        server.run_for(handler, Duration::from_millis(10)).unwrap();
    }
    start.elapsed()
}

#[test]
fn server_gives_up_on_a_client_that_stops_acking() {
    let timing = Timing { tick: Duration::from_millis(5), ..Timing::default() };
    let mut server = Server::bind(local(), "BIG", timing).unwrap();
    let addr = server.local_addr();
    let mut handler = |_p: SocketAddr, _r: &[u8]| vec![b'z'; 50_000];
    let sock = UdpSocket::bind(local()).unwrap();
    sock.send_to(&wire::connect(5, 1, "BIG"), addr).unwrap();
    sock.send_to(&wire::split_message(5, 2, Command::Query, b"q").remove(0), addr).unwrap();
    // Never FACK: after 7 transmissions with doubling timeouts (10 ms .. 640 ms, ~1.27 s in
    // all) the connection is dropped.
    let took = serve_until(&mut server, &mut handler, Duration::from_secs(10), |s| s.stats.timeouts > 0);
    assert_eq!(server.stats.timeouts, 1);
    assert_eq!(server.connections(), 0);
    assert!(took >= Duration::from_millis(1200), "gave up too early ({took:?})");
}

#[test]
fn idle_dead_connections_are_pinged_then_purged() {
    let timing = Timing { ping_interval: Duration::from_millis(100), ..Timing::default() };
    let mut server = Server::bind(local(), "HWDB", timing).unwrap();
    let addr = server.local_addr();
    let mut handler = |_p: SocketAddr, r: &[u8]| r.to_vec();
    let client = thread::spawn(move || Client::connect(addr, "HWDB", Duration::from_secs(5)).unwrap());
    serve_until(&mut server, &mut handler, Duration::from_secs(5), |_| client.is_finished());
    let mut c = client.join().unwrap();
    assert_eq!(server.connections(), 1);
    // The client is idle and not reading its socket, so PINGs go unanswered: purged at the
    // 4th ping time (3 missed PACKs), i.e. about 400 ms after it was last heard.
    let took = serve_until(&mut server, &mut handler, Duration::from_secs(10), |s| s.connections() == 0);
    assert_eq!(server.connections(), 0, "purged after 3 missed PACKs");
    assert_eq!(server.stats.purged, 1);
    assert!(took >= Duration::from_millis(300), "purged too early ({took:?})");
    // The client notices on its next call (DISCONNECT) and reconnects by itself.
    let call = thread::spawn(move || c.call(b"after purge").map(|r| (r, c)));
    serve_until(&mut server, &mut handler, Duration::from_secs(10), |_| call.is_finished());
    let (resp, _c) = call.join().unwrap().unwrap();
    assert_eq!(resp, b"after purge");
    assert_eq!(server.connections(), 1);
}

#[test]
fn seqno_reset_near_the_limit() {
    let server = hwdb_server();
    let mut c = Client::connect(server.addr, "HWDB", Duration::from_secs(5)).unwrap();
    c.set_seqno(SEQNO_LIMIT - 2);
    for _ in 0..5 {
        sql(&mut c, "show tables");
    }
    assert!(c.seqno() < 10, "seqno restarted (now {})", c.seqno());
}

#[test]
fn stop_and_wait_window_of_one_still_works() {
    let timing = Timing { window: 1, ..Timing::default() };
    let server = BackgroundServer::start(local(), "E", timing.clone(), |_p: SocketAddr, r: &[u8]| r.to_vec()).unwrap();
    let mut c = Client::connect_with(server.addr, "E", Duration::from_secs(10), timing).unwrap();
    let m: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    assert_eq!(c.call(&m).unwrap(), m);
}
