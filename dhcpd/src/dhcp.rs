//! Per-frame logic, pure: parse a marked request as strictly as the controller does
//! (`packets.parse_*`, `message.parse`), decide whether the lease table settles it, and
//! build the reply byte for byte as `DhcpServer._reply`/`_packet_out` + `reply_frame` would.

use std::collections::HashMap;

pub const MARK: [u8; 4] = [0x0e, 0x68, 0x77, 0x00];
const ETH_IP: u16 = 0x0800;
const PROTO_UDP: u8 = 17;
const SERVER_PORT: u16 = 67;
const CLIENT_PORT: u16 = 68;
const FIXED: usize = 236;
const MAGIC: [u8; 4] = [0x63, 0x82, 0x53, 0x63];
const BROADCAST_FLAG: u16 = 0x8000;
pub const DISCOVER: u8 = 1;
pub const OFFER: u8 = 2;
pub const REQUEST: u8 = 3;
pub const ACK: u8 = 5;
const OPT_PAD: u8 = 0;
const OPT_END: u8 = 255;
const OPT_HOSTNAME: u8 = 12;
const OPT_REQUESTED_IP: u8 = 50;
const OPT_MESSAGE_TYPE: u8 = 53;
const OPT_SERVER_ID: u8 = 54;
const OPT_V4_DNR: u8 = 162;     // RFC 9463: the router's encrypted DNS, asked for in 55
const OPT_CAPTIVE_PORTAL: u8 = 114;
// What a new device's DISCOVER says about it (the controller's fingerprint.py): its
// parameter request list, vendor class, maximum message size and client identifier.
const OPT_MAX_SIZE: u8 = 57;
const OPT_PRL: u8 = 55;
const OPT_VENDOR: u8 = 60;
const OPT_CLIENT_ID: u8 = 61;
const ORDER_MAX: usize = 64;
const HOSTNAME_MAX: usize = 63;

pub type Mac = [u8; 6];

/// One lease the controller already granted, or an address it offered (`set`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub port: u16,
    pub ip: [u8; 4],
    pub router: [u8; 4],
    pub broadcast: [u8; 4],
    pub lease_time: u32,
    pub hostname: String,
    /// The relay agent (giaddr) a relayed lease was granted through: its requests must come
    /// through it, and the reply goes back to it. None: a device on our own port.
    pub relay: Option<[u8; 4]>,
    /// An offer the device has not taken yet: the controller made it and owns the lease
    /// it becomes, so an ACK on it is told at once (main.rs), not in the next batch.
    pub offer: bool,
    /// Made here for a never-seen device from a block the controller reserved (newdev.rs),
    /// not yet confirmed by the controller's `set`: every note on it names the block.
    pub reserved: bool,
}

pub type Table = HashMap<Mac, Entry>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Offered,
    Acked,
}

/// What the controller is told after a reply went out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub kind: Kind,
    pub mac: Mac,
    pub port: u16,
    pub hostname: String,
    pub xid: u32,
    /// The device address of a reserved block this answer gave (Entry::reserved), which
    /// the controller claims for the device.
    pub reserved: Option<[u8; 4]>,
    /// A new device's fingerprint (`Request::fingerprint`), on the offer of a reserved
    /// block only: the controller never saw that DISCOVER.
    pub fp: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// The controller would raise PacketError: it counts and logs it.
    Malformed,
    /// Well formed, but a decision only the controller may take.
    NotOurs,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    Answer(Vec<u8>, Note),
    Punt(Why),
    /// Not a marked frame (the filter should not have passed it): nobody can answer it.
    Drop,
}

/// The ingress port a marked eth_dst carries; None for port 0 or no marker.
pub fn port_of(frame: &[u8]) -> Option<u16> {
    if frame.len() < 6 || frame[..4] != MARK {
        return None;
    }
    match u16::from_be_bytes([frame[4], frame[5]]) {
        0 => None,
        p => Some(p),
    }
}

/// An option value as RFC 3396 concatenates it; only the first bytes are kept, which is
/// all any caller reads (4 for addresses, 63 for the hostname), but the full length counts.
#[derive(Clone, Copy)]
struct Opt {
    present: bool,
    len: usize,
    buf: [u8; HOSTNAME_MAX + 1],
}

impl Opt {
    const NONE: Opt = Opt { present: false, len: 0, buf: [0; HOSTNAME_MAX + 1] };

    fn push(&mut self, value: &[u8]) {
        self.present = true;
        let room = self.buf.len().saturating_sub(self.len);
        let n = room.min(value.len());
        if n > 0 {
            self.buf[self.len..self.len + n].copy_from_slice(&value[..n]);
        }
        self.len += value.len();
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len.min(self.buf.len())]
    }

    /// A 4-byte address option: Ok(None) if absent, Err if present with another length
    /// (`DhcpMessage._ip_option` raises PacketError).
    fn ip(&self) -> Result<Option<[u8; 4]>, ()> {
        if !self.present {
            return Ok(None);
        }
        if self.len != 4 {
            return Err(());
        }
        Ok(Some([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]))
    }
}

/// The fields of a request the fast path reads.
pub struct Request {
    src: Mac,
    op: u8,
    xid: u32,
    flags: u16,
    ciaddr: [u8; 4],
    giaddr: [u8; 4],
    chaddr: Mac,
    msg_type: u8,
    requested: Opt,
    server_id: Opt,
    hostname: Opt,
    prl: Opt,
    vendor: Opt,
    max_size: Opt,
    client_id: Opt,
    /// The codes of the options sent, in order (53 left out), the first ORDER_MAX.
    order: [u8; ORDER_MAX],
    norder: usize,
    /// Option 162 is in its parameter request list (55): it wants the router's encrypted DNS.
    wants_dnr: bool,
}

/// The router's encrypted DNS endpoints for option 162 (RFC 9463), from the controller
/// (homework/dnr.py; `--dnr PRIORITY:ADN:PARAMS`, hex): each instance gets the device's
/// gateway as its address. Empty: none announced.
pub static DNR: std::sync::OnceLock<Vec<DnrInstance>> = std::sync::OnceLock::new();

/// (service priority, the name in wire format, SvcParams) of one endpoint.
pub type DnrInstance = (u16, Vec<u8>, Vec<u8>);

impl Request {
    /// A new device asking for any address, for itself: a DISCOVER, not relayed, from its
    /// own MAC, naming no address and no server (each of those is the controller's to judge).
    pub fn plain_discover(&self) -> bool {
        self.op == 1
            && self.msg_type == DISCOVER
            && self.giaddr == [0; 4]
            && self.src == self.chaddr
            && !self.requested.present
            && !self.server_id.present
    }

    pub fn chaddr(&self) -> Mac {
        self.chaddr
    }

    /// `fingerprint.dhcp4` of the request as JSON text: the fields it has.
    pub fn fingerprint(&self) -> String {
        fn list(codes: &[u8]) -> String {
            codes.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
        }
        let mut fields: Vec<(&str, String)> = Vec::with_capacity(6);
        if self.prl.len > 0 {
            fields.push(("prl", list(self.prl.bytes())));
        }
        if self.norder > 0 {
            fields.push(("options", list(&self.order[..self.norder])));
        }
        let vendor: String = self.vendor.bytes().iter().filter(|&&b| (0x20..0x7F).contains(&b)).map(|&b| b as char).collect();
        if !vendor.trim().is_empty() {
            fields.push(("vendor", vendor.trim().to_string()));
        }
        if self.max_size.len == 2 {
            fields.push(("max_size", u16::from_be_bytes([self.max_size.buf[0], self.max_size.buf[1]]).to_string()));
        }
        if self.client_id.len > 0 {
            fields.push(("client_id", self.client_id.buf[0].to_string()));
        }
        let hostname = self.hostname();
        if !hostname.is_empty() {
            fields.push(("hostname", hostname));
        }
        let body: Vec<String> =
            fields.iter().map(|(k, v)| format!("\"{}\":{}", k, crate::control::json_string(v))).collect();
        format!("{{{}}}", body.join(","))
    }

    /// `DhcpMessage.hostname`: the first 63 bytes, printable ASCII without space only.
    pub fn hostname(&self) -> String {
        self.hostname.bytes().iter().take(HOSTNAME_MAX).filter(|&&b| b > 0x20 && b < 0x7F).map(|&b| b as char).collect()
    }
}

fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

fn ip4(d: &[u8], at: usize) -> [u8; 4] {
    [d[at], d[at + 1], d[at + 2], d[at + 3]]
}

/// Ethernet / IPv4 / UDP down to the DHCP payload, with `packets.py`'s bounds. Err(Why):
/// `Malformed` where Python raises, `NotOurs` where `packet_in` returns None.
fn udp_payload(frame: &[u8]) -> Result<&[u8], Why> {
    if frame.len() < 14 {
        return Err(Why::Malformed);
    }
    // 802.1Q frames never pass the filter; the controller parses them if one does.
    if be16(frame, 12) != ETH_IP {
        return Err(Why::NotOurs);
    }
    let ip = &frame[14..];
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return Err(Why::Malformed);
    }
    let ihl = (ip[0] & 0x0F) as usize * 4;
    let total = be16(ip, 2) as usize;
    if ihl < 20 || ihl > ip.len() || total < ihl {
        return Err(Why::Malformed);
    }
    if ip[9] != PROTO_UDP {
        return Err(Why::NotOurs);
    }
    let udp = &ip[ihl..total.min(ip.len())];
    if udp.len() < 8 {
        return Err(Why::Malformed);
    }
    let length = be16(udp, 4) as usize;
    if length < 8 {
        return Err(Why::Malformed);
    }
    if be16(udp, 2) != SERVER_PORT {
        return Err(Why::NotOurs);
    }
    Ok(if length <= udp.len() { &udp[8..length] } else { &udp[8..] })
}

/// `message.parse` on the DHCP payload, keeping options 12, 50, 53, 54.
pub fn parse(frame: &[u8]) -> Result<Request, Why> {
    let p = udp_payload(frame)?;
    if p.len() < FIXED + 4 {
        return Err(Why::Malformed);
    }
    let (op, htype, hlen) = (p[0], p[1], p[2]);
    if !(op == 1 || op == 2) || htype != 1 || hlen != 6 || p[FIXED..FIXED + 4] != MAGIC {
        return Err(Why::Malformed);
    }
    let mut msg_type = Opt::NONE;
    let mut req = Request {
        src: frame[6..12].try_into().unwrap(),
        op,
        xid: u32::from_be_bytes(ip4(p, 4)),
        flags: be16(p, 10),
        ciaddr: ip4(p, 12),
        giaddr: ip4(p, 24),
        chaddr: p[28..34].try_into().unwrap(),
        msg_type: 0,
        requested: Opt::NONE,
        server_id: Opt::NONE,
        hostname: Opt::NONE,
        prl: Opt::NONE,
        vendor: Opt::NONE,
        max_size: Opt::NONE,
        client_id: Opt::NONE,
        order: [0; ORDER_MAX],
        norder: 0,
        wants_dnr: false,
    };
    let end = p.len();
    let mut at = FIXED + 4;
    while at < end {
        let code = p[at];
        if code == OPT_END {
            break;
        }
        if code == OPT_PAD {
            at += 1;
            continue;
        }
        if at + 1 >= end {
            return Err(Why::Malformed);
        }
        let len = p[at + 1] as usize;
        if at + 2 + len > end {
            return Err(Why::Malformed);
        }
        let value = &p[at + 2..at + 2 + len];
        match code {
            OPT_MESSAGE_TYPE => msg_type.push(value),
            OPT_REQUESTED_IP => req.requested.push(value),
            OPT_SERVER_ID => req.server_id.push(value),
            OPT_HOSTNAME => req.hostname.push(value),
            OPT_PRL => {
                req.prl.push(value);
                req.wants_dnr |= value.contains(&OPT_V4_DNR);
            }
            OPT_VENDOR => req.vendor.push(value),
            OPT_MAX_SIZE => req.max_size.push(value),
            OPT_CLIENT_ID => req.client_id.push(value),
            _ => {}
        }
        if code != OPT_MESSAGE_TYPE && req.norder < ORDER_MAX {
            req.order[req.norder] = code;
            req.norder += 1;
        }
        at += 2 + len;
    }
    // `msg_type` is None unless option 53 is exactly one byte; 1..8 are the known types.
    if msg_type.len != 1 || !(1..=8).contains(&msg_type.buf[0]) {
        return Err(Why::Malformed);
    }
    req.msg_type = msg_type.buf[0];
    Ok(req)
}

/// The port a frame is marked with and its request, or what becomes of a frame without.
pub fn read(frame: &[u8]) -> Result<(u16, Request), Action> {
    let Some(port) = port_of(frame) else {
        return Err(Action::Drop);
    };
    parse(frame).map(|req| (port, req)).map_err(Action::Punt)
}

/// `decide_request` on a whole frame (main.rs reads first: a new device's offer may go
/// into the table in between).
#[cfg(test)]
pub fn decide(frame: &[u8], table: &Table) -> Action {
    match read(frame) {
        Ok((port, req)) => decide_request(&req, port, table),
        Err(action) => action,
    }
}

/// `decide` on a request already parsed from a frame marked with `port`.
pub fn decide_request(req: &Request, port: u16, table: &Table) -> Action {
    let punt = Action::Punt(Why::NotOurs);
    if req.op != 1 {
        return punt;
    }
    let Some(entry) = table.get(&req.chaddr) else {
        return punt;
    };
    if entry.port != port {
        return punt;
    }
    // A device speaks for itself (frame source = chaddr), a relayed one only through the
    // relay its lease came by; anything else (spoofing, a new relay) is the controller's
    // to judge, with its alerts and counters.
    let sender_ok = match entry.relay {
        None => req.giaddr == [0; 4] && req.src == req.chaddr,
        Some(relay) => req.giaddr == relay,
    };
    if !sender_ok {
        return punt;
    }
    let (Ok(requested), Ok(server_id)) = (req.requested.ip(), req.server_id.ip()) else {
        return Action::Punt(Why::Malformed);
    };
    let kind = match req.msg_type {
        DISCOVER if requested.is_none_or(|ip| ip == entry.ip) => Kind::Offered,
        REQUEST => {
            let ok = match (server_id, requested) {
                (Some(sid), req_ip) => sid == entry.router && req_ip == Some(entry.ip),
                (None, Some(req_ip)) => req_ip == entry.ip,
                (None, None) => req.ciaddr != [0; 4] && req.ciaddr == entry.ip,
            };
            if !ok {
                return punt;
            }
            Kind::Acked
        }
        _ => return punt,
    };
    let hostname = req.hostname();
    let reply = build_reply(req, entry, kind, port, &hostname);
    let reserved = entry.reserved.then_some(entry.ip);
    // Only a new device's offer carries its fingerprint: every other answer is to a device
    // the controller has heard already (and the renewals are the hot path).
    let fp = (reserved.is_some() && kind == Kind::Offered).then(|| req.fingerprint());
    Action::Answer(reply, Note { kind, mac: req.chaddr, port, hostname, xid: req.xid, reserved, fp })
}

/// The BOOTREPLY payload (`message.build` with `_reply`'s options).
fn build_payload(req: &Request, entry: &Entry, kind: Kind, hostname: &str, out: &mut Vec<u8>) {
    let start = out.len();
    let (msg_type, ciaddr) = match kind {
        Kind::Offered => (OFFER, [0; 4]),
        Kind::Acked => (ACK, req.ciaddr),
    };
    out.extend_from_slice(&[2, 1, 6, 0]);
    out.extend_from_slice(&req.xid.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&req.flags.to_be_bytes());
    out.extend_from_slice(&ciaddr);
    out.extend_from_slice(&entry.ip);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&req.giaddr);
    out.extend_from_slice(&req.chaddr);
    out.resize(start + FIXED, 0); // chaddr padding, sname, file
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[OPT_MESSAGE_TYPE, 1, msg_type]);
    let lease = entry.lease_time;
    let t1 = lease / 2;
    let t2 = (lease as u64 * 7 / 8) as u32;
    let opts: [(u8, &[u8]); 8] = [
        (OPT_SERVER_ID, &entry.router),
        (1, &[255, 255, 255, 252]),
        (3, &entry.router),
        (6, &entry.router),
        (28, &entry.broadcast),
        (51, &lease.to_be_bytes()),
        (58, &t1.to_be_bytes()),
        (59, &t2.to_be_bytes()),
    ];
    for (code, value) in opts {
        out.push(code);
        out.push(value.len() as u8);
        out.extend_from_slice(value);
    }
    // RFC 8910: the captive portal API's URL, at the device's own gateway (the controller's
    // cutoff.captive_api_uri: the same bytes)
    let [a, b, c, d] = entry.router;
    let uri = format!("https://{a}.{b}.{c}.{d}/ws.v1/captive-portal");
    out.push(OPT_CAPTIVE_PORTAL);
    out.push(uri.len() as u8);
    out.extend_from_slice(uri.as_bytes());
    let name = if hostname.is_empty() { entry.hostname.as_bytes() } else { hostname.as_bytes() };
    // `build` splits long values into 255-byte options (an entry's hostname may be long).
    for chunk in name.chunks(255) {
        out.push(OPT_HOSTNAME);
        out.push(chunk.len() as u8);
        out.extend_from_slice(chunk);
    }
    if req.wants_dnr {
        let dnr = dnr_value(entry.router);
        for chunk in dnr.chunks(255) {
            out.push(OPT_V4_DNR);
            out.push(chunk.len() as u8);
            out.extend_from_slice(chunk);
        }
    }
    out.push(OPT_END);
    if out.len() - start < 300 {
        out.resize(start + 300, 0);
    }
}

/// Option 162's value (RFC 9463 5.1): an instance per endpoint, each with `router` as its
/// address (`dnr.Endpoints.v4_option`, byte for byte).
fn dnr_value(router: [u8; 4]) -> Vec<u8> {
    let mut value = Vec::new();
    for (priority, adn, params) in DNR.get().map(|v| v.as_slice()).unwrap_or(&[]) {
        let length = 2 + 1 + adn.len() + 1 + 4 + params.len();
        value.extend_from_slice(&(length as u16).to_be_bytes());
        value.extend_from_slice(&priority.to_be_bytes());
        value.push(adn.len() as u8);
        value.extend_from_slice(adn);
        value.push(4);
        value.extend_from_slice(&router);
        value.extend_from_slice(params);
    }
    value
}

fn sum16(data: &[u8], mut total: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        total += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        total += (*last as u32) << 8;
    }
    total
}

fn fold(mut total: u32) -> u16 {
    while total >> 16 != 0 {
        total = (total & 0xFFFF) + (total >> 16);
    }
    !(total as u16)
}

/// The whole reply frame: eth_src is the marker of `port` (the switch writes the router's
/// MAC back), IPv4 as `build_ipv4` (id 0, DF, TTL 64), UDP as `build_udp` (checksummed).
pub fn build_reply(req: &Request, entry: &Entry, kind: Kind, port: u16, hostname: &str) -> Vec<u8> {
    // RFC 2131 4.1: a relayed request is answered to the relay agent on the server port.
    let (dst_ip, dst_mac, dst_port) = if req.giaddr != [0; 4] {
        (req.giaddr, [0xFF; 6], SERVER_PORT)
    } else if req.ciaddr != [0; 4] {
        (req.ciaddr, req.chaddr, CLIENT_PORT)
    } else if req.flags & BROADCAST_FLAG != 0 {
        ([255; 4], [0xFF; 6], CLIENT_PORT)
    } else {
        (entry.ip, req.chaddr, CLIENT_PORT)
    };
    let src_ip = entry.router;
    let mut f = Vec::with_capacity(14 + 20 + 8 + 400);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&MARK);
    f.extend_from_slice(&port.to_be_bytes());
    f.extend_from_slice(&ETH_IP.to_be_bytes());
    f.resize(14 + 20 + 8, 0); // headers, filled in below
    build_payload(req, entry, kind, hostname, &mut f);
    let udp_len = (f.len() - 34) as u16;
    let ip_len = udp_len + 20;

    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = PROTO_UDP;
    ip[12..16].copy_from_slice(&src_ip);
    ip[16..20].copy_from_slice(&dst_ip);
    let csum = fold(sum16(&ip, 0));
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    f[14..34].copy_from_slice(&ip);

    let mut udp = [0u8; 8];
    udp[0..2].copy_from_slice(&SERVER_PORT.to_be_bytes());
    udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&src_ip);
    pseudo[4..8].copy_from_slice(&dst_ip);
    pseudo[9] = PROTO_UDP;
    pseudo[10..12].copy_from_slice(&udp_len.to_be_bytes());
    let total = sum16(&f[42..], sum16(&udp, sum16(&pseudo, 0)));
    let csum = match fold(total) {
        0 => 0xFFFF,
        c => c,
    };
    udp[6..8].copy_from_slice(&csum.to_be_bytes());
    f[34..42].copy_from_slice(&udp);
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}
