//! The controller's side: lease-table updates in, notes and punted frames out, one message
//! per SOCK_SEQPACKET packet.
//!
//! In (one JSON object per message):
//!   {"op":"set","mac":"02:00:00:00:00:05","port":3,"ip":"10.2.0.6","router":"10.2.0.5",
//!    "broadcast":"10.2.0.7","lease_time":3600,"hostname":"laptop","relay":""}   upsert
//!    (hostname optional; relay: the giaddr of a relayed lease, "" or absent for none;
//!    "offer":true for an address offered and not yet taken, absent or false for a lease)
//!   {"op":"del","mac":"..."}  {"op":"clear"}
//!   {"op":"stats"}            -> {"op":"stats","frames":N,...} (see `Stats::json`)
//!   Offers to never-seen devices (newdev.rs):
//!   {"op":"new_macs","burst":16,"per_second":1.0,"lease_time":30}  the controller's gate
//!   {"op":"known","macs":["02:..",..]}  {"op":"unknown","mac":".."}  MACs it decides itself
//!   {"op":"reserve","ips":["10.2.0.10",..]}  free blocks (by device address, a .2) to offer
//! Anything else (bad JSON, unknown op, a bad field): ignored and counted as bad_control.
//! A JSON array of such objects in one message is applied in order (`apply_all`): the
//! controller gathers the messages of a burst (a group decision's hundreds of entries)
//! into one packet: one each woke this daemon each time, and on a busy machine the
//! controller then waited for the daemon's turn on the CPU.
//!
//! Out: `{"op":"offered"|"acked","mac":..,"port":P,"hostname":..,"xid":N,"counts":{"offered":N,"acked":N}}`
//! for each device answered in the last batch (main.rs: TELL_EVERY), with `"first":true`
//! and at once for an ACK on an offer (the new lease the controller must book now),
//! with `"reserved":"10.2.0.10"` while the answer came from a reserved block (newdev.rs),
//! and `P` + the received frame, unchanged, for every frame the controller must decide.

use std::collections::HashMap;

use crate::dhcp::{Entry, Kind, Mac, Note, Table};
use crate::newdev::{block_of, NewDevices};
use serde_json::Value as Json;

#[derive(Default, Debug, Clone)]
pub struct Stats {
    pub frames: u64,
    pub answered: u64,
    pub offers: u64,
    pub acks: u64,
    pub punted: u64,
    pub malformed: u64,
    pub dropped: u64,
    pub send_errors: u64,
    pub punt_dropped: u64,
    pub note_dropped: u64,
    pub bad_control: u64,
}

impl Stats {
    pub fn json(&self, entries: usize, new: &NewDevices) -> String {
        format!(
            "{{\"op\":\"stats\",\"frames\":{},\"answered\":{},\"offers\":{},\"acks\":{},\"punted\":{},\
             \"entries\":{},\"send_errors\":{},\"malformed\":{},\"dropped\":{},\"punt_dropped\":{},\
             \"note_dropped\":{},\"bad_control\":{},\"new_offers\":{},\"new_limited\":{},\
             \"reserve_empty\":{},\"reserve_left\":{},\"known\":{}}}",
            self.frames,
            self.answered,
            self.offers,
            self.acks,
            self.punted,
            entries,
            self.send_errors,
            self.malformed,
            self.dropped,
            self.punt_dropped,
            self.note_dropped,
            self.bad_control,
            new.offered,
            new.limited,
            new.reserve_empty,
            new.reserve_left(),
            new.known_count()
        )
    }
}

#[derive(Debug, PartialEq)]
pub enum Command {
    Set(Mac, Entry),
    Del(Mac),
    Clear,
    Stats,
    NewMacs { burst: u32, per_second: f64, lease_time: u32 },
    Known(Vec<Mac>),
    Unknown(Mac),
    Reserve(Vec<[u8; 4]>),
}

pub fn parse_mac(text: &str) -> Option<Mac> {
    let b = text.as_bytes();
    if b.len() != 17 {
        return None;
    }
    let mut mac = [0u8; 6];
    for (i, byte) in mac.iter_mut().enumerate() {
        if i > 0 && b[i * 3 - 1] != b':' {
            return None;
        }
        let hex = std::str::from_utf8(&b[i * 3..i * 3 + 2]).ok()?;
        if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        *byte = u8::from_str_radix(hex, 16).ok()?;
    }
    Some(mac)
}

/// A JSON string of `text` (quotes and escapes).
pub fn json_string(text: &str) -> String {
    Json::from(text).to_string()
}

pub fn format_mac(mac: &Mac) -> String {
    mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// A strict dotted quad (std's parser refuses leading zeros and other odd forms).
fn parse_ip(v: Option<&Json>) -> Option<[u8; 4]> {
    v?.as_str()?.parse::<std::net::Ipv4Addr>().ok().map(|a| a.octets())
}

pub fn parse_command(msg: &[u8]) -> Option<Command> {
    command_of(&serde_json::from_slice(msg).ok()?)
}

fn command_of(v: &Json) -> Option<Command> {
    let mac = || parse_mac(v.get("mac")?.as_str()?);
    match v.get("op")?.as_str()? {
        "set" => {
            let port = v.get("port")?.as_u64()?;
            if !(1..=0xFFFF).contains(&port) {
                return None;
            }
            let lease_time = u32::try_from(v.get("lease_time")?.as_u64()?).ok()?;
            let hostname = match v.get("hostname") {
                None | Some(Json::Null) => String::new(),
                Some(h) => h.as_str()?.to_string(),
            };
            let relay = match v.get("relay") {
                None | Some(Json::Null) => None,
                Some(r) if r.as_str() == Some("") => None,
                r => Some(parse_ip(r)?),
            };
            let offer = match v.get("offer") {
                None | Some(Json::Null) => false,
                Some(o) => o.as_bool()?,
            };
            let entry = Entry {
                port: port as u16,
                ip: parse_ip(v.get("ip"))?,
                router: parse_ip(v.get("router"))?,
                broadcast: parse_ip(v.get("broadcast"))?,
                lease_time,
                hostname,
                relay,
                offer,
                reserved: false,
            };
            Some(Command::Set(mac()?, entry))
        }
        "del" => Some(Command::Del(mac()?)),
        "clear" => Some(Command::Clear),
        "stats" => Some(Command::Stats),
        "new_macs" => {
            let burst = u32::try_from(v.get("burst")?.as_u64()?).ok()?;
            let per_second = v.get("per_second")?.as_f64().filter(|r| r.is_finite() && *r >= 0.0)?;
            let lease_time = u32::try_from(v.get("lease_time")?.as_u64()?).ok()?;
            Some(Command::NewMacs { burst, per_second, lease_time })
        }
        // all or nothing: one bad MAC refuses the message
        "known" => {
            let macs = v.get("macs")?.as_array()?;
            Some(Command::Known(macs.iter().map(|m| parse_mac(m.as_str()?)).collect::<Option<Vec<_>>>()?))
        }
        "unknown" => Some(Command::Unknown(mac()?)),
        "reserve" => {
            let ips = v.get("ips")?.as_array()?;
            let ips = ips.iter().map(|ip| parse_ip(Some(ip)).filter(|a| block_of(*a).is_some())).collect::<Option<Vec<_>>>()?;
            Some(Command::Reserve(ips))
        }
        _ => None,
    }
}

/// Apply one control message, or each of an array of them in order; the replies (`stats`).
pub fn apply_all(msg: &[u8], table: &mut Table, new: &mut NewDevices, stats: &mut Stats) -> Vec<String> {
    match serde_json::from_slice::<Json>(msg) {
        Ok(Json::Array(items)) => {
            items.iter().filter_map(|v| apply_command(command_of(v), table, new, stats)).collect()
        }
        _ => apply(msg, table, new, stats).into_iter().collect(),
    }
}

/// Apply one control message; Some(reply) for `stats`.
pub fn apply(msg: &[u8], table: &mut Table, new: &mut NewDevices, stats: &mut Stats) -> Option<String> {
    apply_command(parse_command(msg), table, new, stats)
}

fn apply_command(command: Option<Command>, table: &mut Table, new: &mut NewDevices, stats: &mut Stats) -> Option<String> {
    match command {
        Some(Command::Set(mac, entry)) => {
            table.insert(mac, entry);
        }
        Some(Command::Del(mac)) => {
            table.remove(&mac);
        }
        Some(Command::Clear) => table.clear(),
        Some(Command::Stats) => return Some(stats.json(table.len(), new)),
        Some(Command::NewMacs { burst, per_second, lease_time }) => new.configure(burst, per_second, lease_time),
        Some(Command::Known(macs)) => new.know(&macs),
        Some(Command::Unknown(mac)) => new.forget(&mac),
        Some(Command::Reserve(ips)) => new.reserve(&ips),
        None => stats.bad_control += 1,
    }
    None
}

/// What the daemon answered one device since the last batch: the latest answer (an ACK
/// outranks an OFFER: it is the one that moves the lease) and how many of each.
#[derive(Debug, Clone)]
pub struct Answered {
    pub note: Note,
    pub offered: u32,
    pub acked: u32,
    /// An ACK on an offer: the device's first, told at once.
    pub first: bool,
}

impl Answered {
    pub fn new(note: Note) -> Self {
        let mut a = Answered { note: note.clone(), offered: 0, acked: 0, first: false };
        a.count(note.kind);
        a
    }

    pub fn add(&mut self, mut note: Note) {
        self.count(note.kind);
        // the block a reserved offer gave stays named until the controller has claimed it
        note.reserved = note.reserved.or(self.note.reserved);
        note.fp = note.fp.or(self.note.fp.take());
        if note.kind == Kind::Acked || self.note.kind != Kind::Acked {
            self.note = note;
        } else {
            self.note.reserved = note.reserved;
            self.note.fp = note.fp;
        }
    }

    fn count(&mut self, kind: Kind) {
        match kind {
            Kind::Offered => self.offered += 1,
            Kind::Acked => self.acked += 1,
        }
    }

    /// The note with the counts of the batch: `{"op":..,..,"counts":{"offered":N,"acked":N}}`.
    pub fn json(&self) -> String {
        let mut out = note_json(&self.note);
        out.pop(); // the closing brace
        out.push_str(&format!(",\"counts\":{{\"offered\":{},\"acked\":{}}}", self.offered, self.acked));
        out.push_str(if self.first { ",\"first\":true}" } else { "}" });
        out
    }
}

/// The answers not yet told to the controller, one per device.
#[derive(Default)]
pub struct Batch {
    answered: HashMap<Mac, Answered>,
}

impl Batch {
    /// Adds an answer. Some(message) to tell at once, with what this device's batch held:
    /// an ACK on an offer is a new lease, which the controller books and gives its flows
    /// now, not up to a batch later. So is every ACK on an offer until the controller's
    /// `set` replaces it (one told and lost would leave a lease it never booked).
    pub fn add(&mut self, note: Note, table: &Table) -> Option<String> {
        let first = note.kind == Kind::Acked && table.get(&note.mac).is_some_and(|e| e.offer);
        let mac = note.mac;
        match self.answered.get_mut(&mac) {
            Some(a) => a.add(note),
            None => {
                self.answered.insert(mac, Answered::new(note));
            }
        }
        if !first {
            return None;
        }
        let mut a = self.answered.remove(&mac)?;
        a.first = true;
        Some(a.json())
    }

    pub fn len(&self) -> usize {
        self.answered.len()
    }

    /// This device's message alone, out of the batch: told before a request of its that the
    /// controller decides (a RELEASE right after a renewal must not be read before it).
    pub fn take_one(&mut self, mac: &Mac) -> Option<String> {
        self.answered.remove(mac).map(|a| a.json())
    }

    /// Every device's message, emptying the batch.
    pub fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.answered).values().map(Answered::json).collect()
    }
}

pub fn note_json(note: &Note) -> String {
    let mut out = String::with_capacity(128);
    out.push_str(match note.kind {
        Kind::Offered => "{\"op\":\"offered\",\"mac\":\"",
        Kind::Acked => "{\"op\":\"acked\",\"mac\":\"",
    });
    out.push_str(&format_mac(&note.mac));
    out.push_str(&format!("\",\"port\":{},\"hostname\":", note.port));
    out.push_str(&Json::from(note.hostname.as_str()).to_string());
    out.push_str(&format!(",\"xid\":{}", note.xid));
    if let Some(ip) = note.reserved {
        out.push_str(&format!(",\"reserved\":\"{}\"", std::net::Ipv4Addr::from(ip)));
    }
    if let Some(fp) = &note.fp {
        out.push_str(",\"fp\":");
        out.push_str(fp);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SET: &str = r#"{"op":"set","mac":"02:00:00:00:00:05","port":3,"ip":"10.2.0.6","router":"10.2.0.5","broadcast":"10.2.0.7","lease_time":3600,"hostname":"laptop"}"#;
    const MAC: Mac = [2, 0, 0, 0, 0, 5];

    #[test]
    fn set_del_clear_stats() {
        let mut table = Table::new();
        let mut stats = Stats::default();
        let mut new = NewDevices::default();
        assert_eq!(apply(SET.as_bytes(), &mut table, &mut new, &mut stats), None);
        let e = &table[&MAC];
        assert_eq!((e.port, e.ip, e.router, e.broadcast, e.lease_time), (3, [10, 2, 0, 6], [10, 2, 0, 5], [10, 2, 0, 7], 3600));
        assert_eq!(e.hostname, "laptop");
        // Upsert: a second set replaces the entry.
        let moved = SET.replace("\"port\":3", "\"port\":4").replace("\"hostname\":\"laptop\"", "\"hostname\":\"\"");
        apply(moved.as_bytes(), &mut table, &mut new, &mut stats);
        assert_eq!((table.len(), table[&MAC].port, table[&MAC].hostname.as_str()), (1, 4, ""));
        let other = SET.replace("00:05", "00:09");
        apply(other.as_bytes(), &mut table, &mut new, &mut stats);
        assert_eq!(table.len(), 2);
        apply(br#"{"op":"del","mac":"02:00:00:00:00:05"}"#, &mut table, &mut new, &mut stats);
        assert!(!table.contains_key(&MAC) && table.len() == 1);
        let reply = apply(br#"{"op":"stats"}"#, &mut table, &mut new, &mut stats).unwrap();
        let v: Json = serde_json::from_str(&reply).unwrap();
        assert_eq!(v.get("op").unwrap().as_str(), Some("stats"));
        assert_eq!(v.get("entries").unwrap().as_u64(), Some(1));
        for key in ["frames", "answered", "offers", "acks", "punted", "send_errors", "bad_control", "punt_dropped", "note_dropped"] {
            assert_eq!(v.get(key).unwrap().as_u64(), Some(0), "{key}");
        }
        apply(br#"{"op":"clear"}"#, &mut table, &mut new, &mut stats);
        assert!(table.is_empty());
        assert_eq!(stats.bad_control, 0);
    }

    #[test]
    fn bad_messages_are_counted_and_change_nothing() {
        let mut table = Table::new();
        let mut stats = Stats::default();
        let mut new = NewDevices::default();
        apply(SET.as_bytes(), &mut table, &mut new, &mut stats);
        let bad = [
            "".to_string(),
            "not json".to_string(),
            "{\"op\":\"set\"".to_string(),
            r#"{"op":"frobnicate"}"#.to_string(),
            r#"{"mac":"02:00:00:00:00:05"}"#.to_string(),
            r#"["op","clear"]"#.to_string(),
            r#"{"op":"del","mac":"02:00:00:00:00"}"#.to_string(),
            r#"{"op":"del","mac":"02-00-00-00-00-05"}"#.to_string(),
            SET.replace("\"port\":3", "\"port\":0"),
            SET.replace("\"port\":3", "\"port\":65536"),
            SET.replace("\"port\":3", "\"port\":3.5"),
            SET.replace("\"port\":3", "\"port\":\"3\""),
            SET.replace("10.2.0.6", "10.2.0.256"),
            SET.replace("10.2.0.6", "10.2.0"),
            SET.replace("3600", "4294967296"),
            SET.replace("3600", "-1"),
            SET.replace("\"laptop\"", "7"),
            SET.replace(",\"broadcast\":\"10.2.0.7\"", ""),
        ];
        for msg in &bad {
            assert_eq!(apply(msg.as_bytes(), &mut table, &mut new, &mut stats), None, "{msg}");
        }
        assert_eq!(stats.bad_control, bad.len() as u64);
        assert_eq!(table.len(), 1);
        assert_eq!(table[&MAC].port, 3);
        // Upper-case MACs, extra fields and a missing hostname are fine.
        let ok = SET.replace("02:00:00:00:00:05", "02:00:00:00:00:0A").replace(",\"hostname\":\"laptop\"", ",\"x\":[1]");
        apply(ok.as_bytes(), &mut table, &mut new, &mut stats);
        assert_eq!(table[&[2, 0, 0, 0, 0, 10]].hostname, "");
        assert_eq!(stats.bad_control, bad.len() as u64);
    }

    #[test]
    fn a_batch_keeps_the_latest_ack_and_counts_every_answer() {
        let offer = Note { kind: Kind::Offered, mac: MAC, port: 3, hostname: String::new(), xid: 1, reserved: None, fp: None };
        let ack = Note { kind: Kind::Acked, xid: 2, ..offer.clone() };
        let mut a = Answered::new(offer.clone());
        a.add(ack.clone());
        a.add(Note { xid: 3, ..offer });
        assert_eq!((a.note.kind, a.note.xid, a.offered, a.acked), (Kind::Acked, 2, 2, 1));
        let v: Json = serde_json::from_str(&a.json()).unwrap();
        assert_eq!(v.get("op").unwrap().as_str(), Some("acked"));
        assert_eq!(v["counts"]["offered"].as_u64(), Some(2));
        assert_eq!(v["counts"]["acked"].as_u64(), Some(1));
    }

    #[test]
    fn one_devices_answers_leave_the_batch_alone_before_its_punted_request() {
        let mut table = Table::new();
        let mut stats = Stats::default();
        let mut new = NewDevices::default();
        apply(SET.as_bytes(), &mut table, &mut new, &mut stats);
        let other: Mac = [2, 0, 0, 0, 0, 0x0b];
        let renewal = Note { kind: Kind::Acked, mac: MAC, port: 3, hostname: String::new(), xid: 1, reserved: None, fp: None };
        let mut batch = Batch::default();
        assert_eq!(batch.add(renewal.clone(), &table), None, "a renewal waits for the batch");
        assert_eq!(batch.add(Note { mac: other, ..renewal.clone() }, &table), None);
        let now: Json = serde_json::from_str(&batch.take_one(&MAC).unwrap()).unwrap();
        assert_eq!((now["op"].as_str(), now["counts"]["acked"].as_u64()), (Some("acked"), Some(1)));
        assert_eq!(batch.take_one(&MAC), None, "told once");
        assert_eq!(batch.len(), 1, "the other device still waits for the batch");
    }

    #[test]
    fn an_ack_on_an_offer_is_told_at_once_with_its_batch() {
        let mut table = Table::new();
        let mut stats = Stats::default();
        let mut new = NewDevices::default();
        apply(SET.replace("}", ",\"offer\":true}").as_bytes(), &mut table, &mut new, &mut stats);
        assert!(table[&MAC].offer);
        let offer = Note { kind: Kind::Offered, mac: MAC, port: 3, hostname: String::new(), xid: 1, reserved: None, fp: None };
        let ack = Note { kind: Kind::Acked, xid: 2, ..offer.clone() };
        let mut batch = Batch::default();
        assert_eq!(batch.add(offer.clone(), &table), None, "an OFFER waits for the batch");
        let now: Json = serde_json::from_str(&batch.add(ack.clone(), &table).unwrap()).unwrap();
        assert_eq!(now["op"].as_str(), Some("acked"));
        assert_eq!(now["first"].as_bool(), Some(true));
        assert_eq!((now["counts"]["offered"].as_u64(), now["counts"]["acked"].as_u64()), (Some(1), Some(1)));
        assert_eq!(batch.len(), 0, "what was told at once is not told again");
        // Once the controller's `set` makes it a lease, ACKs wait for the batch again.
        apply(SET.as_bytes(), &mut table, &mut new, &mut stats);
        assert!(!table[&MAC].offer);
        assert_eq!(batch.add(ack, &table), None);
        let later: Vec<Json> = batch.take().iter().map(|m| serde_json::from_str(m).unwrap()).collect();
        assert_eq!(later.len(), 1);
        assert!(later[0].get("first").is_none());
        assert_eq!(batch.len(), 0);
        // "offer" must be a boolean.
        assert_eq!(apply(SET.replace("}", ",\"offer\":1}").as_bytes(), &mut table, &mut new, &mut stats), None);
        assert_eq!(stats.bad_control, 1);
    }

    #[test]
    fn offers_to_new_devices_are_configured_and_bad_messages_change_nothing() {
        let mut table = Table::new();
        let mut stats = Stats::default();
        let mut new = NewDevices::default();
        let good = [
            r#"{"op":"new_macs","burst":16,"per_second":1.0,"lease_time":30}"#,
            r#"{"op":"known","macs":["02:00:00:00:00:05","02:00:00:00:00:0A"]}"#,
            r#"{"op":"reserve","ips":["10.2.0.10","10.2.0.14"]}"#,
            r#"{"op":"unknown","mac":"02:00:00:00:00:0a"}"#,
        ];
        for msg in good {
            assert_eq!(apply(msg.as_bytes(), &mut table, &mut new, &mut stats), None, "{msg}");
        }
        assert_eq!(stats.bad_control, 0);
        assert!(new.is_known(&MAC) && !new.is_known(&[2, 0, 0, 0, 0, 10]));
        assert_eq!((new.known_count(), new.reserve_left()), (1, 2));
        let bad = [
            r#"{"op":"known","macs":["02:00:00:00:00:07","not a mac"]}"#,
            r#"{"op":"known","macs":"02:00:00:00:00:07"}"#,
            r#"{"op":"reserve","ips":["10.2.0.18","10.2.0.17"]}"#,
            r#"{"op":"reserve","ips":["10.2.0.300"]}"#,
            r#"{"op":"new_macs","burst":-1,"per_second":1.0,"lease_time":30}"#,
            r#"{"op":"new_macs","burst":16,"per_second":-1.0,"lease_time":30}"#,
            r#"{"op":"new_macs","burst":16,"lease_time":30}"#,
            r#"{"op":"unknown"}"#,
        ];
        for msg in bad {
            assert_eq!(apply(msg.as_bytes(), &mut table, &mut new, &mut stats), None, "{msg}");
        }
        assert_eq!(stats.bad_control, bad.len() as u64);
        assert_eq!((new.known_count(), new.reserve_left()), (1, 2), "a refused message adds nothing");
        let v: Json = serde_json::from_str(&apply(br#"{"op":"stats"}"#, &mut table, &mut new, &mut stats).unwrap()).unwrap();
        assert_eq!((v["known"].as_u64(), v["reserve_left"].as_u64(), v["new_offers"].as_u64()), (Some(1), Some(2), Some(0)));
    }

    #[test]
    fn an_array_of_messages_is_applied_in_order_and_a_bad_one_alone_is_refused() {
        let mut table = Table::new();
        let mut stats = Stats::default();
        let mut new = NewDevices::default();
        let batch = format!(
            r#"[{SET},{{"op":"del","mac":"02:00:00:00:00:05"}},{},{{"op":"frobnicate"}},{{"op":"reserve","ips":["10.2.0.10"]}},{{"op":"stats"}}]"#,
            SET.replace("02:00:00:00:00:05", "02:00:00:00:00:0A")
        );
        let replies = apply_all(batch.as_bytes(), &mut table, &mut new, &mut stats);
        assert!(!table.contains_key(&MAC), "set, then deleted: in order");
        assert!(table.contains_key(&[2, 0, 0, 0, 0, 10]));
        assert_eq!((stats.bad_control, new.reserve_left()), (1, 1));
        assert_eq!(replies.len(), 1);
        let v: Json = serde_json::from_str(&replies[0]).unwrap();
        assert_eq!(v["entries"].as_u64(), Some(1));
        // one object is one message, as before
        assert!(apply_all(SET.as_bytes(), &mut table, &mut new, &mut stats).is_empty());
        assert!(table.contains_key(&MAC));
        assert!(apply_all(b"[1,", &mut table, &mut new, &mut stats).is_empty());
        assert_eq!(stats.bad_control, 2);
    }

    #[test]
    fn a_reserved_block_stays_named_in_the_batch_until_the_controller_claims_it() {
        let table = Table::new();
        let offer = Note { kind: Kind::Offered, mac: MAC, port: 3, hostname: String::new(), xid: 1, reserved: Some([10, 2, 0, 10]), fp: None };
        let mut batch = Batch::default();
        batch.add(offer.clone(), &table);
        batch.add(Note { kind: Kind::Acked, xid: 2, reserved: None, ..offer.clone() }, &table);
        let told: Vec<Json> = batch.take().iter().map(|m| serde_json::from_str(m).unwrap()).collect();
        assert_eq!(told[0]["op"].as_str(), Some("acked"));
        assert_eq!(told[0]["reserved"].as_str(), Some("10.2.0.10"));
        let plain = note_json(&Note { reserved: None, ..offer });
        assert!(!plain.contains("reserved"));
    }

    #[test]
    fn notes_are_json() {
        let note = Note { kind: Kind::Acked, mac: MAC, port: 3, hostname: "a\"b".into(), xid: 0x12345678, reserved: None, fp: None };
        let text = note_json(&note);
        assert_eq!(text, r#"{"op":"acked","mac":"02:00:00:00:00:05","port":3,"hostname":"a\"b","xid":305419896}"#);
        assert!(serde_json::from_str::<Json>(&text).is_ok());
        let offered = note_json(&Note { kind: Kind::Offered, hostname: String::new(), ..note });
        assert!(offered.starts_with(r#"{"op":"offered""#) && offered.contains(r#""hostname":"""#));
    }
}
