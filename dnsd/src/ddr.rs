//! The router's encrypted DNS, announced to the device that asks (RFC 9462, Discovery of
//! Designated Resolvers): `_dns.resolver.arpa SVCB` lists DNS over TLS (port 853) and DNS
//! over HTTPS (port 443, /dns-query), each named by the router's name with the device's own
//! gateway addresses as hints; that name's A and AAAA records are the device's gateway too.
//! Every device has its own gateway (its /30's .1, its /64's ::1), so the answers are the
//! asking device's, built here, never cached or forwarded.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::wire::{self, Question};

pub const DDR_NAME: &str = "_dns.resolver.arpa";
pub const TYPE_SVCB: u16 = 64;
const TTL: u32 = 300;
const KEY_ALPN: u16 = 1;
const KEY_PORT: u16 = 3;
const KEY_IPV4HINT: u16 = 4;
const KEY_IPV6HINT: u16 = 6;
const KEY_DOHPATH: u16 = 7;
pub const DOT_PORT: u16 = 853;
pub const DOH_PORT: u16 = 443;
pub const DOH_PATH: &str = "/dns-query{?dns}";

/// What the router serves, and under which name.
#[derive(Clone, Debug)]
pub struct Endpoints {
    /// The router's name ("homework.home.arpa"), lower case, no trailing dot.
    pub name: String,
    pub dot: bool,
    pub doh: bool,
}

/// The device's gateways: where its encrypted DNS is.
pub struct Gateways {
    pub v4: Ipv4Addr,
    pub v6: Option<Ipv6Addr>,
}

impl Endpoints {
    /// A local answer to `q` if it is a DDR question or the router's name; None otherwise.
    pub fn answer(&self, buf: &[u8], q: &Question, gw: &Gateways) -> Option<Vec<u8>> {
        if q.name == DDR_NAME {
            let records = if q.qtype == TYPE_SVCB || q.qtype == wire::TYPE_ANY { self.svcb_records(gw) } else { Vec::new() };
            return Some(answer(buf, q, &records));
        }
        if q.name == self.name {
            let mut records = Vec::new();
            if matches!(q.qtype, wire::TYPE_A | wire::TYPE_ANY) {
                records.push((wire::TYPE_A, gw.v4.octets().to_vec()));
            }
            if let (Some(v6), wire::TYPE_AAAA | wire::TYPE_ANY) = (gw.v6, q.qtype) {
                records.push((wire::TYPE_AAAA, v6.octets().to_vec()));
            }
            return Some(answer(buf, q, &records));
        }
        None
    }

    /// SvcParams of one endpoint, keys in ascending order (RFC 9460 2.2).
    fn params(&self, alpn: &str, port: u16, dohpath: Option<&str>, gw: &Gateways) -> Vec<u8> {
        let mut out = Vec::new();
        let mut param = |key: u16, value: &[u8]| {
            out.extend_from_slice(&key.to_be_bytes());
            out.extend_from_slice(&(value.len() as u16).to_be_bytes());
            out.extend_from_slice(value);
        };
        let mut alpn_value = vec![alpn.len() as u8];
        alpn_value.extend_from_slice(alpn.as_bytes());
        param(KEY_ALPN, &alpn_value);
        param(KEY_PORT, &port.to_be_bytes());
        param(KEY_IPV4HINT, &gw.v4.octets());
        if let Some(v6) = gw.v6 {
            param(KEY_IPV6HINT, &v6.octets());
        }
        if let Some(path) = dohpath {
            param(KEY_DOHPATH, path.as_bytes());
        }
        out
    }

    /// SVCB RDATA: priority, target name, params. DoT first (priority 1), then DoH.
    fn svcb_records(&self, gw: &Gateways) -> Vec<(u16, Vec<u8>)> {
        let mut out = Vec::new();
        let mut priority = 1u16;
        for (on, alpn, port, path) in [(self.dot, "dot", DOT_PORT, None), (self.doh, "h2", DOH_PORT, Some(DOH_PATH))] {
            if !on {
                continue;
            }
            let mut rdata = priority.to_be_bytes().to_vec();
            wire::push_name(&mut rdata, &self.name);
            rdata.extend_from_slice(&self.params(alpn, port, path, gw));
            out.push((TYPE_SVCB, rdata));
            priority += 1;
        }
        out
    }
}

/// A NOERROR answer to `q` with these records (name compressed to the question's).
fn answer(buf: &[u8], q: &Question, records: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut out = wire::reply(buf, q, 0);
    out[7] = records.len() as u8; // ANCOUNT (a handful at most)
    out[6] = 0;
    out[2] |= 0x04; // AA: the router is the authority for its own endpoints
    for (rtype, rdata) in records {
        out.extend_from_slice(&[0xC0, 0x0C]);
        out.extend_from_slice(&rtype.to_be_bytes());
        out.extend_from_slice(&1u16.to_be_bytes());
        out.extend_from_slice(&TTL.to_be_bytes());
        out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(rdata);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints() -> Endpoints {
        Endpoints { name: "homework.home.arpa".into(), dot: true, doh: true }
    }

    fn gw() -> Gateways {
        Gateways { v4: Ipv4Addr::new(10, 2, 0, 5), v6: Some("2001:db8:100:1::1".parse().unwrap()) }
    }

    #[test]
    fn ddr_lists_dot_then_doh_with_the_devices_gateways() {
        let q_buf = wire::build_query(9, DDR_NAME, TYPE_SVCB);
        let q = wire::parse_query(&q_buf).unwrap();
        let a = endpoints().answer(&q_buf, &q, &gw()).unwrap();
        assert_eq!((u16::from_be_bytes([a[0], a[1]]), a[3] & 0xF, a[7]), (9, 0, 2));
        // The first record: priority 1, target homework.home.arpa, alpn dot, port 853, hints.
        let rdata_at = q.end + 12;
        assert_eq!(&a[rdata_at..rdata_at + 2], &[0, 1]);
        let target = b"\x08homework\x04home\x04arpa\x00";
        assert_eq!(&a[rdata_at + 2..rdata_at + 2 + target.len()], target);
        let params = &a[rdata_at + 2 + target.len()..];
        assert_eq!(&params[..9], &[0, 1, 0, 4, 3, b'd', b'o', b't', 0]);
        assert_eq!(&params[8..14], &[0, 3, 0, 2, 0x03, 0x55]);
        assert_eq!(&params[14..22], &[0, 4, 0, 4, 10, 2, 0, 5]);
        let text = String::from_utf8_lossy(&a);
        assert!(text.contains("/dns-query{?dns}") && text.contains("h2"));
        // Another type of the same name: NODATA.
        let q_buf = wire::build_query(10, DDR_NAME, wire::TYPE_A);
        let q = wire::parse_query(&q_buf).unwrap();
        let a = endpoints().answer(&q_buf, &q, &gw()).unwrap();
        assert_eq!((a[3] & 0xF, a[7]), (0, 0));
    }

    #[test]
    fn the_routers_name_is_the_devices_gateway() {
        let e = endpoints();
        for (qtype, want) in [(wire::TYPE_A, "10.2.0.5"), (wire::TYPE_AAAA, "2001:db8:100:1::1")] {
            let q_buf = wire::build_query(3, "homework.home.arpa", qtype);
            let q = wire::parse_query(&q_buf).unwrap();
            let ans = wire::parse_answer(&e.answer(&q_buf, &q, &gw()).unwrap()).unwrap();
            assert_eq!(ans.addrs, vec![want.parse::<std::net::IpAddr>().unwrap()]);
        }
        let q_buf = wire::build_query(3, "other.home.arpa", wire::TYPE_A);
        assert!(e.answer(&q_buf, &wire::parse_query(&q_buf).unwrap(), &gw()).is_none());
        let only_dot = Endpoints { doh: false, ..e };
        let q_buf = wire::build_query(4, DDR_NAME, TYPE_SVCB);
        let a = only_dot.answer(&q_buf, &wire::parse_query(&q_buf).unwrap(), &gw()).unwrap();
        assert_eq!(a[7], 1, "only what the router serves is announced");
    }
}
