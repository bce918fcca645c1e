//! Tests of the query path (`handle`, and `finish` for CNAME answers) on built queries,
//! and the shared DNS policy vectors (tests/vectors/dns_policy.json, also read by the
//! controller's pytest suite): both implementations of the decision must agree.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use super::*;
use crate::policy::{Action, Device, State};
use crate::testjson::{self, Json};

const ROUTER: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 1);

fn shared() -> (Arc<Shared>, Receiver<String>) {
    let (tx, rx) = sync_channel(1000);
    (Shared::new(tx), rx)
}

fn add_device(shared: &Shared, ip: IpAddr, mac: &str, state: State, allowlist: bool) {
    let dev = Device { mac: Arc::from(mac), state, allowlist, router: ROUTER, router6: None };
    shared.policy.write().unwrap().devices.insert(ip, dev);
}

/// The verdict field of the last `q` event line (what the controller logs).
fn last_verdict(rx: &Receiver<String>) -> (String, String) {
    let mut last = None;
    while let Ok(line) = rx.try_recv() {
        if line.starts_with("q ") {
            last = Some(line);
        }
    }
    let line = last.expect("no query event");
    let parts: Vec<&str> = line.trim_end().split(' ').collect();
    (parts[3].to_string(), parts[5].to_string())
}

fn rcode(reply: &[u8]) -> u8 {
    reply[3] & 0xF
}

/// dnsmasq's answer to `query`: the CNAME chain, then one A record.
fn upstream_answer(query: &[u8], cnames: &[&str]) -> Vec<u8> {
    let mut a = query.to_vec();
    a[2] |= 0x80;
    a[7] = (cnames.len() + 1) as u8;
    let name = |n: &str| {
        let mut out = Vec::new();
        for label in n.split('.') {
            out.push(label.len() as u8);
            out.extend_from_slice(label.as_bytes());
        }
        out.push(0);
        out
    };
    let mut owner = vec![0xC0, 12];
    for c in cnames {
        let target = name(c);
        a.extend_from_slice(&owner);
        a.extend_from_slice(&[0, 5, 0, 1, 0, 0, 0, 60]);
        a.extend_from_slice(&(target.len() as u16).to_be_bytes());
        a.extend_from_slice(&target);
        owner = target;
    }
    a.extend_from_slice(&owner);
    a.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 10]);
    a
}

const ALLOWED_IP: [u8; 4] = [10, 2, 0, 2];
const PENDING_IP: [u8; 4] = [10, 2, 0, 6];
const BLACKLISTED_IP: [u8; 4] = [10, 2, 0, 10];

fn home() -> (Arc<Shared>, Receiver<String>) {
    let (s, rx) = shared();
    add_device(&s, IpAddr::from(ALLOWED_IP), "02:00:00:00:00:01", State::Permitted, false);
    add_device(&s, IpAddr::from(PENDING_IP), "02:00:00:00:00:02", State::Pending, false);
    add_device(&s, IpAddr::from(BLACKLISTED_IP), "02:00:00:00:00:03", State::Blacklisted, false);
    s.policy.write().unwrap().set_rule("02:00:00:00:00:01", "blocked.test", Some(Action::Deny));
    (s, rx)
}

#[test]
fn an_allowed_name_is_forwarded() {
    let (s, rx) = home();
    let q = wire::build_query(7, "www.Example.com", wire::TYPE_A);
    match handle(&s, IpAddr::from(ALLOWED_IP), &q, false) {
        Outcome::Forward(fwd) => {
            assert_eq!(fwd.name, "www.example.com");
            assert!(fwd.check.is_some(), "a device with rules gets its CNAMEs checked");
            assert!(finish(&s, &fwd, &upstream_answer(&q, &[]), 0).is_none());
        }
        _ => panic!("an allowed query must go upstream"),
    }
    assert_eq!(last_verdict(&rx).0, "allowed");
}

#[test]
fn a_blocked_name_gets_nxdomain_or_nothing() {
    let (s, rx) = home();
    let q = wire::build_query(8, "ads.blocked.test", wire::TYPE_AAAA);
    let Outcome::Reply(r) = handle(&s, IpAddr::from(ALLOWED_IP), &q, false) else { panic!("blocked: expected a reply") };
    assert_eq!((r[0], r[1], rcode(&r)), (0, 8, wire::RCODE_NXDOMAIN));
    assert!(wire::parse_answer(&r).unwrap().addrs.is_empty());
    assert_eq!(last_verdict(&rx), ("blocked".to_string(), "ads.blocked.test".to_string()));
    s.policy.write().unwrap().drop_blocked = true;
    assert!(matches!(handle(&s, IpAddr::from(ALLOWED_IP), &q, false), Outcome::Drop));
    assert_eq!(s.stats.blocked.load(Ordering::Relaxed), 2);
}

#[test]
fn safe_search_asks_for_the_safe_host_and_answers_with_a_cname() {
    let (s, rx) = home();
    let q = wire::build_query(12, "www.google.com", wire::TYPE_A);
    let Outcome::Forward(fwd) = handle(&s, IpAddr::from(ALLOWED_IP), &q, false) else { panic!() };
    assert!(fwd.safe.is_none(), "safe-search is off by default");
    s.policy.write().unwrap().safe_search = true;
    let Outcome::Forward(fwd) = handle(&s, IpAddr::from(ALLOWED_IP), &q, false) else { panic!() };
    let asked = fwd.upstream_query(&q).to_vec();
    assert_eq!(wire::parse_query(&asked).unwrap().name, "forcesafesearch.google.com");
    assert!(fwd.key.is_none());
    let reply = finish(&s, &fwd, &upstream_answer(&asked, &[]), 0).expect("a built answer");
    let ans = wire::parse_answer(&reply).unwrap();
    assert_eq!(ans.cnames, vec!["forcesafesearch.google.com".to_string()]);
    assert_eq!(ans.addrs, vec![IpAddr::from([192, 0, 2, 10])]);
    assert_eq!(&reply[..2], &q[..2]);
    assert_eq!(&reply[wire::HEADER..q.len()], &q[wire::HEADER..], "the client's own question");
    assert_eq!(last_verdict(&rx), ("allowed".to_string(), "www.google.com".to_string()));
    s.policy.write().unwrap().set_rule("02:00:00:00:00:01", "google.com", Some(Action::Deny));
    assert!(matches!(handle(&s, IpAddr::from(ALLOWED_IP), &q, false), Outcome::Reply(_)), "a deny rule still wins");
}

#[test]
fn a_pending_device_gets_its_gateway_for_every_name() {
    let (s, rx) = home();
    let q = wire::build_query(9, "connectivitycheck.gstatic.com", wire::TYPE_A);
    let Outcome::Reply(r) = handle(&s, IpAddr::from(PENDING_IP), &q, false) else { panic!("pending: expected a reply") };
    let ans = wire::parse_answer(&r).unwrap();
    assert_eq!((ans.rcode, ans.addrs.clone()), (0, vec![IpAddr::V4(ROUTER)]));
    assert_eq!(last_verdict(&rx).0, "pending");
    let canary = wire::build_query(10, "use-application-dns.net", wire::TYPE_A);
    let Outcome::Reply(r) = handle(&s, IpAddr::from(PENDING_IP), &canary, false) else { panic!() };
    assert_eq!(rcode(&r), wire::RCODE_NXDOMAIN);
}

#[test]
fn a_cut_off_device_gets_the_router_for_every_name_over_both_families_and_nothing_goes_upstream() {
    let (s, rx) = home();
    let router6: std::net::Ipv6Addr = "2001:db8:0:1::1".parse().unwrap();
    let key = IpAddr::from("2001:db8:0:1::".parse::<std::net::Ipv6Addr>().unwrap());
    let dev = Device { mac: Arc::from("02:00:00:00:00:09"), state: State::CutOff, allowlist: false, router: ROUTER,
                       router6: Some(router6) };
    s.policy.write().unwrap().devices.insert(key, dev);
    // an allow rule does not let a cut-off device's name upstream
    s.policy.write().unwrap().set_rule("02:00:00:00:00:09", "example.com", Some(Action::Allow));
    let from = IpAddr::from("2001:db8:0:1:a:b:c:d".parse::<std::net::Ipv6Addr>().unwrap());
    for (qtype, want) in [(wire::TYPE_A, IpAddr::V4(ROUTER)), (wire::TYPE_AAAA, IpAddr::V6(router6))] {
        let q = wire::build_query(12, "tunnel.example.com", qtype);
        let Outcome::Reply(r) = handle(&s, from, &q, false) else { panic!("cut off: expected a local reply") };
        let ans = wire::parse_answer(&r).unwrap();
        assert_eq!((ans.rcode, ans.addrs.clone(), ans.min_ttl), (0, vec![want], 0));
        assert_eq!(last_verdict(&rx).0, "cutoff");
    }
    assert_eq!(s.stats.cutoff.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert_eq!(s.stats.forwarded.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[test]
fn blacklisted_and_unknown_sources_get_no_answer() {
    let (s, _rx) = home();
    let q = wire::build_query(11, "example.com", wire::TYPE_A);
    assert!(matches!(handle(&s, IpAddr::from(BLACKLISTED_IP), &q, false), Outcome::Drop));
    let Outcome::Reply(r) = handle(&s, IpAddr::from([10, 9, 9, 9]), &q, false) else { panic!("unknown: expected a reply") };
    assert_eq!(rcode(&r), wire::RCODE_REFUSED);
}

#[test]
fn a_device_asks_as_itself_from_any_address_of_its_ipv6_64() {
    let (s, rx) = home();
    // the controller files the device under its /64 (any address of it in the line)
    let prefix: std::net::Ipv6Addr = "2001:db8:100:5::1".parse().unwrap();
    let dev = Device { mac: Arc::from("02:00:00:00:00:05"), state: State::Permitted, allowlist: false, router: ROUTER, router6: None };
    s.policy.write().unwrap().devices.insert(crate::policy::device_key(IpAddr::V6(prefix)), dev);
    s.policy.write().unwrap().set_rule("02:00:00:00:00:05", "blocked.test", Some(Action::Deny));
    let q = wire::build_query(12, "x.blocked.test", wire::TYPE_AAAA);
    for src in ["2001:db8:100:5:1234:5678:9abc:def0", "2001:db8:100:5::2"] {
        let src: IpAddr = src.parse().unwrap();
        let Outcome::Reply(r) = handle(&s, src, &q, false) else { panic!("blocked over IPv6: expected a reply") };
        assert_eq!(rcode(&r), wire::RCODE_NXDOMAIN);
        assert_eq!(last_verdict(&rx).0, "blocked");
    }
    // another /64 is nobody
    let Outcome::Reply(r) = handle(&s, "2001:db8:100:6::2".parse().unwrap(), &q, false) else { panic!() };
    assert_eq!(rcode(&r), wire::RCODE_REFUSED);
    // an IPv4-mapped source is the IPv4 device
    let mapped: IpAddr = IpAddr::V6(Ipv4Addr::from(ALLOWED_IP).to_ipv6_mapped());
    assert!(matches!(handle(&s, mapped, &wire::build_query(13, "example.com", wire::TYPE_A), false),
                     Outcome::Forward(_)));
}

#[test]
fn malformed_queries_are_counted_and_never_forwarded() {
    let (s, _rx) = home();
    let src = IpAddr::from(ALLOWED_IP);
    // Too short for a header: nothing to answer.
    assert!(matches!(handle(&s, src, &[1, 2, 3], false), Outcome::Drop));
    // Two questions: FORMERR, with the client's id.
    let mut two = wire::build_query(12, "example.com", wire::TYPE_A);
    two[5] = 2;
    let Outcome::Reply(r) = handle(&s, src, &two, false) else { panic!("formerr expected") };
    assert_eq!((r[1], rcode(&r)), (12, wire::RCODE_FORMERR));
    // A name that runs past the end of the packet.
    let mut cut = wire::build_query(13, "example.com", wire::TYPE_A);
    cut.truncate(wire::HEADER + 4);
    assert!(matches!(handle(&s, src, &cut, false), Outcome::Reply(ref r) if rcode(r) == wire::RCODE_FORMERR));
    // An answer sent to us as if it were a query: dropped (no reflection).
    let mut resp = wire::build_query(14, "example.com", wire::TYPE_A);
    resp[2] |= 0x80;
    assert!(matches!(handle(&s, src, &resp, false), Outcome::Drop));
    // Another opcode: NOTIMP.
    let mut update = wire::build_query(15, "example.com", wire::TYPE_A);
    update[2] = 0x28;
    assert!(matches!(handle(&s, src, &update, false), Outcome::Reply(ref r) if rcode(r) == wire::RCODE_NOTIMP));
    assert_eq!(s.stats.malformed.load(Ordering::Relaxed), 5);
    assert_eq!(s.stats.forwarded.load(Ordering::Relaxed), 0);
}

// ------------------------------------------------------------------ shared vectors

fn vectors() -> Json {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/dns_policy.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    testjson::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn mac_of(device: &str) -> String {
    if device == "*" { HOUSEHOLD_OWNER.to_string() } else { format!("02:00:00:00:00:{:02x}", device.as_bytes()[0]) }
}

const HOUSEHOLD_OWNER: &str = crate::policy::HOUSEHOLD;

fn addr_of(device: &str) -> IpAddr {
    IpAddr::from([10, 2, device.as_bytes()[0], 2])
}

/// One vector check through the real path: the query as the client sent it goes through
/// `handle`; an allowed one gets an upstream answer with the case's CNAME chain through
/// `finish`; the verdict is the one dnsd reports to the controller.
fn run_check(case: &Json, check: &Json) -> (String, String) {
    let (s, rx) = shared();
    let allowlist: Vec<&str> = case.get("allowlist").map(|a| a.arr().iter().map(|d| d.str()).collect()).unwrap_or_default();
    for d in ["A", "B", "C", "K"] {
        add_device(&s, addr_of(d), &mac_of(d), State::Permitted, allowlist.contains(&d));
    }
    for rule in case.get("rules").map(|r| r.arr()).unwrap_or_default() {
        let r = rule.arr();
        let action = match r[2].str() {
            "allow" => Action::Allow,
            "deny" => Action::Deny,
            other => panic!("unknown action {other}"),
        };
        s.policy.write().unwrap().set_rule(&mac_of(r[0].str()), r[1].str(), Some(action));
    }
    let device = check.get("device").unwrap().str();
    let sent = check.get("sent").or(check.get("query")).unwrap().str();
    let q = wire::build_query(1, sent, wire::TYPE_A);
    if let Outcome::Forward(fwd) = handle(&s, addr_of(device), &q, false) {
        let cnames: Vec<&str> = check.get("cnames").map(|c| c.arr().iter().map(|n| n.str()).collect()).unwrap_or_default();
        finish(&s, &fwd, &upstream_answer(&q, &cnames), 0);
    }
    last_verdict(&rx)
}

#[test]
fn dnsd_agrees_with_the_shared_policy_vectors() {
    let v = vectors();
    let mut failures = Vec::new();
    let mut n = 0;
    for case in v.get("cases").unwrap().arr() {
        for check in case.get("checks").unwrap().arr() {
            n += 1;
            let (verdict, name) = run_check(case, check);
            let want = check.get("verdict").unwrap().str();
            let query = check.get("query").unwrap().str();
            if verdict != want || name != query {
                failures.push(format!("{}: {check:?} -> {verdict} for {name}", case.get("name").unwrap().str()));
            }
        }
    }
    assert!(n >= 30, "only {n} checks read");
    assert!(failures.is_empty(), "dnsd disagrees with tests/vectors/dns_policy.json:\n{}", failures.join("\n"));
}

/// Sockets standing in for the resolvers, dnsmasq and devices around a dnsd on loopback.
mod udp_helpers {
    pub use std::net::{SocketAddr, UdpSocket};
    pub use std::sync::Mutex;
    pub use std::time::{Duration, Instant};

    use super::*;
    use crate::forward::Upstreams;

    pub fn free_port() -> u16 {
        UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    /// A fake upstream answering every query with 192.0.2.10 (unless `silent`); returns
    /// its address and the count of queries it saw.
    pub fn fake_upstream(silent: bool) -> (SocketAddr, Arc<AtomicU64>) {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let seen = Arc::new(AtomicU64::new(0));
        let (addr, counter) = (sock.local_addr().unwrap(), seen.clone());
        thread::spawn(move || {
            let mut buf = [0u8; 512];
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                counter.fetch_add(1, Ordering::Relaxed);
                if !silent {
                    let _ = sock.send_to(&upstream_answer(&buf[..n], &[]), from);
                }
            }
        });
        (addr, seen)
    }

    pub fn start(resolvers: Vec<SocketAddr>, dnsmasq: SocketAddr) -> (Arc<Shared>, SocketAddr) {
        let (s, rx) = shared();
        std::mem::forget(rx);
        add_device(&s, "127.0.0.1".parse().unwrap(), "02:00:00:00:00:01", State::Permitted, false);
        let mut ups = Upstreams::new(dnsmasq, None, vec!["lan".into()]);
        ups.set_resolvers(resolvers);
        let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        serve_udp(s.clone(), listen, ups).unwrap();
        (s, listen)
    }

    /// dnsd with a validating resolver (and its prober), the query events kept.
    pub fn start_validating(validator: SocketAddr, dnsmasq: SocketAddr) -> (Arc<Shared>, SocketAddr, Receiver<String>) {
        let (s, rx) = shared();
        add_device(&s, "127.0.0.1".parse().unwrap(), "02:00:00:00:00:01", State::Permitted, false);
        let _ = s.bogus.set(crate::bogus::Prober::start(s.clone(), validator).unwrap());
        let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        serve_udp(s.clone(), listen, Upstreams::validating(dnsmasq, validator, vec!["lan".into()])).unwrap();
        (s, listen, rx)
    }

    /// A fake validating resolver: names starting "forged" fail validation (SERVFAIL,
    /// but answered when checking is disabled), "down" ones cannot be resolved at all
    /// (SERVFAIL either way), "slow" ones never get an answer. Returns its address and
    /// the CD bit of every query it saw.
    pub fn fake_validator() -> (SocketAddr, Arc<Mutex<Vec<bool>>>) {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (addr, cds) = (sock.local_addr().unwrap(), seen.clone());
        thread::spawn(move || {
            let mut buf = [0u8; 512];
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                let q = wire::parse_query(&buf[..n]).unwrap();
                let cd = q.flags & wire::FLAG_CD != 0;
                cds.lock().unwrap().push(cd);
                let answer = if q.name.starts_with("slow") {
                    continue;
                } else if q.name.starts_with("down") || (q.name.starts_with("forged") && !cd) {
                    wire::reply(&buf[..n], &q, wire::RCODE_SERVFAIL)
                } else {
                    upstream_answer(&buf[..n], &[])
                };
                let _ = sock.send_to(&answer, from);
            }
        });
        (addr, seen)
    }

    /// The verdict of the query event for `name`, waiting for it (the prober logs late).
    pub fn verdict_of(rx: &Receiver<String>, name: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                let parts: Vec<&str> = line.trim_end().split(' ').collect();
                if parts[0] == "q" && parts[5] == name {
                    return parts[3].to_string();
                }
            }
        }
        panic!("no query event for {name}")
    }

    pub fn ask(server: SocketAddr, id: u16, name: &str) -> (Option<Vec<u8>>, Duration) {
        ask_with(server, wire::build_query(id, name, wire::TYPE_A))
    }

    pub fn ask_with(server: SocketAddr, query: Vec<u8>) -> (Option<Vec<u8>>, Duration) {
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(6))).unwrap();
        let t0 = Instant::now();
        c.send_to(&query, server).unwrap();
        let mut buf = [0u8; 512];
        let r = c.recv(&mut buf).ok().map(|n| buf[..n].to_vec());
        (r, t0.elapsed())
    }

}

/// The UDP path end to end on loopback: dnsd with a silent resolver, an answering one
/// and a fake dnsmasq, each a socket of this test.
mod udp {
    use super::udp_helpers::*;
    use super::*;

    #[test]
    fn a_silent_resolver_is_skipped_and_the_answer_fills_the_cache() {
        let (silent, silent_seen) = fake_upstream(true);
        let (good, good_seen) = fake_upstream(false);
        let (dnsmasq, dnsmasq_seen) = fake_upstream(false);
        let (s, server) = start(vec![silent, good], dnsmasq);
        let (r, _) = ask(server, 4242, "www.example.com");
        let r = r.expect("an answer via the second resolver");
        assert_eq!((u16::from_be_bytes([r[0], r[1]]), rcode(&r)), (4242, 0), "the client's own id comes back");
        assert_eq!((silent_seen.load(Ordering::Relaxed), good_seen.load(Ordering::Relaxed)), (1, 1));
        // Cached now: no upstream sees the repeat; the silent resolver is skipped for a new name.
        let (r, _) = ask(server, 4243, "www.example.com");
        assert_eq!(r.map(|r| rcode(&r)), Some(0));
        assert_eq!(good_seen.load(Ordering::Relaxed), 1);
        assert_eq!(s.stats.cache_hits.load(Ordering::Relaxed), 1);
        let (r, took) = ask(server, 4244, "new.example.com");
        assert_eq!(r.map(|r| rcode(&r)), Some(0));
        assert!(took < crate::forward::RESOLVER_TIMEOUT, "a resolver known down is not waited for again");
        assert_eq!(silent_seen.load(Ordering::Relaxed), 1);
        // A household name goes to dnsmasq, never upstream.
        let (r, _) = ask(server, 4245, "printer.lan");
        assert_eq!(r.map(|r| rcode(&r)), Some(0));
        assert_eq!((dnsmasq_seen.load(Ordering::Relaxed), good_seen.load(Ordering::Relaxed)), (1, 2));
        assert_eq!(s.stats.retries.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn nobody_answering_means_servfail_after_dnsmasq_was_tried() {
        let (silent, _) = fake_upstream(true);
        let (dnsmasq, dnsmasq_seen) = fake_upstream(true);
        let (s, server) = start(vec![silent], dnsmasq);
        let (r, took) = ask(server, 77, "example.com");
        let r = r.expect("SERVFAIL, not silence");
        assert_eq!((u16::from_be_bytes([r[0], r[1]]), rcode(&r)), (77, wire::RCODE_SERVFAIL));
        assert!(took >= crate::forward::RESOLVER_TIMEOUT, "waited for the resolver first");
        assert_eq!(dnsmasq_seen.load(Ordering::Relaxed), 1, "dnsmasq was the fallback");
        assert_eq!((s.stats.timeouts.load(Ordering::Relaxed), s.stats.servfail.load(Ordering::Relaxed)), (1, 1));
    }

    #[test]
    fn a_spoofed_answer_from_elsewhere_is_dropped() {
        // The resolver answers late; a spoofer who even guessed our id answers first.
        let resolver = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (dnsmasq, _) = fake_upstream(true);
        let (s, server) = start(vec![resolver.local_addr().unwrap()], dnsmasq);
        let asker = thread::spawn(move || ask(server, 5, "bank.example.com"));
        let mut buf = [0u8; 512];
        let (n, dnsd_up) = resolver.recv_from(&mut buf).unwrap();
        let spoofer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut forged = upstream_answer(&buf[..n], &[]);
        *forged.last_mut().unwrap() = 66;
        spoofer.send_to(&forged, dnsd_up).unwrap();
        thread::sleep(Duration::from_millis(100));
        resolver.send_to(&upstream_answer(&buf[..n], &[]), dnsd_up).unwrap();
        let (r, _) = asker.join().unwrap();
        let r = r.expect("the genuine answer");
        assert_eq!(*r.last().unwrap(), 10, "the spoofed address must not reach the device");
        assert_eq!(s.stats.mismatched.load(Ordering::Relaxed), 1);
    }
}

/// The path through a validating resolver: what a DNSSEC failure looks like to the device
/// and in the query log, and the CD bit.
mod validating {
    use super::udp_helpers::*;
    use super::*;

    #[test]
    fn a_bogus_answer_is_servfail_and_logged_bogus() {
        let (validator, cds) = fake_validator();
        let (dnsmasq, _) = fake_upstream(false);
        let (s, server, rx) = start_validating(validator, dnsmasq);
        let (r, _) = ask(server, 31, "forged.signed.test");
        assert_eq!(r.map(|r| rcode(&r)), Some(wire::RCODE_SERVFAIL), "the device never sees the forged data");
        assert_eq!(verdict_of(&rx, "forged.signed.test"), "bogus");
        assert_eq!(*cds.lock().unwrap(), vec![false, true], "asked once as the device did, once with CD by the prober");
        // An upstream that cannot be reached is a SERVFAIL too, but not a DNSSEC verdict.
        let (r, _) = ask(server, 32, "down.example");
        assert_eq!(r.map(|r| rcode(&r)), Some(wire::RCODE_SERVFAIL));
        assert_eq!(verdict_of(&rx, "down.example"), "allowed");
        assert_eq!(s.stats.bogus.load(Ordering::Relaxed), 1);
        let (r, _) = ask(server, 33, "www.signed.test");
        assert_eq!(r.map(|r| rcode(&r)), Some(0));
        assert_eq!(verdict_of(&rx, "www.signed.test"), "allowed");
    }

    #[test]
    fn checking_disabled_is_not_passed_on_but_comes_back() {
        let (validator, cds) = fake_validator();
        let (dnsmasq, _) = fake_upstream(false);
        let (_s, server, _rx) = start_validating(validator, dnsmasq);
        let mut q = wire::build_query(41, "forged.cd.test", wire::TYPE_A);
        q[3] |= wire::FLAG_CD as u8;
        let (r, _) = ask_with(server, q);
        let r = r.expect("an answer");
        assert_eq!(rcode(&r), wire::RCODE_SERVFAIL, "a device asking with CD still gets validated answers only");
        assert_ne!(r[3] & wire::FLAG_CD as u8, 0, "the CD bit is echoed");
        assert!(!cds.lock().unwrap()[0], "the device's CD never reaches the resolver");
    }

    #[test]
    fn a_silent_validator_means_servfail_never_dnsmasq() {
        let (validator, _) = fake_validator();
        let (dnsmasq, dnsmasq_seen) = fake_upstream(false);
        let (s, server, _rx) = start_validating(validator, dnsmasq);
        let (r, took) = ask(server, 51, "slow.example");
        assert_eq!(r.map(|r| rcode(&r)), Some(wire::RCODE_SERVFAIL));
        assert!(took >= crate::forward::VALIDATOR_TIMEOUT);
        assert_eq!(dnsmasq_seen.load(Ordering::Relaxed), 0, "no unvalidated way around the resolver");
        assert_eq!(s.stats.timeouts.load(Ordering::Relaxed), 1);
        let (r, _) = ask(server, 52, "nas.lan");
        assert_eq!(r.map(|r| rcode(&r)), Some(0));
        assert_eq!(dnsmasq_seen.load(Ordering::Relaxed), 1, "the household's names still go to dnsmasq");
    }
}
