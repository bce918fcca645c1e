//! Storage and engine: ring eviction and per-table shares, windows against a hand-moved
//! clock, persistent upsert, restart reload, and the request framing.

use std::path::PathBuf;
use std::sync::Arc;

use hwdb::clock::ManualClock;
use hwdb::persist::PersistStore;
use hwdb::result::parse_wire;
use hwdb::value::Value;
use hwdb::Database;

const SEC: i64 = 1_000_000_000;
const T0: i64 = 1_700_000_000 * SEC;

fn db_with(ring: usize) -> (Database, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(T0));
    (Database::new(clock.clone(), ring, None).unwrap(), clock)
}

fn ints(db: &mut Database, sql: &str) -> Vec<i64> {
    db.execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .rows
        .iter()
        .map(|r| match r.last().unwrap() {
            Value::Int(i) => *i,
            other => panic!("not an int: {other:?}"),
        })
        .collect()
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hwdb-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn eviction_is_oldest_first_within_each_table() {
    let (mut db, clock) = db_with(8192);
    db.execute("create table A (n integer, pad varchar(100))").unwrap();
    db.execute("create table B (n integer)").unwrap();
    // Interleave the two tables; A's tuples are bigger and three times as many.
    for i in 0..2000 {
        clock.advance(1000);
        if i % 4 == 0 {
            db.execute(&format!("insert into B values ({i})")).unwrap();
        } else {
            db.execute(&format!("insert into A values ({i}, 'xxxxxxxxxxxxxxxxxxxx')")).unwrap();
        }
    }
    assert!(db.ring().evicted() > 0, "the ring must have wrapped");
    let a = ints(&mut db, "select n from A");
    let b = ints(&mut db, "select n from B");
    // Each table keeps exactly its newest tuples, in order, no gaps.
    assert_eq!(a, (a[0]..2000).filter(|i| i % 4 != 0).collect::<Vec<_>>());
    assert_eq!(b, (b[0]..2000).step_by(4).collect::<Vec<_>>());
    assert!(a[0] > 1000, "a full 8 KiB ring keeps only recent tuples (oldest of A {})", a[0]);
    assert!(db.ring().used_bytes() <= 8192);
}

/// The issue-20 incident: a DNS flood from one device evicted every Flows, Links and
/// BWStats tuple. Now each stream table has a guaranteed share of the ring.
#[test]
fn a_flood_in_one_table_leaves_other_tables_intact() {
    let (mut db, clock) = db_with(1 << 20);
    hwdb::server::load_schema(&mut db, include_str!("../schema/router.hwdb")).unwrap();
    for i in 0..100 {
        clock.advance(1000);
        db.execute(&format!("insert into Flows values (6, '10.0.0.2', {i}, '10.0.0.9', 443, 3, 180)")).unwrap();
        db.execute(&format!("insert into Links values ('02:00:00:00:00:01', -40.5, 0, {i}, 100)")).unwrap();
        db.execute(&format!("insert into BWStats values ('02:00:00:00:00:01', '10.0.0.2', {i})")).unwrap();
    }
    let mut max_used = 0;
    for i in 0..200_000 {
        clock.advance(1000);
        let name = format!("flood-{i}-{}.example.com", "x".repeat(i % 60));
        db.execute(&format!("insert into DnsQueries values ('02:00:00:00:00:66', '{name}', 'A', 'allow', 0, 1)")).unwrap();
        max_used = max_used.max(db.ring().used_bytes());
    }
    assert_eq!(ints(&mut db, "select sport from Flows"), (0..100).collect::<Vec<_>>());
    assert_eq!(ints(&mut db, "select packets from Links"), (0..100).collect::<Vec<_>>());
    assert_eq!(ints(&mut db, "select bytes from BWStats"), (0..100).collect::<Vec<_>>());
    // The flood evicted only its own oldest tuples and kept its newest, with no gaps.
    let dns = ints(&mut db, "select count(*) from DnsQueries")[0];
    assert!(dns > 1000 && dns < 200_000, "{dns}");
    let newest = db.execute("select name from DnsQueries [last]").unwrap();
    assert_eq!(newest.rows[0][0], Value::Str(format!("flood-199999-{}.example.com", "x".repeat(199_999 % 60))));
    // The whole ring stays within --memory.
    assert!(max_used <= 1 << 20, "{max_used}");
    assert!(db.ring().capacity() <= 1 << 20);
}

/// Any mix of floods: the ring never holds more than its memory, and every table still
/// has at least its guaranteed share filled once all of them flood.
#[test]
fn memory_bound_and_shares_hold_under_mixed_floods() {
    let (mut db, clock) = db_with(256 << 10);
    let names = ["T0", "T1", "T2", "T3", "T4"];
    for t in names {
        db.execute(&format!("create table {t} (n integer, s varchar(200))")).unwrap();
    }
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    for i in 0..60_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Table 0 gets half of all inserts, the others share the rest.
        let t = if seed.is_multiple_of(2) { 0 } else { 1 + (seed >> 8) as usize % 4 };
        let pad = "p".repeat((seed >> 16) as usize % 200);
        clock.advance(1000);
        db.execute(&format!("insert into {} values ({i}, '{pad}')", names[t])).unwrap();
        assert!(db.ring().used_bytes() <= db.ring().capacity() as u64);
    }
    let ring = db.ring();
    assert_eq!(ring.capacity(), 256 << 10);
    for id in 0..names.len() as u16 {
        assert!(ring.held_bytes(id) >= ring.share_bytes(), "table {id} holds its share");
    }
}

#[test]
fn oversize_tuple_is_refused() {
    let (mut db, _) = db_with(4096);
    db.execute("create table Big (s varchar(10000))").unwrap();
    let e = db.execute(&format!("insert into Big values ('{}')", "x".repeat(5000))).unwrap_err();
    assert!(e.message.contains("does not fit"), "{e}");
}

#[test]
fn windows_follow_the_clock() {
    let (mut db, clock) = db_with(1 << 20);
    db.execute("create table Links (mac varchar(17), rssi real, n integer)").unwrap();
    for i in 0..10 {
        db.execute(&format!("insert into Links values ('m{}', -{}.5, {i})", i % 3, 40 + i)).unwrap();
        clock.advance(SEC);
    }
    // Tuples at T0 + i s (+ i ns for uniqueness); now = T0 + 10 s.
    assert_eq!(ints(&mut db, "select n from Links [range 3 seconds]"), vec![7, 8, 9]);
    assert_eq!(ints(&mut db, "select n from Links [range 3500 millis]"), vec![7, 8, 9]);
    assert_eq!(ints(&mut db, "select n from Links [range 1 minutes]").len(), 10);
    assert_eq!(ints(&mut db, "select n from Links [rows 2]"), vec![8, 9]);
    assert_eq!(ints(&mut db, "select n from Links [rows 100]").len(), 10);
    assert_eq!(ints(&mut db, "select n from Links [last]"), vec![9]);
    assert_eq!(ints(&mut db, "select n from Links [now]"), vec![9], "[now] = the last second");
    clock.advance(2 * SEC);
    assert_eq!(ints(&mut db, "select n from Links [now]"), Vec::<i64>::new());
    db.execute("insert into Links values ('m0', -1, 10)").unwrap();
    assert_eq!(ints(&mut db, "select n from Links [now]"), vec![10]);
    // since is strict; interval bounds open/closed.
    let ts: Vec<i64> = db.execute("select timestamp from Links").unwrap().rows.iter().map(|r| match r[0] { Value::Tstamp(t) => t, _ => 0 }).collect();
    let hex = |t: i64| format!("@{:x}@", t);
    assert_eq!(ints(&mut db, &format!("select n from Links [since {}]", hex(ts[7]))), vec![8, 9, 10]);
    assert_eq!(ints(&mut db, &format!("select n from Links [interval ({}, {})]", hex(ts[2]), hex(ts[5]))), vec![3, 4]);
    assert_eq!(ints(&mut db, &format!("select n from Links [interval [{}, {}]]", hex(ts[2]), hex(ts[5]))), vec![2, 3, 4, 5]);
    assert_eq!(ints(&mut db, &format!("select n from Links [interval [{}, {})]", hex(ts[2]), hex(ts[5]))), vec![2, 3, 4]);
    assert_eq!(ints(&mut db, &format!("select n from Links [interval ({}, {}]]", hex(ts[5]), hex(ts[2]))), Vec::<i64>::new());
    // timestamp can be filtered in WHERE too.
    assert_eq!(ints(&mut db, &format!("select n from Links where timestamp >= {} and timestamp < {}", hex(ts[8]), hex(ts[10]))), vec![8, 9]);
    // Window first, then filter.
    assert_eq!(ints(&mut db, "select n from Links [rows 3] where mac = 'm0'"), vec![9, 10]);
}

#[test]
fn where_precedence_and_operators_on_data() {
    let (mut db, _) = db_with(1 << 20);
    db.execute("create table T (name varchar(20), n integer)").unwrap();
    for (i, name) in ["alpha", "beta", "gamma", "delta", "epsilon"].iter().enumerate() {
        db.execute(&format!("insert into T values ('{name}', {i})")).unwrap();
    }
    assert_eq!(ints(&mut db, "select n from T where n = 0 or n = 4 and name = 'nope'"), vec![0]);
    assert_eq!(ints(&mut db, "select n from T where (n = 0 or n = 4) and name != 'alpha'"), vec![4]);
    assert_eq!(ints(&mut db, "select n from T where name contains 'ta'"), vec![1, 3]);
    assert_eq!(ints(&mut db, "select n from T where name notcontains 'a'"), vec![4]);
    assert_eq!(ints(&mut db, "select n from T where n >= 2 and n <= 3"), vec![2, 3]);
    assert_eq!(ints(&mut db, "select n from T where not (n > 1)"), vec![0, 1]);
    assert_eq!(ints(&mut db, "select n from T where name > 'c' order by name desc"), vec![2, 4, 3]);
    assert_eq!(ints(&mut db, "select n from T order by n desc limit 2"), vec![4, 3]);
    let e = db.execute("select n from T where bogus = 1").unwrap_err();
    assert_eq!(e.message, "error at 23: unknown column 'bogus' in table T");
    let e = db.execute("select n from T where n = 'abc'").unwrap_err();
    assert_eq!(e.message, "error at 23: 'abc' is not a valid integer");
}

#[test]
fn aggregates_and_group_by() {
    let (mut db, _) = db_with(1 << 20);
    db.execute("create table Links (mac varchar(17), rssi real, bytes integer)").unwrap();
    for (mac, rssi, bytes) in [("a", -40.0, 10), ("b", -60.0, 20), ("a", -50.0, 30), ("b", -70.0, 40), ("c", -30.0, 50)] {
        db.execute(&format!("insert into Links values ('{mac}', {rssi}, {bytes})")).unwrap();
    }
    let rs = db.execute("select mac, count(*), min(rssi), max(rssi), avg(rssi), sum(bytes) from Links group by mac order by mac").unwrap();
    assert_eq!(rs.columns.iter().map(|c| c.1.as_str()).collect::<Vec<_>>(), vec!["mac", "count(*)", "min(rssi)", "max(rssi)", "avg(rssi)", "sum(bytes)"]);
    assert_eq!(
        rs.rows[0],
        vec![Value::Str("a".into()), Value::Int(2), Value::Real(-50.0), Value::Real(-40.0), Value::Real(-45.0), Value::Int(40)]
    );
    assert_eq!(rs.rows.len(), 3);
    assert_eq!(ints(&mut db, "select count(*) from Links"), vec![5]);
    assert_eq!(ints(&mut db, "select count(*) from Links where rssi < -100"), vec![0]);
    let rs = db.execute("select mac, sum(bytes) from Links group by mac order by sum(bytes) desc").unwrap();
    assert_eq!(rs.rows[0][0], Value::Str("b".into()));
    assert!(db.execute("select mac, count(*) from Links").unwrap_err().message.contains("must appear in group by"));
    assert!(db.execute("select sum(mac) from Links").unwrap_err().message.contains("numeric"));
}

#[test]
fn persistent_upsert_update_delete() {
    let (mut db, clock) = db_with(1 << 20);
    db.execute("create persistenttable Devices (mac varchar(17) primary key, state varchar(16), hits integer)").unwrap();
    db.execute("insert into Devices values ('aa', 'permit', 1)").unwrap();
    clock.advance(SEC);
    db.execute("insert into Devices values ('bb', 'permit', 1)").unwrap();
    let e = db.execute("insert into Devices values ('aa', 'deny', 1)").unwrap_err();
    assert!(e.message.contains("duplicate key 'aa'"), "{e}");
    clock.advance(SEC);
    db.execute("insert into Devices values ('aa', 'deny', 5) on duplicate key update").unwrap();
    let rs = db.execute("select mac, state from Devices").unwrap();
    // The upserted row counts as newest.
    assert_eq!(rs.rows, vec![vec![Value::Str("bb".into()), Value::Str("permit".into())], vec![Value::Str("aa".into()), Value::Str("deny".into())]]);
    assert_eq!(db.execute("select mac from Devices [last]").unwrap().rows[0][0], Value::Str("aa".into()));
    db.execute("update Devices set hits += 10, state = 'blacklist' where mac = 'bb'").unwrap();
    assert_eq!(ints(&mut db, "select hits from Devices where mac = 'bb'"), vec![11]);
    db.execute("update Devices set hits -= 1").unwrap();
    assert_eq!(ints(&mut db, "select hits from Devices order by mac"), vec![4, 10]);
    assert!(db.execute("update Devices set mac = 'zz'").unwrap_err().message.contains("primary key"));
    db.execute("delete from Devices where state = 'blacklist'").unwrap();
    assert_eq!(ints(&mut db, "select count(*) from Devices"), vec![1]);
    db.execute("create table S (n integer)").unwrap();
    assert!(db.execute("delete from S").unwrap_err().message.contains("persistent tables only"));
    assert!(db.execute("insert into S values (1) on duplicate key update").unwrap_err().message.contains("persistent"));
}

#[test]
fn restart_reloads_persistent_state() {
    let dir = temp_dir("restart");
    let clock = Arc::new(ManualClock::new(T0));
    {
        let mut db = Database::new(clock.clone(), 1 << 20, Some(PersistStore::open(&dir).unwrap())).unwrap();
        db.execute("create persistenttable Leases (macaddr varchar(17) primary key, ipaddr varchar(16), hostname varchar(32), action varchar(8))").unwrap();
        db.execute("create table Flows (proto integer)").unwrap();
        db.execute("insert into Leases values ('aa', '10.0.0.2', 'laptop', 'add')").unwrap();
        db.execute("insert into Leases values ('bb', '10.0.0.3', 'phone', 'add')").unwrap();
        db.execute("insert into Leases values ('aa', '10.0.0.9', 'laptop', 'add') on duplicate key update").unwrap();
        db.execute("delete from Leases where macaddr = 'bb'").unwrap();
        db.execute("insert into Flows values (6)").unwrap();
        db.execute("save (select * from Leases [rows 1]) as NewestLease").unwrap();
    }
    let mut db = Database::new(clock.clone(), 1 << 20, Some(PersistStore::open(&dir).unwrap())).unwrap();
    let rs = db.execute("select macaddr, ipaddr from Leases").unwrap();
    assert_eq!(rs.rows, vec![vec![Value::Str("aa".into()), Value::Str("10.0.0.9".into())]]);
    // Stream tables come back empty but defined; saved queries survive.
    assert_eq!(ints(&mut db, "select count(*) from Flows"), vec![0]);
    assert_eq!(db.execute("exec NewestLease").unwrap().rows.len(), 1);
    // Re-running the schema is a no-op, and new timestamps stay after the reloaded ones.
    db.execute("create persistenttable Leases (macaddr varchar(17) primary key, ipaddr varchar(16), hostname varchar(32), action varchar(8))").unwrap();
    clock.set(T0 - 100 * SEC); // even if the clock went backwards
    db.execute("insert into Leases values ('cc', '10.0.0.4', 'tv', 'add')").unwrap();
    assert_eq!(db.execute("select macaddr from Leases [last]").unwrap().rows[0][0], Value::Str("cc".into()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn request_framing_and_bulk() {
    let (mut db, _) = db_with(1 << 20);
    let ok = |s: &str| parse_wire(s).unwrap();
    assert_eq!(ok(&db.handle_request(b"SQL:create table T (n integer, s varchar(10))\n")).status, 0);
    let r = ok(&db.handle_request(b"BULK:3\ninsert into T values (1, 'a')\ninsert into T values (2, 'b<|>\\nc')\ninsert into T values (3, 'c')\n"));
    assert_eq!((r.status, r.message.as_str()), (0, "Success: 3 rows"));
    // A bad line rejects the whole batch and says which line.
    let r = ok(&db.handle_request(b"BULK:2\ninsert into T values (4, 'd')\ninsert into T values (x)\n"));
    assert_eq!(r.status, 1);
    assert!(r.message.starts_with("line 2: "), "{}", r.message);
    let r = ok(&db.handle_request(b"BULK:5\ninsert into T values (4, 'd')\n"));
    assert!(r.message.contains("announced 5"));
    let r = ok(&db.handle_request(b"SQL:select * from T\n"));
    assert_eq!(r.rows.len(), 3);
    assert_eq!(r.rows[1][2], "b<|>\nc", "separators inside values survive the round trip");
    assert_eq!(r.columns[0], ("tstamp".to_string(), "timestamp".to_string()));
    assert_eq!(db.handle_request(b"SQL:select * from Nope\n"), "1<|>no such table: Nope<|>0<|>0<|>\n");
    assert!(db.handle_request(b"HELLO").starts_with("1<|>request must start with"));
    assert!(db.handle_request(&[b'S', b'Q', b'L', b':', 0xff, 0xfe]).contains("not valid UTF-8"));
}

#[test]
fn saved_queries_and_notifications() {
    let (mut db, _) = db_with(1 << 20);
    db.execute("create table Links (mac varchar(17), rssi real)").unwrap();
    db.execute("create table Other (n integer)").unwrap();
    db.execute("save (select count(*) from Links) as LinkCount").unwrap();
    assert!(db.execute("save (select nope from Links) as Bad").is_err());
    db.execute("subscribe LinkCount 127.0.0.1 9999 CB").unwrap();
    db.execute("subscribe LinkCount 127.0.0.1 9998 CB").unwrap();
    assert!(db.take_notifications().is_empty());
    db.execute("insert into Other values (1)").unwrap();
    assert!(db.take_notifications().is_empty(), "only inserts into the query's table notify");
    db.execute("insert into Links values ('a', -1)").unwrap();
    let notes = db.take_notifications();
    assert_eq!(notes.len(), 2);
    let r = parse_wire(&notes[0].payload).unwrap();
    assert_eq!((r.message.as_str(), r.rows[0][0].as_str()), ("LinkCount", "1"));
    db.execute("unsubscribe LinkCount 127.0.0.1 9999 CB").unwrap();
    db.execute("insert into Links values ('b', -1)").unwrap();
    assert_eq!(db.take_notifications().len(), 1);
    db.execute("delete query LinkCount").unwrap();
    assert!(db.subscriptions().is_empty());
    assert!(db.execute("exec LinkCount").is_err());
}

#[test]
fn type_checks_on_insert() {
    let (mut db, _) = db_with(1 << 20);
    db.execute("create table T (b boolean, t tinyint, s smallint, c character, v varchar(3), ts tstamp, r real)").unwrap();
    db.execute("insert into T values ('true', '12', 300, 'x', 'abc', '@ff@', '1.5')").unwrap();
    db.execute("insert into T values (false, -128, -300, '', '', 2024/01/01:00:00:00, 2)").unwrap();
    for (bad, why) in [
        ("insert into T values (true, 200, 1, 'x', 'a', 1, 1)", "out of range for tinyint"),
        ("insert into T values (true, 1, 1, 'xy', 'a', 1, 1)", "longer than 1 character"),
        ("insert into T values (true, 1, 1, 'x', 'abcd', 1, 1)", "longer than varchar(3)"),
        ("insert into T values ('maybe', 1, 1, 'x', 'a', 1, 1)", "not a valid boolean"),
        ("insert into T values (true, 1, 1, 'x', 'a', 1)", "7 columns but 6 values"),
    ] {
        let e = db.execute(bad).unwrap_err();
        assert!(e.message.contains(why), "{bad}: {e}");
    }
    assert!(db.execute("create table T (a integer)").unwrap().message.contains("exists"));
    assert!(db.execute("create table U (a integer, A real)").unwrap_err().message.contains("twice"));
    assert!(db.execute("create persistenttable P (a integer, b integer primary key)").unwrap_err().message.contains("first column"));
}
