//! A small answer cache in front of dnsmasq: an allowed query for a name dnsd relayed a
//! moment ago is answered here, saving the loopback round trip to dnsmasq (the hop that
//! held the path to ~0.6x of dnsmasq's own speed). Policy is always checked before the
//! cache, so a blocked or pending device never gets a cached answer; only upstream answers
//! are stored, never local ones (NXDOMAIN for blocked names, captive-portal answers).
//!
//! An entry lives for the smallest TTL of its answer/authority records, at most MAX_TTL;
//! served copies get the client's id and question spelling and TTLs reduced by the age.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::wire;

pub const MAX_TTL: u32 = 60;
pub const CAPACITY: usize = 10_000;

/// What makes two queries get the same answer. `extra` holds the query's RD/CD bits and
/// its whole EDNS OPT record (UDP size, DO bit, options), so those always match exactly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    name: String,
    qtype: u16,
    qclass: u16,
    tcp: bool,
    extra: Vec<u8>,
}

impl Key {
    /// The key of a parsed query, or None for queries we do not cache (records other
    /// than one OPT after the question).
    pub fn of(buf: &[u8], q: &wire::Question, tcp: bool) -> Option<Key> {
        let count = |off: usize| u16::from_be_bytes([buf[off], buf[off + 1]]);
        if count(6) != 0 || count(8) != 0 || count(10) > 1 {
            return None;
        }
        let rest = buf.get(q.end..)?;
        if count(10) == 1 && !wire::is_lone_opt(rest) {
            return None;
        }
        if count(10) == 0 && !rest.is_empty() {
            return None; // trailing junk: let dnsmasq judge it
        }
        let mut extra = (q.flags & 0x0110).to_be_bytes().to_vec(); // RD, CD
        extra.extend_from_slice(rest);
        Some(Key { name: q.name.clone(), qtype: q.qtype, qclass: u16::from_be_bytes([buf[q.end - 2], buf[q.end - 1]]), tcp, extra })
    }
}

struct Entry {
    answer: Vec<u8>,
    /// Where each record's TTL sits in `answer`, with its value as received.
    ttls: Vec<(usize, u32)>,
    question_end: usize,
    /// CNAME targets, re-checked against the asking device's policy on every hit.
    cnames: Vec<String>,
    inserted: Instant,
    lifetime: Duration,
    seq: u64,
}

pub struct Hit {
    pub answer: Vec<u8>,
    pub cnames: Vec<String>,
}

pub struct Cache {
    entries: HashMap<Key, Entry>,
    /// Insertion order for eviction: (seq, key); stale when the entry was replaced since.
    order: VecDeque<(u64, Key)>,
    capacity: usize,
    seq: u64,
}

impl Cache {
    pub fn new(capacity: usize) -> Cache {
        Cache { entries: HashMap::new(), order: VecDeque::new(), capacity: capacity.max(1), seq: 0 }
    }

    /// Forget every answer (the resolver's settings changed: they may not hold any more).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.order.clear();
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Store an upstream answer if it may be reused: NOERROR/NXDOMAIN, not truncated,
    /// with a non-zero TTL on its answer/authority records.
    pub fn insert(&mut self, key: Key, answer: &[u8], cnames: Vec<String>, now: Instant) -> bool {
        let Some(info) = wire::scan_ttls(answer) else { return false };
        if !matches!(info.rcode, 0 | wire::RCODE_NXDOMAIN) || info.truncated || info.min_ttl == 0 {
            return false;
        }
        let entries = &mut self.entries;
        let live = |e: &HashMap<Key, Entry>, seq: u64, k: &Key| e.get(k).is_some_and(|e| e.seq == seq);
        if self.order.len() > 2 * self.capacity {
            // Re-inserted keys leave stale places in the queue: drop them now and then.
            self.order.retain(|(seq, k)| live(entries, *seq, k));
        }
        while entries.len() >= self.capacity && !entries.contains_key(&key) {
            let Some((seq, old)) = self.order.pop_front() else { break };
            if live(entries, seq, &old) {
                entries.remove(&old);
            }
        }
        self.seq += 1;
        let lifetime = Duration::from_secs(info.min_ttl.min(MAX_TTL) as u64);
        self.order.push_back((self.seq, key.clone()));
        self.entries.insert(key, Entry {
            answer: answer.to_vec(), ttls: info.ttls, question_end: info.question_end, cnames,
            inserted: now, lifetime, seq: self.seq,
        });
        true
    }

    /// A fresh answer for `query` (the client's bytes), ready to send: its id, its
    /// question as the client spelled it, TTLs counted down by the entry's age.
    pub fn get(&self, key: &Key, query: &[u8], question_end: usize, now: Instant) -> Option<Hit> {
        let e = self.entries.get(key)?;
        let age = now.checked_duration_since(e.inserted)?;
        if age >= e.lifetime || e.question_end != question_end {
            return None;
        }
        let mut answer = e.answer.clone();
        answer[..2].copy_from_slice(&query[..2]);
        answer[wire::HEADER..question_end].copy_from_slice(&query[wire::HEADER..question_end]);
        let age = age.as_secs() as u32;
        for &(off, ttl) in &e.ttls {
            answer[off..off + 4].copy_from_slice(&ttl.saturating_sub(age).to_be_bytes());
        }
        Some(Hit { answer, cnames: e.cnames.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{build_query, parse_query, TYPE_A};

    /// A query, optionally with an EDNS OPT record (DO bit as given).
    fn query(id: u16, name: &str, edns_do: Option<bool>) -> Vec<u8> {
        let mut q = build_query(id, name, TYPE_A);
        if let Some(dnssec_ok) = edns_do {
            q[11] = 1;
            q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, if dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
        }
        q
    }

    /// dnsmasq's answer to `q`: one A record with `ttl`, the given rcode and TC bit.
    fn answer(q: &[u8], ttl: u32, rcode: u8, truncated: bool) -> Vec<u8> {
        let qd_end = parse_query(q).unwrap().end;
        let mut a = q[..qd_end].to_vec();
        a[2] = 0x81 | if truncated { 0x02 } else { 0 };
        a[3] = 0x80 | rcode;
        a[7] = 1;
        a[11] = 0;
        a.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1]);
        a.extend_from_slice(&ttl.to_be_bytes());
        a.extend_from_slice(&[0, 4, 192, 0, 2, 7]);
        a
    }

    fn key(q: &[u8]) -> Key {
        Key::of(q, &parse_query(q).unwrap(), false).unwrap()
    }

    fn ttl_of(a: &[u8]) -> u32 {
        let n = a.len();
        u32::from_be_bytes([a[n - 10], a[n - 9], a[n - 8], a[n - 7]])
    }

    fn get(c: &Cache, q: &[u8], now: Instant) -> Option<Vec<u8>> {
        c.get(&key(q), q, parse_query(q).unwrap().end, now).map(|h| h.answer)
    }

    #[test]
    fn fresh_only_for_the_min_ttl_capped_at_max() {
        let (mut c, t) = (Cache::new(10), Instant::now());
        let q = query(1, "example.com", None);
        assert!(c.insert(key(&q), &answer(&q, 30, 0, false), vec![], t));
        assert!(get(&c, &q, t + Duration::from_secs(29)).is_some());
        assert!(get(&c, &q, t + Duration::from_secs(30)).is_none());
        let q2 = query(2, "www.example.com", None);
        assert!(c.insert(key(&q2), &answer(&q2, 3600, 0, false), vec![], t));
        assert!(get(&c, &q2, t + Duration::from_secs(MAX_TTL as u64 - 1)).is_some());
        assert!(get(&c, &q2, t + Duration::from_secs(MAX_TTL as u64)).is_none());
        assert!(get(&c, &query(3, "other.test", None), t).is_none());
    }

    #[test]
    fn ttls_count_down_with_age() {
        let (mut c, t) = (Cache::new(10), Instant::now());
        let q = query(1, "example.com", None);
        c.insert(key(&q), &answer(&q, 40, 0, false), vec![], t);
        assert_eq!(ttl_of(&get(&c, &q, t).unwrap()), 40);
        assert_eq!(ttl_of(&get(&c, &q, t + Duration::from_millis(10_900)).unwrap()), 30);
    }

    #[test]
    fn hit_gets_the_clients_id_and_spelling() {
        let (mut c, t) = (Cache::new(10), Instant::now());
        let q = query(0x1111, "example.com", None);
        let stored = answer(&q, 40, 0, false);
        c.insert(key(&q), &stored, vec![], t);
        let q2 = query(0xBEEF, "ExAmple.COM", None);
        let a = get(&c, &q2, t).unwrap();
        assert_eq!(&a[..2], &[0xBE, 0xEF]);
        assert_eq!(&a[12..q2.len()], &q2[12..]);             // the question as the client wrote it
        assert_eq!(&a[2..12], &stored[2..12]);
        assert_eq!(&a[q2.len()..], &stored[q.len()..]);
    }

    #[test]
    fn edns_do_and_transport_are_part_of_the_key() {
        let (mut c, t) = (Cache::new(10), Instant::now());
        let plain = query(1, "example.com", None);
        c.insert(key(&plain), &answer(&plain, 40, 0, false), vec![], t);
        assert!(get(&c, &query(2, "example.com", Some(false)), t).is_none());
        let with_do = query(3, "example.com", Some(true));
        assert_ne!(key(&with_do), key(&query(4, "example.com", Some(false))));
        assert_eq!(key(&with_do), key(&query(5, "EXAMPLE.com", Some(true))));
        let q = parse_query(&plain).unwrap();
        assert_ne!(Key::of(&plain, &q, true), Key::of(&plain, &q, false));
        let mut junk = plain.clone();
        junk.push(0);
        assert!(Key::of(&junk, &parse_query(&junk).unwrap(), false).is_none());
    }

    #[test]
    fn evicts_the_oldest_when_full() {
        let (mut c, t) = (Cache::new(2), Instant::now());
        let qs: Vec<Vec<u8>> = ["a.test", "b.test", "c.test"].iter().map(|n| query(1, n, None)).collect();
        for q in &qs {
            c.insert(key(q), &answer(q, 40, 0, false), vec![], t);
        }
        assert_eq!(c.len(), 2);
        assert!(get(&c, &qs[0], t).is_none());
        assert!(get(&c, &qs[1], t).is_some() && get(&c, &qs[2], t).is_some());
        // Re-inserting a key refreshes it; the order queue stays bounded.
        for _ in 0..100 {
            c.insert(key(&qs[2]), &answer(&qs[2], 40, 0, false), vec![], t);
        }
        assert!(c.order.len() <= 4 && c.len() == 2);
    }

    #[test]
    fn caches_only_reusable_answers() {
        let (mut c, t) = (Cache::new(10), Instant::now());
        let q = query(1, "example.com", None);
        assert!(!c.insert(key(&q), &answer(&q, 40, 0, true), vec![], t));                       // truncated
        assert!(!c.insert(key(&q), &answer(&q, 40, wire::RCODE_SERVFAIL, false), vec![], t));   // SERVFAIL
        assert!(!c.insert(key(&q), &answer(&q, 40, wire::RCODE_REFUSED, false), vec![], t));
        assert!(!c.insert(key(&q), &answer(&q, 0, 0, false), vec![], t));                        // TTL 0
        assert!(!c.insert(key(&q), &q, vec![], t));                                              // not a response
        assert!(!c.insert(key(&q), &answer(&q, 40, 0, false)[..30], vec![], t));                 // cut short
        assert_eq!(c.len(), 0);
        assert!(c.insert(key(&q), &answer(&q, 40, wire::RCODE_NXDOMAIN, false), vec![], t));
    }
}
