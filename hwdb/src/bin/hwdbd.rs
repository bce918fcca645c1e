//! hwdbd: the Homework database daemon.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::exit;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use hwdb::clock::SystemClock;
use hwdb::persist::PersistStore;
use hwdb::server::{load_schema, log, HwdbService, Notifier};
use hwdb::srpc::server::Server;
use hwdb::srpc::Timing;
use hwdb::Database;

const USAGE: &str = "usage: hwdbd [--port N] [--listen ADDR] [--memory BYTES] [--schema FILE] [--state-dir DIR]
             [--pidfile FILE] [--service NAME] [--ping-interval SECS] [--callback-timeout SECS]
  --port N             UDP port (default 987; 0 picks a free one, printed in the ready line)
  --listen ADDR        address to listen on (default 127.0.0.1)
  --memory BYTES       size of the stream ring buffer (default 64 MiB; K/M/G suffixes allowed)
  --schema FILE        statements run at start (creating an existing table is a no-op)
  --state-dir DIR      keep persistent tables, the catalog and saved queries in DIR/hwdb.sqlite
  --pidfile FILE       write the process id here
  --service NAME       SRPC service name (default HWDB)
  --ping-interval SECS idle connections are pinged this often, purged after 3 misses (default 60)
  --callback-timeout SECS  give up on a subscriber after this long (default 5)";

struct Options {
    port: u16,
    listen: String,
    memory: usize,
    schema: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    pidfile: Option<PathBuf>,
    service: String,
    ping_interval: f64,
    callback_timeout: f64,
}

fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()?.to_ascii_uppercase() {
        'K' => (&s[..s.len() - 1], 1usize << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

fn fail(msg: &str) -> ! {
    eprintln!("hwdbd: {msg}");
    exit(2)
}

fn parse_args() -> Options {
    let mut o = Options {
        port: 987,
        listen: "127.0.0.1".into(),
        memory: 64 << 20,
        schema: None,
        state_dir: None,
        pidfile: None,
        service: "HWDB".into(),
        ping_interval: 60.0,
        callback_timeout: 5.0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "-h" || a == "--help" {
            println!("{USAGE}");
            exit(0);
        }
        let mut val = || args.next().unwrap_or_else(|| fail(&format!("{a} needs a value\n{USAGE}")));
        match a.as_str() {
            "--port" => o.port = val().parse().unwrap_or_else(|_| fail("--port needs a number 0-65535")),
            "--listen" => o.listen = val(),
            "--memory" => o.memory = parse_size(&val()).unwrap_or_else(|| fail("--memory needs a size like 67108864 or 64M")),
            "--schema" => o.schema = Some(val().into()),
            "--state-dir" => o.state_dir = Some(val().into()),
            "--pidfile" => o.pidfile = Some(val().into()),
            "--service" => o.service = val(),
            "--ping-interval" => o.ping_interval = val().parse().unwrap_or_else(|_| fail("--ping-interval needs seconds")),
            "--callback-timeout" => o.callback_timeout = val().parse().unwrap_or_else(|_| fail("--callback-timeout needs seconds")),
            _ => fail(&format!("unknown argument {a}\n{USAGE}")),
        }
    }
    o
}

fn main() {
    let o = parse_args();
    let store = o.state_dir.as_ref().map(|d| PersistStore::open(d).unwrap_or_else(|e| fail(&e)));
    let mut db = Database::new(Arc::new(SystemClock), o.memory, store).unwrap_or_else(|e| fail(&format!("cannot load state: {e}")));
    if let Some(path) = &o.schema {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(&format!("cannot read schema {}: {e}", path.display())));
        let n = load_schema(&mut db, &text).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
        log(&format!("schema {}: {n} statements", path.display()));
    }
    let addr: SocketAddr = format!("{}:{}", o.listen, o.port)
        .parse()
        .or_else(|_| format!("[{}]:{}", o.listen, o.port).parse())
        .unwrap_or_else(|_| fail(&format!("bad listen address {}", o.listen)));
    let timing = Timing { ping_interval: Duration::from_secs_f64(o.ping_interval.max(0.01)), ..Timing::default() };
    let mut server = Server::bind(addr, &o.service, timing.clone()).unwrap_or_else(|e| fail(&format!("cannot bind {addr}: {e}")));
    if let Some(p) = &o.pidfile {
        std::fs::write(p, format!("{}\n", std::process::id())).unwrap_or_else(|e| fail(&format!("cannot write pidfile: {e}")));
    }
    let notifier = Notifier::new(Duration::from_secs_f64(o.callback_timeout.max(0.1)), timing);
    let mut service = HwdbService::new(db, notifier);
    // Tests and scripts wait for exactly this line.
    log(&format!(
        "ready on {} (service {}, ring {} bytes, state {})",
        server.local_addr(),
        o.service,
        service.db.ring().capacity(),
        o.state_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|| "in memory only".into())
    ));
    let stop = AtomicBool::new(false);
    if let Err(e) = server.run(&mut service, &stop) {
        fail(&format!("socket error: {e}"));
    }
}
