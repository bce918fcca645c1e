//! Packet layout. All integers are in network byte order.
//!
//! Header (12 bytes): u32 subport, u32 seqno, u16 command, u8 fnum, u8 nfrags.
//! CONNECT carries the NUL-terminated service name. QUERY, RESPONSE and FRAGMENT carry
//! `u16 tlen, u16 flen, data` (classic). A message longer than 65535 bytes cannot be
//! described by those fields, so it uses the extended form, flagged by fnum = nfrags = 0
//! in the header: `u32 fnum, u32 nfrags, u32 tlen, u16 flen, data`; the FACK of an
//! extended fragment likewise carries `u32 fnum, u32 nfrags` after a zeroed header.
//! Messages up to 64 KiB are therefore byte-for-byte the original format.

pub const HEADER_LEN: usize = 12;
/// Data bytes per fragment.
pub const FRAGMENT_SIZE: usize = 1024;
/// Largest message we accept (bounds the memory one peer can make us hold).
pub const MAX_MESSAGE: usize = 64 << 20;
pub const MAX_FRAGMENTS: u32 = (MAX_MESSAGE / FRAGMENT_SIZE) as u32;
/// Seqnos are reset (SEQNO/SACK) before they get this large.
pub const SEQNO_LIMIT: u32 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Command {
    Connect = 1,
    Cack = 2,
    Query = 3,
    Qack = 4,
    Response = 5,
    Rack = 6,
    Disconnect = 7,
    Dack = 8,
    Fragment = 9,
    Fack = 10,
    Ping = 11,
    Pack = 12,
    Seqno = 13,
    Sack = 14,
}

impl Command {
    pub fn from_u16(c: u16) -> Option<Command> {
        use Command::*;
        Some(match c {
            1 => Connect,
            2 => Cack,
            3 => Query,
            4 => Qack,
            5 => Response,
            6 => Rack,
            7 => Disconnect,
            8 => Dack,
            9 => Fragment,
            10 => Fack,
            11 => Ping,
            12 => Pack,
            13 => Seqno,
            14 => Sack,
            _ => return None,
        })
    }

    fn carries_data(self) -> bool {
        matches!(self, Command::Query | Command::Response | Command::Fragment)
    }
}

/// A decoded packet; `data` borrows from the datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<'a> {
    pub subport: u32,
    pub seqno: u32,
    pub command: Command,
    /// 1-based fragment number (data packets and FACK), else 0.
    pub fnum: u32,
    pub nfrags: u32,
    /// Total message length (data packets).
    pub tlen: u32,
    /// Fragment bytes, or the service name for CONNECT.
    pub data: &'a [u8],
}

fn header(out: &mut Vec<u8>, subport: u32, seqno: u32, cmd: Command, fnum: u8, nfrags: u8) {
    out.extend_from_slice(&subport.to_be_bytes());
    out.extend_from_slice(&seqno.to_be_bytes());
    out.extend_from_slice(&(cmd as u16).to_be_bytes());
    out.push(fnum);
    out.push(nfrags);
}

/// A header-only control packet (CACK, QACK, RACK, PING, ...).
pub fn control(subport: u32, seqno: u32, cmd: Command) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN);
    header(&mut v, subport, seqno, cmd, 0, 0);
    v
}

pub fn connect(subport: u32, seqno: u32, service: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN + service.len() + 1);
    header(&mut v, subport, seqno, Command::Connect, 0, 0);
    v.extend_from_slice(service.as_bytes());
    v.push(0);
    v
}

/// Whether a message of `len` bytes needs the extended form.
pub fn is_extended(len: usize) -> bool {
    len > u16::MAX as usize
}

pub fn fragment_count(len: usize) -> u32 {
    len.div_ceil(FRAGMENT_SIZE).max(1) as u32
}

/// Acknowledge fragment `fnum` of `nfrags`.
pub fn fack(subport: u32, seqno: u32, fnum: u32, nfrags: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN + 8);
    if nfrags > 255 || fnum > 255 {
        header(&mut v, subport, seqno, Command::Fack, 0, 0);
        v.extend_from_slice(&fnum.to_be_bytes());
        v.extend_from_slice(&nfrags.to_be_bytes());
    } else {
        header(&mut v, subport, seqno, Command::Fack, fnum as u8, nfrags as u8);
    }
    v
}

/// Split `msg` into its packets: FRAGMENT 1..n-1, then `last` (QUERY or RESPONSE) with fnum = n.
pub fn split_message(subport: u32, seqno: u32, last: Command, msg: &[u8]) -> Vec<Vec<u8>> {
    let n = fragment_count(msg.len());
    let extended = is_extended(msg.len());
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let chunk = &msg[(i as usize * FRAGMENT_SIZE).min(msg.len())..((i as usize + 1) * FRAGMENT_SIZE).min(msg.len())];
        let cmd = if i + 1 == n { last } else { Command::Fragment };
        let mut v = Vec::with_capacity(HEADER_LEN + 14 + chunk.len());
        if extended {
            header(&mut v, subport, seqno, cmd, 0, 0);
            v.extend_from_slice(&(i + 1).to_be_bytes());
            v.extend_from_slice(&n.to_be_bytes());
            v.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        } else {
            header(&mut v, subport, seqno, cmd, (i + 1) as u8, n as u8);
            v.extend_from_slice(&(msg.len() as u16).to_be_bytes());
        }
        v.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
        v.extend_from_slice(chunk);
        out.push(v);
    }
    out
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Decode and validate a datagram. Anything inconsistent is an Err (and is dropped).
pub fn decode(d: &[u8]) -> Result<Packet<'_>, &'static str> {
    if d.len() < HEADER_LEN {
        return Err("short datagram");
    }
    let command = Command::from_u16(be16(&d[8..10])).ok_or("unknown command")?;
    let mut p = Packet {
        subport: be32(&d[0..4]),
        seqno: be32(&d[4..8]),
        command,
        fnum: d[10] as u32,
        nfrags: d[11] as u32,
        tlen: 0,
        data: &[],
    };
    let body = &d[HEADER_LEN..];
    match command {
        Command::Connect => {
            let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
            p.data = &body[..end];
        }
        Command::Fack if p.nfrags == 0 => {
            if body.len() < 8 {
                return Err("short extended FACK");
            }
            p.fnum = be32(&body[0..4]);
            p.nfrags = be32(&body[4..8]);
        }
        c if c.carries_data() => {
            let rest = if p.nfrags == 0 {
                if body.len() < 14 {
                    return Err("short extended data header");
                }
                p.fnum = be32(&body[0..4]);
                p.nfrags = be32(&body[4..8]);
                p.tlen = be32(&body[8..12]);
                &body[12..]
            } else {
                if body.len() < 4 {
                    return Err("short data header");
                }
                p.tlen = be16(&body[0..2]) as u32;
                &body[2..]
            };
            let flen = be16(&rest[0..2]) as usize;
            let data = &rest[2..];
            if flen > FRAGMENT_SIZE || flen != data.len() {
                return Err("fragment length does not match datagram");
            }
            if p.nfrags == 0 || p.nfrags > MAX_FRAGMENTS || p.fnum == 0 || p.fnum > p.nfrags {
                return Err("bad fragment numbers");
            }
            if p.tlen as usize > MAX_MESSAGE || fragment_count(p.tlen as usize) != p.nfrags {
                return Err("total length does not match fragment count");
            }
            // Every fragment but the last is full; the last holds the remainder.
            let expect = if p.fnum < p.nfrags {
                FRAGMENT_SIZE
            } else {
                p.tlen as usize - (p.nfrags as usize - 1) * FRAGMENT_SIZE
            };
            if flen != expect {
                return Err("fragment has the wrong size");
            }
            if c == Command::Fragment && p.fnum == p.nfrags {
                return Err("the last piece must be a QUERY or RESPONSE");
            }
            p.data = data;
        }
        _ => {}
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_and_extended_roundtrip() {
        for len in [0usize, 1, 1024, 1025, 65535, 65536, 300_000] {
            let msg: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let pkts = split_message(7, 9, Command::Query, &msg);
            assert_eq!(pkts.len() as u32, fragment_count(len));
            let mut back = Vec::new();
            for (i, raw) in pkts.iter().enumerate() {
                let p = decode(raw).unwrap();
                assert_eq!((p.subport, p.seqno, p.fnum as usize), (7, 9, i + 1));
                assert_eq!(p.command, if i + 1 == pkts.len() { Command::Query } else { Command::Fragment });
                back.extend_from_slice(p.data);
            }
            assert_eq!(back, msg);
        }
    }

    #[test]
    fn classic_header_layout() {
        let pkts = split_message(0x0102_0304, 2, Command::Query, b"SQL:show tables\n");
        assert_eq!(&pkts[0][..12], &[1, 2, 3, 4, 0, 0, 0, 2, 0, 3, 1, 1]);
        assert_eq!(&pkts[0][12..16], &[0, 16, 0, 16]);
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode(&[0; 5]).is_err());
        let mut p = split_message(1, 2, Command::Query, b"abc").remove(0);
        p[15] = 200; // flen beyond the datagram
        assert!(decode(&p).is_err());
    }
}
