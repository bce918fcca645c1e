"""The encrypted DNS announcements of RFC 9463 (homework/dnr.py), read back by an
independent decoder of the RFC's layouts; the DHCPv4 server adds option 162 when a client
asks for it, stateless DHCPv6 option 144 likewise, and every RA carries option 144."""
from __future__ import annotations

import ipaddress
import struct

from homework import dnr
from homework.config import Config

ENDPOINTS = dnr.Endpoints("homework.home.arpa", dot=True, doh=True)
ADN = b"\x08homework\x04home\x04arpa\x00"


def params(raw: bytes) -> dict[int, bytes]:
    out, i = {}, 0
    while i < len(raw):
        key, length = struct.unpack_from("!HH", raw, i)
        out[key] = raw[i + 4:i + 4 + length]
        i += 4 + length
    assert i == len(raw)
    return out


def test_dhcpv4_option_162_lists_dot_and_doh_at_the_devices_gateway():
    [(code, value)] = ENDPOINTS.v4_option("10.2.0.5")
    assert code == 162
    instances, i = [], 0
    while i < len(value):
        (length,) = struct.unpack_from("!H", value, i)
        data = value[i + 2:i + 2 + length]
        priority, adn_len = struct.unpack_from("!HB", data)
        adn = data[3:3 + adn_len]
        addr_len = data[3 + adn_len]
        addr = data[4 + adn_len:4 + adn_len + addr_len]
        instances.append((priority, adn, ipaddress.IPv4Address(addr), params(data[4 + adn_len + addr_len:])))
        i += 2 + length
    assert [(p, a, str(ip)) for p, a, ip, _ in instances] == [(1, ADN, "10.2.0.5"), (2, ADN, "10.2.0.5")]
    assert instances[0][3] == {1: b"\x03dot", 3: struct.pack("!H", 853)}
    assert instances[1][3] == {1: b"\x02h2", 3: struct.pack("!H", 443), 7: b"/dns-query{?dns}"}


def test_dhcpv6_and_ra_options_144():
    router = ipaddress.IPv6Address("2001:db8:100:1::1")
    raw, i, seen = ENDPOINTS.v6_options(router), 0, []
    while i < len(raw):
        code, length = struct.unpack_from("!HH", raw, i)
        body = raw[i + 4:i + 4 + length]
        priority, adn_len = struct.unpack_from("!HH", body)
        (addr_len,) = struct.unpack_from("!H", body, 4 + adn_len)
        seen.append((code, priority, body[4:4 + adn_len], ipaddress.IPv6Address(body[6 + adn_len:6 + adn_len + 16]),
                     params(body[6 + adn_len + addr_len:])))
        i += 4 + length
    assert [s[:4] for s in seen] == [(144, 1, ADN, router), (144, 2, ADN, router)]
    ra, i, seen = ENDPOINTS.ra_options(router, 600), 0, []
    while i < len(ra):
        kind, units = ra[i], ra[i + 1]
        opt = ra[i:i + 8 * units]
        assert kind == 144 and len(opt) == 8 * units
        priority, lifetime, adn_len = struct.unpack_from("!HIH", opt, 2)
        (addr_len,) = struct.unpack_from("!H", opt, 10 + adn_len)
        at = 12 + adn_len + addr_len
        (plen,) = struct.unpack_from("!H", opt, at)
        seen.append((priority, lifetime, opt[10:10 + adn_len], params(opt[at + 2:at + 2 + plen])))
        i += 8 * units
    assert [s[:3] for s in seen] == [(1, 600, ADN), (2, 600, ADN)] and seen[1][3][7] == b"/dns-query{?dns}"


def test_what_the_config_serves_is_what_is_announced():
    assert dnr.Endpoints.of(Config()) == ENDPOINTS
    assert dnr.Endpoints.of(Config(dns_doh_socket="")) == dnr.Endpoints("homework.home.arpa", True, False)
    assert dnr.Endpoints.of(Config(dns_doh_socket="", dns_dot_listen="")) is None


# the same bytes dhcpd/src/dhcp_tests.rs expects of homework-dhcpd's option 162
DNR_162 = ("002a00011408686f6d65776f726b04686f6d65046172706100040a0200050001000403646f74000300020355003d0002140868"
           "6f6d65776f726b04686f6d65046172706100040a020005000100030268320003000201bb000700102f646e732d71756572797b"
           "3f646e737d")


def test_the_controller_and_homework_dhcpd_build_the_same_option_162():
    assert ENDPOINTS.v4_option("10.2.0.5")[0][1].hex() == DNR_162
    args = ENDPOINTS.dhcpd_args()
    assert args[0::2] == ["--dnr", "--dnr"] and args[1].startswith("1:08686f6d65776f726b") and args[3].startswith("2:")


def test_the_dhcp_server_answers_option_162_to_a_client_that_asks(core):
    from test_dhcp_server import send
    from dhcpframes import dhcp_frame
    from homework.components.dhcp import message as m
    [(asked, *_)] = send(core, dhcp_frame("02:00:00:00:00:0a", m.DISCOVER, options=[(55, bytes([1, 3, 6, 162]))]))
    assert asked.options[162] == ENDPOINTS.v4_option(asked.server_id)[0][1]
    [(plain, *_)] = send(core, dhcp_frame("02:00:00:00:00:0b", m.DISCOVER, options=[(55, bytes([1, 3, 6]))]), port=2)
    assert 162 not in plain.options, "only for a client that asks"
