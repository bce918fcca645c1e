//! DNS wire format: just what the interception path needs. Parse a query's header and
//! question, build short local answers (NXDOMAIN, REFUSED, the captive-portal A record),
//! and read the A/AAAA/CNAME records of an upstream answer so the controller can learn
//! name -> address mappings. Every read is bounds-checked; compression pointers must
//! point backwards and are followed at most MAX_JUMPS times, so hostile packets end in an
//! error, never a panic or a loop.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const HEADER: usize = 12;
pub const TYPE_A: u16 = 1;
pub const TYPE_CNAME: u16 = 5;
pub const TYPE_AAAA: u16 = 28;
pub const TYPE_OPT: u16 = 41;
pub const TYPE_ANY: u16 = 255;
pub const RCODE_FORMERR: u8 = 1;
pub const RCODE_SERVFAIL: u8 = 2;
pub const RCODE_NXDOMAIN: u8 = 3;
pub const RCODE_NOTIMP: u8 = 4;
pub const RCODE_REFUSED: u8 = 5;
/// Header flags (the second 16-bit word): recursion desired, checking disabled.
pub const FLAG_RD: u16 = 0x0100;
pub const FLAG_CD: u16 = 0x0010;
const MAX_NAME: usize = 255;
const MAX_JUMPS: usize = 16;
const MAX_RECORDS: usize = 256;

#[derive(Debug, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than a header: nothing to answer to.
    Short,
    /// QR bit set: a response sent to us; ignore.
    NotQuery,
    /// A query we cannot parse: answer FORMERR.
    Format,
    /// An opcode other than QUERY: answer NOTIMP.
    NotImplemented,
}

#[derive(Debug, Clone)]
pub struct Question {
    pub id: u16,
    pub flags: u16,
    /// Lower-case, without trailing dot; "" is the root.
    pub name: String,
    pub qtype: u16,
    /// Offset just past the question (header + question bytes are echoed in local answers).
    pub end: usize,
}

fn u16_at(buf: &[u8], off: usize) -> Option<u16> {
    buf.get(off..off + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

fn u32_at(buf: &[u8], off: usize) -> Option<u32> {
    buf.get(off..off + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Parse a client's query: exactly one question, its name written without compression.
pub fn parse_query(buf: &[u8]) -> Result<Question, WireError> {
    if buf.len() < HEADER {
        return Err(WireError::Short);
    }
    let id = u16_at(buf, 0).unwrap();
    let flags = u16_at(buf, 2).unwrap();
    if flags & 0x8000 != 0 {
        return Err(WireError::NotQuery);
    }
    if (flags >> 11) & 0xF != 0 {
        return Err(WireError::NotImplemented);
    }
    if u16_at(buf, 4).unwrap() != 1 || u16_at(buf, 6).unwrap() != 0 {
        return Err(WireError::Format);
    }
    let (name, off) = read_plain_name(buf, HEADER)?;
    let qtype = u16_at(buf, off).ok_or(WireError::Format)?;
    u16_at(buf, off + 2).ok_or(WireError::Format)?;
    Ok(Question { id, flags, name, qtype, end: off + 4 })
}

/// A question name: labels of printable ASCII without '.', no compression pointers.
fn read_plain_name(buf: &[u8], mut off: usize) -> Result<(String, usize), WireError> {
    let mut name = String::new();
    let mut wire_len = 1;
    loop {
        let len = *buf.get(off).ok_or(WireError::Format)? as usize;
        off += 1;
        if len == 0 {
            return Ok((name, off));
        }
        if len > 63 {
            return Err(WireError::Format); // compression pointer or reserved label type
        }
        wire_len += len + 1;
        if wire_len > MAX_NAME {
            return Err(WireError::Format);
        }
        let label = buf.get(off..off + len).ok_or(WireError::Format)?;
        if !name.is_empty() {
            name.push('.');
        }
        for &c in label {
            // A '.' inside a label would make "blocked.test" one label and dodge suffix rules.
            if !(0x21..=0x7e).contains(&c) || c == b'.' || c == b'\\' {
                return Err(WireError::Format);
            }
            name.push(c.to_ascii_lowercase() as char);
        }
        off += len;
    }
}

/// Read a possibly compressed name anywhere in a message; returns (name, offset after it).
fn read_name(buf: &[u8], start: usize) -> Option<(String, usize)> {
    let mut name = String::new();
    let mut off = start;
    let mut end = None;
    let mut jumps = 0;
    let mut wire_len = 1;
    loop {
        let len = *buf.get(off)? as usize;
        if len & 0xC0 == 0xC0 {
            let target = ((len & 0x3F) << 8) | *buf.get(off + 1)? as usize;
            if end.is_none() {
                end = Some(off + 2);
            }
            jumps += 1;
            // Pointers must go strictly backwards: no loops, bounded work.
            if jumps > MAX_JUMPS || target >= off {
                return None;
            }
            off = target;
            continue;
        }
        if len & 0xC0 != 0 {
            return None;
        }
        off += 1;
        if len == 0 {
            return Some((name, end.unwrap_or(off)));
        }
        wire_len += len + 1;
        if wire_len > MAX_NAME {
            return None;
        }
        let label = buf.get(off..off + len)?;
        if !name.is_empty() {
            name.push('.');
        }
        for &c in label {
            name.push(if c.is_ascii_graphic() && c != b'.' { c.to_ascii_lowercase() as char } else { '?' });
        }
        off += len;
    }
}

/// What an upstream answer says, as far as policy and learning care.
#[derive(Debug, Default, PartialEq)]
pub struct Answer {
    pub rcode: u8,
    pub addrs: Vec<IpAddr>,
    pub cnames: Vec<String>,
    pub min_ttl: u32,
    /// Offset just past the question section (for building a replacement answer).
    pub question_end: usize,
}

pub fn parse_answer(buf: &[u8]) -> Option<Answer> {
    if buf.len() < HEADER {
        return None;
    }
    let flags = u16_at(buf, 2)?;
    let qd = u16_at(buf, 4)? as usize;
    let an = u16_at(buf, 6)? as usize;
    if qd > 1 || an > MAX_RECORDS {
        return None;
    }
    let mut off = HEADER;
    for _ in 0..qd {
        let (_, o) = read_name(buf, off)?;
        off = o + 4;
        if off > buf.len() {
            return None;
        }
    }
    let mut answer = Answer { rcode: (flags & 0xF) as u8, question_end: off, min_ttl: u32::MAX, ..Default::default() };
    for _ in 0..an {
        let (_, o) = read_name(buf, off)?;
        let rtype = u16_at(buf, o)?;
        let ttl = u32_at(buf, o + 4)?;
        let rdlen = u16_at(buf, o + 8)? as usize;
        let rdata = o + 10;
        let rd = buf.get(rdata..rdata + rdlen)?;
        match (rtype, rdlen) {
            (TYPE_A, 4) => answer.addrs.push(IpAddr::V4(Ipv4Addr::new(rd[0], rd[1], rd[2], rd[3]))),
            (TYPE_AAAA, 16) => {
                let mut a = [0u8; 16];
                a.copy_from_slice(rd);
                answer.addrs.push(IpAddr::V6(Ipv6Addr::from(a)));
            }
            (TYPE_CNAME, _) => answer.cnames.push(read_name(buf, rdata)?.0),
            _ => {}
        }
        if matches!(rtype, TYPE_A | TYPE_AAAA | TYPE_CNAME) {
            answer.min_ttl = answer.min_ttl.min(ttl);
        }
        off = rdata + rdlen;
    }
    if answer.min_ttl == u32::MAX {
        answer.min_ttl = 0;
    }
    Some(answer)
}

/// True when `rest` is exactly one EDNS OPT record (root name, type 41).
pub fn is_lone_opt(rest: &[u8]) -> bool {
    match (rest.first(), u16_at(rest, 1), u16_at(rest, 9)) {
        (Some(0), Some(TYPE_OPT), Some(rdlen)) => rest.len() == 11 + rdlen as usize,
        _ => false,
    }
}

/// Where the TTLs of a response are, for the answer cache.
#[derive(Debug, PartialEq)]
pub struct Ttls {
    pub rcode: u8,
    pub truncated: bool,
    pub question_end: usize,
    /// (offset, value) of every record's TTL except OPT's (which holds EDNS flags).
    pub ttls: Vec<(usize, u32)>,
    /// The smallest TTL in the answer and authority sections (0 when they are empty).
    pub min_ttl: u32,
}

/// Walk every record of a response with exactly one question; None if malformed.
pub fn scan_ttls(buf: &[u8]) -> Option<Ttls> {
    let flags = u16_at(buf, 2)?;
    if flags & 0x8000 == 0 || u16_at(buf, 4)? != 1 {
        return None;
    }
    let (an, ns, ar) = (u16_at(buf, 6)? as usize, u16_at(buf, 8)? as usize, u16_at(buf, 10)? as usize);
    if an + ns + ar > MAX_RECORDS {
        return None;
    }
    let (_, o) = read_name(buf, HEADER)?;
    let question_end = o + 4;
    if question_end > buf.len() {
        return None;
    }
    let mut info = Ttls { rcode: (flags & 0xF) as u8, truncated: flags & 0x0200 != 0, question_end, ttls: Vec::new(), min_ttl: u32::MAX };
    let mut off = question_end;
    for i in 0..an + ns + ar {
        let (_, o) = read_name(buf, off)?;
        let rtype = u16_at(buf, o)?;
        let ttl = u32_at(buf, o + 4)?;
        let rdlen = u16_at(buf, o + 8)? as usize;
        off = o + 10 + rdlen;
        if off > buf.len() {
            return None;
        }
        if rtype != TYPE_OPT {
            info.ttls.push((o + 4, ttl));
        }
        if i < an + ns {
            info.min_ttl = info.min_ttl.min(ttl);
        }
    }
    if info.min_ttl == u32::MAX {
        info.min_ttl = 0;
    }
    Some(info)
}

fn header(id: u16, query_flags: u16, rcode: u8, qd: u16, an: u16) -> Vec<u8> {
    // QR, the query's opcode and RD, RA; everything else clear.
    let flags: u16 = 0x8000 | (query_flags & 0x7900) | 0x0080 | rcode as u16;
    let mut out = Vec::with_capacity(64);
    for v in [id, flags, qd, an, 0, 0] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out
}

/// A local answer with no records: NXDOMAIN, REFUSED, SERVFAIL or NOERROR/NODATA.
pub fn reply(buf: &[u8], q: &Question, rcode: u8) -> Vec<u8> {
    let mut out = header(q.id, q.flags, rcode, 1, 0);
    out.extend_from_slice(&buf[HEADER..q.end]);
    out
}

/// An error answer to a query whose question we could not read (header only).
pub fn reply_header_only(buf: &[u8], rcode: u8) -> Option<Vec<u8>> {
    let id = u16_at(buf, 0)?;
    let flags = u16_at(buf, 2)?;
    Some(header(id, flags, rcode, 0, 0))
}

/// The captive-portal answer: A queries get `addr`, AAAA queries `addr6` (the router in
/// the device's /64, when it has IPv6), with TTL 0 (so the real answer is used as soon as
/// the device may go out again); other types get an empty NOERROR.
pub fn captive(buf: &[u8], q: &Question, addr: Ipv4Addr, addr6: Option<Ipv6Addr>) -> Vec<u8> {
    let rdata: Vec<u8> = match (q.qtype, addr6) {
        (TYPE_A | TYPE_ANY, _) => addr.octets().to_vec(),
        (TYPE_AAAA, Some(a6)) => a6.octets().to_vec(),
        _ => return reply(buf, q, 0),
    };
    let rtype = if rdata.len() == 16 { TYPE_AAAA } else { TYPE_A };
    let mut out = header(q.id, q.flags, 0, 1, 1);
    out.extend_from_slice(&buf[HEADER..q.end]);
    out.extend_from_slice(&[0xC0, 0x0C]);
    out.extend_from_slice(&rtype.to_be_bytes());
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0]);
    out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    out.extend_from_slice(&rdata);
    out
}

/// Replace an upstream answer by NXDOMAIN (a permitted name aliased to a blocked one).
pub fn nxdomain_from_answer(answer_buf: &[u8], question_end: usize) -> Option<Vec<u8>> {
    let id = u16_at(answer_buf, 0)?;
    let flags = u16_at(answer_buf, 2)?;
    let mut out = header(id, flags, RCODE_NXDOMAIN, 1, 0);
    out.extend_from_slice(answer_buf.get(HEADER..question_end)?);
    Some(out)
}

pub fn push_name(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

/// The client's query asked for another name (safe-search): same header, type and class,
/// the new name, no other sections (an EDNS record would only be echoed back).
pub fn with_question(buf: &[u8], q: &Question, name: &str) -> Vec<u8> {
    let mut out = buf[..HEADER].to_vec();
    out[4..12].copy_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    push_name(&mut out, name);
    out.extend_from_slice(&buf[q.end - 4..q.end]);
    out
}

/// The safe-search answer: the client's question, `CNAME target`, then the target's
/// addresses of the asked type from the upstream's answer (`rcode` as upstream said).
pub fn alias_answer(original: &[u8], q: &Question, target: &str, upstream: &Answer) -> Vec<u8> {
    let addrs: Vec<&IpAddr> = upstream.addrs.iter().filter(|a| match q.qtype {
        TYPE_A => a.is_ipv4(),
        TYPE_AAAA => a.is_ipv6(),
        TYPE_ANY => true,
        _ => false,
    }).take(MAX_RECORDS).collect();
    let ttl = upstream.min_ttl.to_be_bytes();
    let mut out = header(q.id, q.flags, upstream.rcode, 1, 1 + addrs.len() as u16);
    out.extend_from_slice(&original[HEADER..q.end]);
    let mut target_wire = Vec::new();
    push_name(&mut target_wire, target);
    out.extend_from_slice(&[0xC0, 0x0C, 0, TYPE_CNAME as u8, 0, 1]);
    out.extend_from_slice(&ttl);
    out.extend_from_slice(&(target_wire.len() as u16).to_be_bytes());
    let target_at = out.len() as u16;
    out.extend_from_slice(&target_wire);
    for addr in addrs {
        let (rtype, bytes) = match addr {
            IpAddr::V4(a) => (TYPE_A, a.octets().to_vec()),
            IpAddr::V6(a) => (TYPE_AAAA, a.octets().to_vec()),
        };
        out.extend_from_slice(&(0xC000 | target_at).to_be_bytes());
        out.extend_from_slice(&rtype.to_be_bytes());
        out.extend_from_slice(&[0, 1]);
        out.extend_from_slice(&ttl);
        out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        out.extend_from_slice(&bytes);
    }
    out
}

/// A query of our own (class IN, no other sections) with these header flags. `name` is
/// one a client's question carried (parse_query checked its labels).
pub fn query(id: u16, name: &str, qtype: u16, flags: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + name.len() + 6);
    for v in [id, flags, 1, 0, 0, 0] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    push_name(&mut out, name);
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out
}

/// Build a plain query (tests).
#[cfg(test)]
pub fn build_query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    query(id, name, qtype, FLAG_RD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_query_lower_case() {
        let q = parse_query(&build_query(7, "WWW.Example.COM", TYPE_AAAA)).unwrap();
        assert_eq!((q.id, q.name.as_str(), q.qtype), (7, "www.example.com", TYPE_AAAA));
    }

    #[test]
    fn rejects_bad_queries() {
        assert_eq!(parse_query(&[0; 5]).unwrap_err(), WireError::Short);
        let mut resp = build_query(1, "a.b", 1);
        resp[2] |= 0x80;
        assert_eq!(parse_query(&resp).unwrap_err(), WireError::NotQuery);
        let mut pointer = build_query(1, "", 1);
        pointer.truncate(HEADER);
        pointer.extend_from_slice(&[0xC0, 0x0C, 0, 1, 0, 1]);
        assert_eq!(parse_query(&pointer).unwrap_err(), WireError::Format);
        let mut dotted = build_query(1, "", 1);
        dotted.truncate(HEADER);
        dotted.extend_from_slice(b"\x0ckids.test\x00\x00\x00\x01\x00\x01");
        assert_eq!(parse_query(&dotted).unwrap_err(), WireError::Format);
        let mut truncated = build_query(1, "example.com", 1);
        truncated.truncate(truncated.len() - 3);
        assert_eq!(parse_query(&truncated).unwrap_err(), WireError::Format);
    }

    #[test]
    fn answer_with_compression_and_cname() {
        let mut a = build_query(9, "www.example.com", TYPE_A);
        a[2] = 0x81;
        a[7] = 2; // ancount
        // www.example.com CNAME cdn.example.net ; cdn.example.net A 192.0.2.7
        a.extend_from_slice(&[0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 17]);
        let cname_at = a.len();
        a.extend_from_slice(b"\x03cdn\x07example\x03net\x00");
        a.extend_from_slice(&[0xC0, cname_at as u8, 0, 1, 0, 1, 0, 0, 1, 0, 0, 4, 192, 0, 2, 7]);
        let ans = parse_answer(&a).unwrap();
        assert_eq!(ans.cnames, vec!["cdn.example.net".to_string()]);
        assert_eq!(ans.addrs, vec!["192.0.2.7".parse::<IpAddr>().unwrap()]);
        assert_eq!(ans.min_ttl, 60);
    }

    #[test]
    fn compression_loops_end() {
        let mut a = build_query(9, "x", TYPE_A);
        a[7] = 1;
        let here = a.len();
        a.extend_from_slice(&[0xC0, here as u8, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]);
        assert!(parse_answer(&a).is_none());
    }

    #[test]
    fn never_panics_on_garbage() {
        // Deterministic pseudo-random garbage and every truncation of a real answer.
        let mut seed: u64 = 0x2545F4914F6CDD1D;
        for n in 0..20000 {
            let len = (n % 300) as usize;
            let mut buf = Vec::with_capacity(len);
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                buf.push(seed as u8);
            }
            if let Ok(q) = parse_query(&buf) {
                let _ = reply(&buf, &q, RCODE_NXDOMAIN);
                let _ = captive(&buf, &q, Ipv4Addr::new(10, 2, 0, 1), Some("2001:db8::1".parse().unwrap()));
            }
            let _ = parse_answer(&buf);
            let _ = reply_header_only(&buf, RCODE_FORMERR);
        }
    }

    #[test]
    fn alias_answer_is_parseable() {
        let q_buf = build_query(5, "www.google.com", TYPE_A);
        let q = parse_query(&q_buf).unwrap();
        let asked = with_question(&q_buf, &q, "forcesafesearch.google.com");
        assert_eq!(parse_query(&asked).unwrap().name, "forcesafesearch.google.com");
        let upstream = Answer { addrs: vec!["216.239.38.120".parse().unwrap(), "::1".parse().unwrap()], min_ttl: 60,
                                ..Default::default() };
        let reply = alias_answer(&q_buf, &q, "forcesafesearch.google.com", &upstream);
        let ans = parse_answer(&reply).unwrap();
        assert_eq!(ans.cnames, vec!["forcesafesearch.google.com".to_string()]);
        assert_eq!(ans.addrs, vec!["216.239.38.120".parse::<IpAddr>().unwrap()]);
        assert_eq!((u16::from_be_bytes([reply[0], reply[1]]), ans.min_ttl), (5, 60));
    }

    #[test]
    fn captive_answer_is_parseable() {
        let q_buf = build_query(3, "connectivitycheck.gstatic.com", TYPE_A);
        let q = parse_query(&q_buf).unwrap();
        let router6: Ipv6Addr = "2001:db8:0:1::1".parse().unwrap();
        let ans = parse_answer(&captive(&q_buf, &q, Ipv4Addr::new(10, 2, 0, 5), Some(router6))).unwrap();
        assert_eq!(ans.addrs, vec!["10.2.0.5".parse::<IpAddr>().unwrap()]);
        assert_eq!(ans.min_ttl, 0);
        let q6_buf = build_query(4, "x.test", TYPE_AAAA);
        let q6 = parse_query(&q6_buf).unwrap();
        // without IPv6: no AAAA (an empty NOERROR); with it, the router in the device's /64
        let ans6 = parse_answer(&captive(&q6_buf, &q6, Ipv4Addr::new(10, 2, 0, 5), None)).unwrap();
        assert!(ans6.addrs.is_empty() && ans6.rcode == 0);
        let ans6 = parse_answer(&captive(&q6_buf, &q6, Ipv4Addr::new(10, 2, 0, 5), Some(router6))).unwrap();
        assert_eq!((ans6.addrs, ans6.min_ttl), (vec![IpAddr::V6(router6)], 0));
        let mx_buf = build_query(5, "x.test", 15);
        let mx = parse_answer(&captive(&mx_buf, &parse_query(&mx_buf).unwrap(), Ipv4Addr::new(10, 2, 0, 5), Some(router6))).unwrap();
        assert!(mx.addrs.is_empty() && mx.rcode == 0);
    }
}
