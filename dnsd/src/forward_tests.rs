//! The forwarder's routing and in-flight table, without sockets (server_tests.rs runs the
//! whole UDP path against fake upstreams on loopback).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::*;
use crate::wire::{build_query, TYPE_A};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

const DNSMASQ: &str = "127.0.0.1:5353";

fn answer_to(query: &[u8]) -> Vec<u8> {
    let mut a = query.to_vec();
    a[2] |= 0x80;
    a
}

fn in_flight(id: u16, name: &str) -> InFlight<()> {
    let q = build_query(id, name, TYPE_A);
    let end = q.len();
    InFlight::new(addr("10.2.0.2:40000"), Instant::now(), q, end, ())
}

#[test]
fn ids_are_random_and_answers_map_back_to_their_query() {
    let mut t: Table<()> = Table::new();
    let now = Instant::now();
    let up = addr("203.0.113.53:53");
    let mut ids = Vec::new();
    for i in 0..200 {
        let id = t.insert(in_flight(7, &format!("n{i}.example.com")), 0, up, RESOLVER_TIMEOUT, now).ok().unwrap();
        ids.push(id);
    }
    let sequential = ids.windows(2).filter(|w| w[1] == w[0].wrapping_add(1)).count();
    assert!(sequential < 5, "upstream ids must not be predictable: {ids:?}");
    assert_eq!(t.len, 200);
    // The answer to the 5th query, as the upstream sends it (our id, the client's question).
    let sent = t.query(ids[5]).to_vec();
    assert_eq!(u16::from_be_bytes([sent[0], sent[1]]), ids[5]);
    let q = t.take_answer(up, &answer_to(&sent)).ok().unwrap();
    assert_eq!((q.orig_id, q.client), (7, addr("10.2.0.2:40000")));
    assert_eq!(t.len, 199);
    // The same answer again (a duplicate): no query any more.
    assert_eq!(t.take_answer(up, &answer_to(&sent)).err(), Some(Reject::UnknownId));
}

#[test]
fn mismatched_answers_are_dropped_and_the_query_stays() {
    let mut t: Table<()> = Table::new();
    let up = addr("203.0.113.53:53");
    let id = t.insert(in_flight(1, "example.com"), 0, up, RESOLVER_TIMEOUT, Instant::now()).ok().unwrap();
    let sent = t.query(id).to_vec();
    // Right id, another question (a spoofer guessing ids with its own name).
    let mut other = build_query(id, "evil.example", TYPE_A);
    other[2] |= 0x80;
    assert_eq!(t.take_answer(up, &other).err(), Some(Reject::Mismatch));
    // Right id and question, from somewhere else.
    assert_eq!(t.take_answer(addr("198.51.100.9:53"), &answer_to(&sent)).err(), Some(Reject::Mismatch));
    // A query (QR clear) echoed back is no answer.
    assert_eq!(t.take_answer(up, &sent).err(), Some(Reject::Mismatch));
    // The genuine answer still gets through, in another letter case (0x20 tolerant).
    let mut genuine = answer_to(&sent);
    genuine[13..20].make_ascii_uppercase();
    assert!(t.take_answer(up, &genuine).is_ok());
}

#[test]
fn timeout_moves_to_the_next_upstream_then_dnsmasq_then_gives_up() {
    let mut u = Upstreams::new(addr(DNSMASQ), None, vec!["lan".into()]);
    u.set_resolvers(vec![addr("203.0.113.53:53"), addr("203.0.113.54:53")]);
    let mut t: Table<()> = Table::new();
    let t0 = Instant::now();
    let step = u.first("example.com", t0);
    assert_eq!(u.addr(step), Some(addr("203.0.113.53:53")));
    t.insert(in_flight(1, "example.com"), step, u.addr(step).unwrap(), u.timeout(step), t0).ok().unwrap();
    assert!(t.expired(t0 + Duration::from_millis(100)).is_empty());
    let late = t0 + RESOLVER_TIMEOUT + Duration::from_millis(1);
    let q = t.expired(late).pop().expect("timed out");
    let step = u.after_timeout(q.step, late).unwrap();
    assert_eq!(u.addr(step), Some(addr("203.0.113.54:53")));
    // The first resolver is now skipped for new queries too.
    assert_eq!(u.addr(u.first("other.example.com", late)), Some(addr("203.0.113.54:53")));
    let step = u.after_timeout(step, late).unwrap();
    assert_eq!((u.addr(step), u.is_fallback(step)), (Some(addr(DNSMASQ)), true));
    assert_eq!(u.after_timeout(step, late), None, "after dnsmasq: SERVFAIL");
    // Both down: new names go to dnsmasq at once; an answer brings a resolver back.
    assert!(u.is_fallback(u.first("third.example.com", late)));
    u.answered(1);
    assert_eq!(u.addr(u.first("third.example.com", late)), Some(addr("203.0.113.54:53")));
    assert_eq!(u.addr(u.first("third.example.com", late + DOWN_FOR)), Some(addr("203.0.113.53:53")));
}

#[test]
fn a_query_answered_before_its_deadline_does_not_expire() {
    let mut t: Table<()> = Table::new();
    let up = addr("203.0.113.53:53");
    let t0 = Instant::now();
    let id = t.insert(in_flight(1, "example.com"), 0, up, RESOLVER_TIMEOUT, t0).ok().unwrap();
    let sent = t.query(id).to_vec();
    t.take_answer(up, &answer_to(&sent)).ok().unwrap();
    // The deadline of an answered query expires nothing (and no other query under its id).
    assert!(t.expired(t0 + Duration::from_secs(5)).is_empty());
    assert_eq!(t.len, 0);
}

#[test]
fn household_names_go_to_dnsmasq() {
    let mut u = Upstreams::new(addr(DNSMASQ), None, vec!["lan".into(), "home.arpa".into()]);
    u.set_resolvers(vec![addr("203.0.113.53:53")]);
    let now = Instant::now();
    for name in ["printer", "printer.lan", "lan", "nas.home.arpa", "2.0.2.10.in-addr.arpa", "1.1.168.192.in-addr.arpa",
                 "9.0.20.172.in-addr.arpa", "1.0.0.127.in-addr.arpa",
                 "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.e.f.ip6.arpa", "0.0.d.f.ip6.arpa"] {
        assert!(u.is_fallback(u.first(name, now)), "{name} must go to dnsmasq");
    }
    for name in ["example.com", "notlan.com", "lan.example.com", "8.8.8.8.in-addr.arpa", "9.0.40.172.in-addr.arpa",
                 "0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"] {
        assert!(!u.is_fallback(u.first(name, now)), "{name} must go upstream directly");
    }
}

#[test]
fn resolv_file_lines_become_upstreams() {
    let text = "# from the WAN lease\nnameserver 203.0.113.53\nnameserver 127.0.0.1\nnameserver 203.0.113.53\n\
                nameserver 2001:db8::53\nsearch example.net\nnameserver 198.51.100.1 # second\nnameserver bogus\n";
    assert_eq!(parse_resolv(text, addr(DNSMASQ)), vec![addr("203.0.113.53:53"), addr("198.51.100.1:53")]);
    let dir = std::env::temp_dir().join(format!("dnsd-resolv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("resolv.upstream");
    let mut u = Upstreams::new(addr(DNSMASQ), Some(file.clone()), vec![]);
    assert!(u.resolvers.is_empty(), "no file yet: everything via dnsmasq");
    std::fs::write(&file, "nameserver 203.0.113.53\n").unwrap();
    assert!(u.reload());
    assert_eq!(u.addr(0), Some(addr("203.0.113.53:53")));
    assert!(!u.reload(), "unchanged file");
    std::fs::remove_file(&file).unwrap();
    assert!(u.reload());
    assert!(u.resolvers.is_empty());
    let _ = std::fs::remove_dir(&dir);
}

#[test]
fn with_a_validating_resolver_nothing_goes_around_it() {
    let validator = addr("127.0.0.1:5335");
    let mut u = Upstreams::validating(addr(DNSMASQ), validator, vec!["lan".into()]);
    let now = Instant::now();
    assert!(u.is_fallback(u.first("printer.lan", now)), "the household's names still go to dnsmasq");
    let step = u.first("example.com", now);
    assert_eq!((u.addr(step), u.timeout(step)), (Some(validator), VALIDATOR_TIMEOUT));
    // Silent: SERVFAIL, never dnsmasq (which would answer without validating) ...
    assert_eq!(u.after_timeout(step, now), None);
    // ... and it stays the only way out while it is slow.
    assert_eq!(u.addr(u.first("example.org", now)), Some(validator));
    assert!(!u.reload(), "no resolv file is read");
    let route = u.route();
    assert_eq!((route.tcp_target("example.com"), route.tcp_target("nas.lan")), (validator, addr(DNSMASQ)));
}

#[test]
fn deadlines_of_different_lengths_expire_in_their_own_order() {
    let mut t: Table<()> = Table::new();
    let up = addr("127.0.0.1:5335");
    let t0 = Instant::now();
    let slow = t.insert(in_flight(1, "slow.example"), 0, up, VALIDATOR_TIMEOUT, t0).ok().unwrap();
    let fast = t.insert(in_flight(2, "fast.lan"), 1, addr(DNSMASQ), FALLBACK_TIMEOUT, t0).ok().unwrap();
    let gone: Vec<u16> = t.expired(t0 + FALLBACK_TIMEOUT).iter().map(|q| q.orig_id).collect();
    assert_eq!(gone, vec![2], "the shorter deadline is not held up behind the longer one ({slow} {fast})");
    let gone: Vec<u16> = t.expired(t0 + VALIDATOR_TIMEOUT).iter().map(|q| q.orig_id).collect();
    assert_eq!(gone, vec![1]);
}
