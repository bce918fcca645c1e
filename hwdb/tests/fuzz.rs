//! Bad input, generated: random and truncated statements, random and truncated
//! datagrams, absurd fragment counts, invalid UTF-8, absurd windows. The daemon must
//! answer errors (or ignore garbage datagrams) and keep serving. Generators use a fixed
//! seed so any failure reproduces; each test prints how many cases it ran.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use hwdb::clock::SystemClock;
use hwdb::result::parse_wire;
use hwdb::server::{HwdbService, Notifier};
use hwdb::srpc::client::Client;
use hwdb::srpc::server::BackgroundServer;
use hwdb::srpc::wire::{self, Command};
use hwdb::srpc::Timing;
use hwdb::Database;

mod common;
use common::Rng;


const VALID: &[&str] = &[
    "create table Links (mac varchar(17), rssi real, retries integer, ok boolean)",
    "create persistenttable Leases (macaddr varchar(17) primary key, ipaddr varchar(16))",
    "insert into Links values ('aa:bb', -40.5, 3, true)",
    "insert into Leases values ('aa', '10.0.0.1') on duplicate key update",
    "select mac, count(*), avg(rssi) from Links [range 10 seconds] where (rssi > -50 or retries != 0) and mac contains 'a' group by mac order by mac desc limit 3",
    "select * from Links [interval [@10@, @ffffffffffff@)] where timestamp > @1@",
    "select * from Leases [since 2024/01/01:00:00:00]",
    "update Leases set ipaddr = '10.0.0.2' where macaddr = 'aa'",
    "delete from Leases where macaddr notcontains 'zz'",
    "save (select * from Links [rows 5]) as Q",
    "subscribe Q 127.0.0.1 9 CB",
    "show tables",
];

const TOKENS: &[&str] = &[
    "select", "from", "where", "insert", "into", "values", "create", "table", "persistenttable", "update", "set",
    "delete", "show", "tables", "save", "as", "exec", "subscribe", "unsubscribe", "query", "group", "by", "order",
    "limit", "and", "or", "not", "contains", "notcontains", "range", "rows", "last", "now", "since", "interval",
    "seconds", "hours", "millis", "count", "min", "max", "avg", "sum", "Links", "Leases", "mac", "rssi",
    "timestamp", "*", "(", ")", "[", "]", ",", "=", "!=", "<", ">", "<=", ">=", "+=", "-=", ";", "-", "'x'",
    "'unterminated", "\"dq\"", "@ff@", "@@", "@zz", "0", "-1", "1.5", "99999999999999999999999", "1e9",
    "2024/13/45:99:99:99", "127.0.0.1", "é", "\u{0}", "'a<|>b'", "\n", "varchar(0)", "varchar(99999999)",
    "[range 9999999999999999 hours]", "[rows 18446744073709551615]", "[interval (@ffffffffffffffff@, @0@)]",
];

fn check_response(resp: &str) {
    let r = parse_wire(resp).unwrap_or_else(|e| panic!("malformed response {resp:?}: {e}"));
    assert!(r.status == 0 || r.status == 1);
    assert!(r.status == 0 || !r.message.is_empty());
}

#[test]
fn random_statements_get_answers_not_panics() {
    let mut db = Database::new(Arc::new(SystemClock), 1 << 20, None).unwrap();
    for v in VALID {
        db.handle_request(format!("SQL:{v}").as_bytes());
    }
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut cases = 0u64;
    // 1. Token soup.
    for _ in 0..8000 {
        let n = rng.below(25);
        let stmt: Vec<&str> = (0..n).map(|_| rng.pick(TOKENS)).collect();
        check_response(&db.handle_request(format!("SQL:{}", stmt.join(" ")).as_bytes()));
        cases += 1;
    }
    // 2. Every prefix of every valid statement.
    for v in VALID {
        for (i, _) in v.char_indices() {
            check_response(&db.handle_request(format!("SQL:{}", &v[..i]).as_bytes()));
            cases += 1;
        }
    }
    // 3. Valid statements with random byte damage (including invalid UTF-8).
    for _ in 0..6000 {
        let mut b = format!("SQL:{}", rng.pick(VALID)).into_bytes();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(b.len());
            match rng.below(3) {
                0 => b[at] = rng.next() as u8,
                1 => {
                    b.remove(at);
                }
                _ => b.insert(at, rng.next() as u8),
            }
        }
        check_response(&db.handle_request(&b));
        cases += 1;
    }
    // 4. Broken BULK framing.
    for _ in 0..1000 {
        let n = rng.below(5);
        let mut req = format!("BULK:{}\n", rng.pick(&["0", "1", "3", "-1", "x", "99999999999"]));
        for _ in 0..n {
            req.push_str(rng.pick(VALID));
            req.push('\n');
        }
        check_response(&db.handle_request(req.as_bytes()));
        cases += 1;
    }
    // The database still works.
    let r = parse_wire(&db.handle_request(b"SQL:select count(*) from Links")).unwrap();
    assert_eq!(r.status, 0);
    println!("fuzz: {cases} random statements answered");
    assert!(cases > 15_000);
}

#[test]
fn decode_never_panics_on_mutated_packets() {
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let seeds: Vec<Vec<u8>> = vec![
        wire::connect(1, 1, "HWDB"),
        wire::split_message(1, 2, Command::Query, b"SQL:show tables").remove(0),
        wire::split_message(1, 2, Command::Query, &vec![b'a'; 70_000]).remove(3),
        wire::fack(1, 2, 300, 400),
        wire::control(1, 2, Command::Ping),
    ];
    let mut cases = 0;
    for _ in 0..100_000 {
        let mut p = seeds[rng.below(seeds.len())].clone();
        match rng.below(4) {
            0 => p.truncate(rng.below(p.len() + 1)),
            1 => {
                let at = rng.below(p.len());
                p[at] = rng.next() as u8;
            }
            2 => p = (0..rng.below(64)).map(|_| rng.next() as u8).collect(),
            _ => {
                let at = rng.below(p.len().min(30));
                p[at] = 0xff;
            }
        }
        let _ = wire::decode(&p);
        cases += 1;
    }
    println!("fuzz: {cases} mutated packets decoded without panic");
}

#[test]
fn garbage_datagrams_do_not_stop_the_daemon() {
    let db = Database::new(Arc::new(SystemClock), 1 << 20, None).unwrap();
    let svc = HwdbService::new(db, Notifier::new(Duration::from_secs(1), Timing::default()));
    let server = BackgroundServer::start("127.0.0.1:0".parse().unwrap(), "HWDB", Timing::default(), svc).unwrap();
    let mut good = Client::connect(server.addr, "HWDB", Duration::from_secs(5)).unwrap();
    good.call(b"SQL:create table T (n integer)\n").unwrap();
    let raw = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sp = 0x4242_0001u32;
    raw.send_to(&wire::connect(sp, 1, "HWDB"), server.addr).unwrap();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut cases = 0u64;
    let send = |p: &[u8], to: SocketAddr| {
        let _ = raw.send_to(p, to);
    };
    for round in 0..6000u32 {
        let pkt: Vec<u8> = match rng.below(7) {
            // Pure noise.
            0 => (0..rng.below(1500)).map(|_| rng.next() as u8).collect(),
            // A valid header with a random command and random fragment fields.
            1 => {
                let mut p = Vec::new();
                p.extend_from_slice(&sp.to_be_bytes());
                p.extend_from_slice(&(rng.next() as u32).to_be_bytes());
                p.extend_from_slice(&(rng.below(16) as u16).to_be_bytes());
                p.push(rng.next() as u8);
                p.push(rng.next() as u8);
                p.extend((0..rng.below(40)).map(|_| rng.next() as u8));
                p
            }
            // Extended header claiming absurd fragment counts / lengths.
            2 => {
                let mut p = wire::control(sp, 10 + round, Command::Fragment);
                p.extend_from_slice(&(rng.next() as u32).to_be_bytes());
                p.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
                p.extend_from_slice(&(rng.next() as u32).to_be_bytes());
                p.extend_from_slice(&1024u16.to_be_bytes());
                p.extend(std::iter::repeat_n(0u8, 1024));
                p
            }
            // A truncated real fragment.
            3 => {
                let mut p = wire::split_message(sp, 10 + round, Command::Query, &vec![b'x'; 5000]).remove(rng.below(4));
                p.truncate(rng.below(p.len()));
                p
            }
            // Invalid UTF-8 as a complete query on a real connection.
            4 => wire::split_message(sp, 100_000 + round, Command::Query, &[b'S', b'Q', b'L', b':', 0xc3, 0x28, 0xff]).remove(0),
            // A statement with an absurd window.
            5 => wire::split_message(sp, 100_000 + round, Command::Query, b"SQL:select * from T [range 18446744073709551615 hours]").remove(0),
            // Lone acknowledgements and control packets for unknown transfers.
            _ => wire::control(sp ^ (rng.next() as u32 & 0xff), rng.next() as u32, Command::from_u16(1 + rng.below(14) as u16).unwrap()),
        };
        send(&pkt, server.addr);
        cases += 1;
        if round % 200 == 199 {
            let r = good.call(format!("SQL:insert into T values ({round})\n").as_bytes()).expect("daemon still serving");
            assert!(r.starts_with(b"0<|>"));
        }
    }
    let r = good.call(b"SQL:select count(*) from T\n").unwrap();
    assert_eq!(parse_wire(&String::from_utf8(r).unwrap()).unwrap().rows[0][0], "30");
    println!("fuzz: {cases} bad datagrams sent, daemon kept serving");
}
