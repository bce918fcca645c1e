//! Offers to devices the controller has never seen, made here: a new device's
//! DISCOVER then waits for no controller, which is what 100 devices starting at once feel.
//!
//! The controller keeps every decision. It hands over free /30 blocks it has set aside
//! (`reserve`), names every MAC it decides itself (`known`: a device in its registry,
//! pending, permitted, denied, blacklisted or pre-approved, or one holding a block), and
//! gives its per-port gate's figures for new MACs (`new_macs`). Only a DISCOVER from an
//! unknown MAC, not relayed, from its own MAC, naming no address and no server, on a port
//! whose bucket has room, gets the next reserved block, as an offer entry; every note on
//! that entry names the block (`reserved`), and the controller claims it for the device
//! or takes the entry back. Everything else goes to the controller as before.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use crate::dhcp::{Entry, Mac, Request, Table};

/// Seconds a bucket has been refilling for, as f64.
fn seconds_since(then: Instant, now: Instant) -> f64 {
    now.saturating_duration_since(then).as_secs_f64()
}

/// One port's allowance of new MACs: `burst` at once, then `per_second` (the controller's
/// admission.NewMacGate, whose first bucket it charges for each offer made here).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

#[derive(Debug, Default)]
pub struct NewDevices {
    known: HashSet<Mac>,
    reserve: VecDeque<[u8; 4]>,
    lease_time: u32,
    burst: f64,
    per_second: f64,
    buckets: HashMap<u16, Bucket>,
    pub offered: u64,
    /// A new device's DISCOVER handed to the controller: its port's bucket was empty, or
    /// the reserve was.
    pub limited: u64,
    pub reserve_empty: u64,
}

/// The /30 around a device address: (router .1, broadcast .3). None unless `ip` is a .2.
pub fn block_of(ip: [u8; 4]) -> Option<([u8; 4], [u8; 4])> {
    if ip[3] & 3 != 2 {
        return None;
    }
    let mut router = ip;
    router[3] -= 1;
    let mut broadcast = ip;
    broadcast[3] += 1;
    Some((router, broadcast))
}

impl NewDevices {
    /// The controller's gate for new MACs, and the lease time a new (pending) device gets.
    /// A burst of 0 offers nothing here.
    pub fn configure(&mut self, burst: u32, per_second: f64, lease_time: u32) {
        self.burst = burst as f64;
        self.per_second = per_second;
        self.lease_time = lease_time;
        self.buckets.clear();
    }

    pub fn know(&mut self, macs: &[Mac]) {
        self.known.extend(macs.iter().copied());
    }

    pub fn forget(&mut self, mac: &Mac) {
        self.known.remove(mac);
    }

    #[cfg(test)]
    pub fn is_known(&self, mac: &Mac) -> bool {
        self.known.contains(mac)
    }

    /// More blocks, by device address (.2), in the order they are to be offered; one the
    /// reserve holds already is not added twice.
    pub fn reserve(&mut self, ips: &[[u8; 4]]) {
        for ip in ips {
            if !self.reserve.contains(ip) {
                self.reserve.push_back(*ip);
            }
        }
    }

    pub fn known_count(&self) -> usize {
        self.known.len()
    }

    pub fn reserve_left(&self) -> usize {
        self.reserve.len()
    }

    /// The offer entry for a never-seen device's DISCOVER on `port`, taken from the
    /// reserve; None leaves the request to the controller.
    pub fn offer(&mut self, req: &Request, port: u16, table: &Table, now: Instant) -> Option<Entry> {
        let mac = req.chaddr();
        // multicast or zero: not a device's MAC; the controller judges those
        if !req.plain_discover() || table.contains_key(&mac) || self.known.contains(&mac) || mac[0] & 1 != 0
            || mac == [0; 6] || self.burst < 1.0
        {
            return None;
        }
        if self.reserve.is_empty() {
            self.reserve_empty += 1;
            return None;
        }
        if !self.take_token(port, now) {
            self.limited += 1;
            return None;
        }
        let ip = self.reserve.pop_front()?;
        let (router, broadcast) = block_of(ip)?;
        self.offered += 1;
        Some(Entry {
            port,
            ip,
            router,
            broadcast,
            lease_time: self.lease_time,
            hostname: String::new(),
            relay: None,
            offer: true,
            reserved: true,
        })
    }

    fn take_token(&mut self, port: u16, now: Instant) -> bool {
        let (burst, rate) = (self.burst, self.per_second);
        let b = self.buckets.entry(port).or_insert(Bucket { tokens: burst, updated: now });
        b.tokens = burst.min(b.tokens + seconds_since(b.updated, now) * rate);
        b.updated = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dhcp::{decide_request, parse, port_of, Action, Kind};
    use crate::dhcp_tests::marked_frame;
    use std::time::Duration;

    const NEW: Mac = [2, 0x62, 0, 0, 0, 9];

    /// A DISCOVER as the switch delivers it on `port`: frame source `src`, chaddr `mac`.
    fn discover(port: u16, src: Mac, mac: Mac, giaddr: [u8; 4], opts: &[(u8, &[u8])]) -> Vec<u8> {
        let mut dhcp = vec![1u8, 1, 6, 0, 0xab, 0xcd, 0, 1, 0, 0, 0x80, 0];
        dhcp.extend_from_slice(&[0; 12]);
        dhcp.extend_from_slice(&giaddr);
        dhcp.extend_from_slice(&mac);
        dhcp.resize(236, 0);
        dhcp.extend_from_slice(&[0x63, 0x82, 0x53, 0x63, 53, 1, 1]);
        for (code, value) in opts {
            dhcp.push(*code);
            dhcp.push(value.len() as u8);
            dhcp.extend_from_slice(value);
        }
        dhcp.push(255);
        marked_frame(port, src, &dhcp)
    }

    fn ready(burst: u32) -> NewDevices {
        let mut n = NewDevices::default();
        n.configure(burst, 1.0, 30);
        n.reserve(&[[10, 2, 0, 10], [10, 2, 0, 14], [10, 2, 0, 18]]);
        n
    }

    fn offer(n: &mut NewDevices, frame: &[u8], table: &Table, now: Instant) -> Option<Entry> {
        let req = parse(frame).unwrap();
        n.offer(&req, port_of(frame).unwrap(), table, now)
    }

    #[test]
    fn a_new_devices_offer_carries_its_fingerprint_and_a_known_devices_does_not() {
        let mut n = ready(16);
        let mut table = Table::new();
        // Windows 10/11's DISCOVER: client id, host name, vendor class, request list
        let prl: &[u8] = &[1, 3, 6, 15, 31, 33, 43, 44, 46, 47, 119, 121, 249, 252];
        let opts: &[(u8, &[u8])] = &[(61, &[1, 2, 0, 0, 0, 0, 9]), (57, &[5, 220]), (12, b"DESKTOP-4K2J7QF"), (60, b"MSFT 5.0"), (55, prl)];
        let frame = discover(4, NEW, NEW, [0; 4], opts);
        let entry = offer(&mut n, &frame, &table, Instant::now()).expect("an offer");
        table.insert(NEW, entry);
        let Action::Answer(_, note) = decide_request(&parse(&frame).unwrap(), 4, &table) else { panic!("no answer") };
        let fp: serde_json::Value = serde_json::from_str(note.fp.as_deref().expect("a fingerprint")).unwrap();
        assert_eq!(fp["prl"], "1,3,6,15,31,33,43,44,46,47,119,121,249,252");
        assert_eq!(fp["options"], "61,57,12,60,55");
        assert_eq!((fp["vendor"].as_str(), fp["max_size"].as_str(), fp["client_id"].as_str()), (Some("MSFT 5.0"), Some("1500"), Some("1")));
        assert_eq!(fp["hostname"], "DESKTOP-4K2J7QF");
        assert!(crate::control::note_json(&note).contains(r#""fp":{"prl":"1,3,6,15"#));
        // the same device once the controller has set its entry: no fingerprint
        table.get_mut(&NEW).unwrap().reserved = false;
        let Action::Answer(_, note) = decide_request(&parse(&frame).unwrap(), 4, &table) else { panic!("no answer") };
        assert_eq!(note.fp, None);
    }

    #[test]
    fn a_new_device_gets_the_next_reserved_block_and_the_note_names_it() {
        let mut n = ready(16);
        let mut table = Table::new();
        let frame = discover(4, NEW, NEW, [0; 4], &[(12, b"phone")]);
        let entry = offer(&mut n, &frame, &table, Instant::now()).expect("an offer");
        assert_eq!((entry.port, entry.ip, entry.router, entry.broadcast), (4, [10, 2, 0, 10], [10, 2, 0, 9], [10, 2, 0, 11]));
        assert_eq!((entry.lease_time, entry.offer, entry.reserved, entry.relay), (30, true, true, None));
        table.insert(NEW, entry);
        let Action::Answer(reply, note) = decide_request(&parse(&frame).unwrap(), 4, &table) else { panic!("no answer") };
        assert_eq!((note.kind, note.reserved, note.hostname.as_str()), (Kind::Offered, Some([10, 2, 0, 10]), "phone"));
        assert_eq!(&reply[42 + 16..42 + 20], &[10, 2, 0, 10], "yiaddr");
        // its next DISCOVER is answered from the entry, without another block
        assert!(offer(&mut n, &frame, &table, Instant::now()).is_none());
        assert_eq!((n.offered, n.reserve_left()), (1, 2));
    }

    #[test]
    fn whatever_the_controller_decides_itself_is_left_to_it() {
        let mut n = ready(16);
        let table = Table::new();
        let now = Instant::now();
        let other: Mac = [2, 0x62, 0, 0, 0, 7];
        n.know(&[other]);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("a known MAC (blacklisted, pending, holding a block)", discover(4, other, other, [0; 4], &[])),
            ("spoofed: the frame's source is not chaddr", discover(4, other, NEW, [0; 4], &[])),
            ("relayed", discover(4, NEW, NEW, [10, 9, 0, 1], &[])),
            ("asks for an address (it may have held one here)", discover(4, NEW, NEW, [0; 4], &[(50, &[10, 2, 0, 6])])),
            ("names a server", discover(4, NEW, NEW, [0; 4], &[(54, &[10, 2, 0, 5])])),
            ("multicast chaddr", discover(4, [3, 0, 0, 0, 0, 1], [3, 0, 0, 0, 0, 1], [0; 4], &[])),
            ("zero chaddr", discover(4, [0; 6], [0; 6], [0; 4], &[])),
        ];
        for (why, frame) in &cases {
            assert!(offer(&mut n, frame, &table, now).is_none(), "{why}");
        }
        let mut request = discover(4, NEW, NEW, [0; 4], &[]);
        let at = request.len() - 2; // option 53's value
        request[at] = 3;
        assert!(offer(&mut n, &request, &table, now).is_none(), "a REQUEST");
        assert_eq!((n.offered, n.reserve_left()), (0, 3));
        // one the controller forgot is new again
        n.forget(&other);
        assert!(offer(&mut n, &cases[0].1, &table, now).is_some());
    }

    #[test]
    fn a_port_brings_no_more_new_devices_than_the_gate_allows_and_an_empty_reserve_offers_nothing() {
        let mut n = ready(2);
        n.reserve(&[[10, 2, 0, 22], [10, 2, 0, 26], [10, 2, 0, 10]]); // .10 is there already
        assert_eq!(n.reserve_left(), 5);
        let table = Table::new();
        let t0 = Instant::now();
        let mac = |i: u8| -> Mac { [2, 0x62, 0, 0, 1, i] };
        let on = |n: &mut NewDevices, port: u16, i: u8, at: Instant| offer(n, &discover(port, mac(i), mac(i), [0; 4], &[]), &table, at);
        assert!(on(&mut n, 4, 1, t0).is_some() && on(&mut n, 4, 2, t0).is_some());
        assert!(on(&mut n, 4, 3, t0).is_none(), "the port's burst is spent");
        assert!(on(&mut n, 5, 4, t0).is_some(), "another port has its own");
        assert!(on(&mut n, 4, 5, t0 + Duration::from_millis(1100)).is_some(), "refilled at 1/s");
        assert_eq!((n.limited, n.offered, n.reserve_left()), (1, 4, 1));
        assert!(on(&mut n, 6, 6, t0).is_some());
        assert!(on(&mut n, 7, 7, t0).is_none(), "the reserve is empty");
        assert_eq!(n.reserve_empty, 1);
        // unconfigured (burst 0): nothing is offered here at all
        let mut off = NewDevices::default();
        off.reserve(&[[10, 2, 0, 30]]);
        assert!(on(&mut off, 4, 8, t0).is_none());
    }

    #[test]
    fn blocks_are_the_30_around_a_device_address() {
        assert_eq!(block_of([10, 2, 1, 254]), Some(([10, 2, 1, 253], [10, 2, 1, 255])));
        assert_eq!(block_of([10, 2, 0, 5]), None);
        assert_eq!(block_of([10, 2, 0, 4]), None);
    }
}
