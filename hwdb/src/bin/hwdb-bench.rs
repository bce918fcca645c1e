//! `make bench`: hwdb against SQLite `:memory:` on the same data in the same run.
//! (a) single-row and BULK inserts, in-process and over SRPC on loopback;
//! (b) a 10-second window and a group-by over 1M stored tuples, p50/p99;
//! (c) the same on SQLite with an index on the timestamp (per-row autocommit and batched).
//! Throughputs are medians of 3 runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hwdb::clock::{ManualClock, SystemClock};
use hwdb::server::{HwdbService, Notifier};
use hwdb::srpc::client::Client;
use hwdb::srpc::server::BackgroundServer;
use hwdb::srpc::Timing;
use hwdb::Database;
use rusqlite::Connection;

const SCHEMA: &str = "create table Flows (proto integer, saddr varchar(16), sport integer, daddr varchar(16), dport integer, npkts integer, nbytes integer)";
const SQLITE_SCHEMA: &str = "CREATE TABLE flows (ts INTEGER NOT NULL, proto INTEGER, saddr TEXT, sport INTEGER, daddr TEXT, dport INTEGER, npkts INTEGER, nbytes INTEGER);
                             CREATE INDEX flows_ts ON flows (ts);";
const STORED: usize = 1_000_000;
const BATCH: usize = 1000;

fn row(i: usize) -> (i64, String, i64, String, i64, i64, i64) {
    (6, format!("192.168.1.{}", i % 200), (1024 + i % 60000) as i64, format!("10.0.{}.{}", i % 7, i % 250), 443, 1 + (i % 10) as i64, 60 + (i % 1400) as i64)
}

fn insert_sql(i: usize) -> String {
    let r = row(i);
    format!("insert into Flows values ({}, '{}', {}, '{}', {}, {}, {})", r.0, r.1, r.2, r.3, r.4, r.5, r.6)
}

fn sqlite_insert_sql(ts: i64, i: usize) -> String {
    let r = row(i);
    format!("INSERT INTO flows VALUES ({ts}, {}, '{}', {}, '{}', {}, {}, {})", r.0, r.1, r.2, r.3, r.4, r.5, r.6)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn percentile(v: &[Duration], p: f64) -> f64 {
    let mut ms: Vec<f64> = v.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    ms[((ms.len() - 1) as f64 * p).round() as usize]
}

/// Rows per second of `f(n)` inserting `n` rows, median of 3 runs.
fn rate(n: usize, mut f: impl FnMut(usize)) -> f64 {
    median((0..3).map(|_| {
        let t = Instant::now();
        f(n);
        n as f64 / t.elapsed().as_secs_f64()
    }).collect())
}

fn fresh_db(ring: usize) -> Database {
    let mut db = Database::new(Arc::new(SystemClock), ring, None).unwrap();
    db.execute(SCHEMA).unwrap();
    db
}

fn bulk_request(from: usize, n: usize) -> Vec<u8> {
    let mut s = format!("BULK:{n}\n");
    for i in from..from + n {
        s.push_str(&insert_sql(i));
        s.push('\n');
    }
    s.into_bytes()
}

fn sqlite() -> Connection {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch(SQLITE_SCHEMA).unwrap();
    c
}

struct Line {
    what: &'static str,
    hwdb: String,
    sqlite: String,
    ratio: String,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let mut lines: Vec<Line> = Vec::new();
    let fmt_rate = |r: f64| format!("{:.0} rows/s", r);

    // ---- (a) inserts ------------------------------------------------------------------
    let n_single = 200_000 / scale;
    let stmts: Vec<String> = (0..n_single).map(insert_sql).collect();
    let hw_single = rate(n_single, |n| {
        let mut db = fresh_db(256 << 20);
        for s in &stmts[..n] {
            db.execute(s).unwrap();
        }
    });
    let sq_stmts: Vec<String> = (0..n_single).map(|i| sqlite_insert_sql(i as i64, i)).collect();
    let sq_single_text = rate(n_single, |n| {
        let c = sqlite();
        for s in &sq_stmts[..n] {
            c.execute(s, []).unwrap();
        }
    });
    let sq_single_prepared = rate(n_single, |n| {
        let c = sqlite();
        let mut st = c.prepare("INSERT INTO flows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)").unwrap();
        for i in 0..n {
            let r = row(i);
            st.execute(rusqlite::params![i as i64, r.0, r.1, r.2, r.3, r.4, r.5, r.6]).unwrap();
        }
    });
    lines.push(Line { what: "single-row insert, in-process (SQL text each)", hwdb: fmt_rate(hw_single), sqlite: fmt_rate(sq_single_text) + " autocommit", ratio: format!("{:.1}x", hw_single / sq_single_text) });
    lines.push(Line { what: "  vs SQLite prepared statement, autocommit", hwdb: fmt_rate(hw_single), sqlite: fmt_rate(sq_single_prepared), ratio: format!("{:.1}x", hw_single / sq_single_prepared) });

    let n_bulk = 500_000 / scale;
    let requests: Vec<Vec<u8>> = (0..n_bulk / BATCH).map(|b| bulk_request(b * BATCH, BATCH)).collect();
    let hw_bulk = rate(n_bulk, |_| {
        let mut db = fresh_db(256 << 20);
        for r in &requests {
            db.handle_request(r);
        }
    });
    let sq_batched = rate(n_bulk, |n| {
        let mut c = sqlite();
        for b in 0..n / BATCH {
            let tx = c.transaction().unwrap();
            {
                let mut st = tx.prepare_cached("INSERT INTO flows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)").unwrap();
                for i in b * BATCH..(b + 1) * BATCH {
                    let r = row(i);
                    st.execute(rusqlite::params![i as i64, r.0, r.1, r.2, r.3, r.4, r.5, r.6]).unwrap();
                }
            }
            tx.commit().unwrap();
        }
    });
    lines.push(Line { what: "BULK insert (1000/batch), in-process", hwdb: fmt_rate(hw_bulk), sqlite: fmt_rate(sq_batched) + " txn+prepared", ratio: format!("{:.1}x", hw_bulk / sq_batched) });

    // Over SRPC on loopback, to an in-process server thread.
    let start_server = || {
        let svc = HwdbService::new(fresh_db(512 << 20), Notifier::new(Duration::from_secs(2), Timing::default()));
        BackgroundServer::start("127.0.0.1:0".parse().unwrap(), "HWDB", Timing::default(), svc).unwrap()
    };
    let server = start_server();
    let mut client = Client::connect(server.addr, "HWDB", Duration::from_secs(30)).unwrap();
    let n_rpc = 20_000 / scale;
    let rpc_single = rate(n_rpc, |n| {
        for s in &stmts[..n] {
            let r = client.call(format!("SQL:{s}\n").as_bytes()).unwrap();
            assert!(r.starts_with(b"0<|>"));
        }
    });
    lines.push(Line { what: "single-row insert over SRPC (loopback)", hwdb: fmt_rate(rpc_single), sqlite: "-".into(), ratio: format!("{:.1}x SQLite text", rpc_single / sq_single_text) });
    let rpc_bulk = rate(n_bulk, |_| {
        for r in &requests {
            let resp = client.call(r).unwrap();
            assert!(resp.starts_with(b"0<|>"));
        }
    });
    lines.push(Line { what: "BULK insert (1000/batch) over SRPC", hwdb: fmt_rate(rpc_bulk), sqlite: "-".into(), ratio: format!("target 200k: {}", if rpc_bulk >= 200_000.0 { "met" } else { "MISSED" }) });
    drop(client);
    drop(server);

    // ---- (b)/(c) queries over 1M stored tuples ----------------------------------------
    let stored = STORED / scale;
    // One tuple per millisecond: the last 10 seconds hold 10,000 tuples.
    const T0: i64 = 1_700_000_000_000_000_000;
    let clock = Arc::new(ManualClock::new(T0));
    let mut db = Database::new(clock.clone(), 512 << 20, None).unwrap();
    db.execute(SCHEMA).unwrap();
    let mut sq = sqlite();
    let load = Instant::now();
    for b in 0..stored / BATCH {
        let mut s = format!("BULK:{BATCH}\n");
        for i in b * BATCH..(b + 1) * BATCH {
            s.push_str(&insert_sql(i));
            s.push('\n');
        }
        // Each batch spans 1000 ms of the hand-moved clock.
        db.handle_request(s.as_bytes());
        clock.advance(1_000_000_000);
    }
    let hw_load = load.elapsed();
    // hwdb stamps tuples within a batch 1 ns apart; SQLite gets 1 ms apart: the window
    // selects the last 10 batches in hwdb and the last 10,000 rows in SQLite, same count.
    let tx = sq.transaction().unwrap();
    {
        let mut st = tx.prepare("INSERT INTO flows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)").unwrap();
        for i in 0..stored {
            let r = row(i);
            st.execute(rusqlite::params![T0 + i as i64 * 1_000_000, r.0, r.1, r.2, r.3, r.4, r.5, r.6]).unwrap();
        }
    }
    tx.commit().unwrap();

    let runs = if quick { 5 } else { 30 };
    let time_it = |f: &mut dyn FnMut() -> usize| -> (Vec<Duration>, usize) {
        let mut ds = Vec::new();
        let mut n = 0;
        for _ in 0..runs {
            let t = Instant::now();
            n = f();
            ds.push(t.elapsed());
        }
        (ds, n)
    };
    let (hw_win, hw_win_rows) = time_it(&mut || db.execute("select * from Flows [range 10 seconds]").unwrap().rows.len());
    let sq_cut = T0 + (stored as i64 - 10_000) * 1_000_000;
    let (sq_win, sq_win_rows) = time_it(&mut || {
        let mut st = sq.prepare_cached("SELECT * FROM flows WHERE ts >= ?1").unwrap();
        let rows = st.query_map([sq_cut], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?, r.get::<_, String>(4)?, r.get::<_, i64>(5)?, r.get::<_, i64>(6)?, r.get::<_, i64>(7)?))
        }).unwrap();
        // Keep the rows, as hwdb's result set does.
        rows.map(|r| r.unwrap()).collect::<Vec<_>>().len()
    });
    let group_sql = "select saddr, count(*), sum(nbytes), max(npkts) from Flows group by saddr";
    let (hw_grp, hw_groups) = time_it(&mut || db.execute(group_sql).unwrap().rows.len());
    let (sq_grp, sq_groups) = time_it(&mut || {
        let mut st = sq.prepare_cached("SELECT saddr, count(*), sum(nbytes), max(npkts) FROM flows GROUP BY saddr").unwrap();
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, i64>(3)?))).unwrap();
        rows.map(|r| r.unwrap()).collect::<Vec<_>>().len()
    });
    assert_eq!(hw_groups, sq_groups);
    let lat = |d: &[Duration]| format!("p50 {:.2} ms, p99 {:.2} ms", percentile(d, 0.5), percentile(d, 0.99));
    let ratio = |a: &[Duration], b: &[Duration]| format!("{:.1}x faster", percentile(b, 0.5) / percentile(a, 0.5));
    lines.push(Line { what: "[range 10 seconds] over stored tuples, in-process", hwdb: format!("{} ({hw_win_rows} rows)", lat(&hw_win)), sqlite: format!("{} ({sq_win_rows} rows)", lat(&sq_win)), ratio: ratio(&hw_win, &sq_win) });
    lines.push(Line { what: "group by saddr (200 groups) over stored tuples", hwdb: lat(&hw_grp), sqlite: lat(&sq_grp), ratio: ratio(&hw_grp, &sq_grp) });

    // The same window over SRPC (result formatting and transfer included).
    let svc = HwdbService::new(db, Notifier::new(Duration::from_secs(2), Timing::default()));
    let server = BackgroundServer::start("127.0.0.1:0".parse().unwrap(), "HWDB", Timing::default(), svc).unwrap();
    let mut client = Client::connect(server.addr, "HWDB", Duration::from_secs(30)).unwrap();
    let (rpc_win, _) = time_it(&mut || client.call(b"SQL:select * from Flows [range 10 seconds]\n").unwrap().len());
    let (rpc_grp, _) = time_it(&mut || client.call(format!("SQL:{group_sql}\n").as_bytes()).unwrap().len());
    lines.push(Line { what: "[range 10 seconds] over SRPC (10k rows returned)", hwdb: lat(&rpc_win), sqlite: "-".into(), ratio: "-".into() });
    lines.push(Line { what: "group by saddr over SRPC", hwdb: lat(&rpc_grp), sqlite: "-".into(), ratio: "-".into() });

    println!("hwdb benchmark ({} stored tuples; load took {:.2} s; {} query runs; rates are medians of 3)", stored, hw_load.as_secs_f64(), runs);
    let w0 = lines.iter().map(|l| l.what.len()).max().unwrap();
    let w1 = lines.iter().map(|l| l.hwdb.len()).max().unwrap().max(4);
    let w2 = lines.iter().map(|l| l.sqlite.len()).max().unwrap().max(16);
    println!("{:<w0$} | {:<w1$} | {:<w2$} | ratio", "measure", "hwdb", "sqlite :memory:");
    println!("{}", "-".repeat(w0 + w1 + w2 + 20));
    for l in &lines {
        println!("{:<w0$} | {:<w1$} | {:<w2$} | {}", l.what, l.hwdb, l.sqlite, l.ratio);
    }
    println!();
    println!("targets: per-row insert >= 5x SQLite: {}; BULK over SRPC >= 200k rows/s: {}; window p50 <= 10 ms: {}; group by p50 <= 100 ms: {}",
        if hw_single >= 5.0 * sq_single_text { "met" } else { "missed" },
        if rpc_bulk >= 200_000.0 { "met" } else { "missed" },
        if percentile(&hw_win, 0.5) <= 10.0 { "met" } else { "missed" },
        if percentile(&hw_grp, 0.5) <= 100.0 { "met" } else { "missed" });
}
