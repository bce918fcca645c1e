"""Router Solicitations in, Router Advertisements out (RFC 4861, RDNSS of RFC 8106, the
captive portal option of RFC 8910).

Each device hears only its own prefix, sent to its MAC alone: with the on-link flag off
it sends everything, even to a neighbour, through the router, and the switch routes it.
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

from ...flows import PROTO_ICMPV6
from ...packets import PacketError, checksum
from ...ipv6plan import ROUTER_LINK_LOCAL

ETH_IPV6 = 0x86DD
ICMPV6_RS = 133
ICMPV6_RA = 134
ALL_NODES = ipaddress.IPv6Address("ff02::1")
ROUTER_LIFETIME_MAX = 9000      # RFC 4861 §6.2.1: the largest router lifetime
OPT_SOURCE_LL, OPT_PREFIX, OPT_MTU, OPT_RDNSS, OPT_DNSSL, OPT_CAPTIVE_PORTAL = 1, 3, 5, 25, 31, 37
PREFIX_AUTONOMOUS = 0x40        # SLAAC on; the on-link flag (0x80) stays off


@dataclass(frozen=True)
class IPv6Packet:
    src: ipaddress.IPv6Address
    dst: ipaddress.IPv6Address
    next_header: int
    hop_limit: int
    payload: bytes


def parse_ipv6(data: bytes) -> IPv6Packet:
    if len(data) < 40 or data[0] >> 4 != 6:
        raise PacketError("not an IPv6 packet")
    length = struct.unpack_from("!H", data, 4)[0]
    if len(data) < 40 + length:
        raise PacketError("truncated IPv6 packet")
    return IPv6Packet(ipaddress.IPv6Address(data[8:24]), ipaddress.IPv6Address(data[24:40]), data[6], data[7],
                      data[40:40 + length])


def is_router_solicitation(ip: IPv6Packet) -> bool:
    """An RS as RFC 4861 §6.1.1 requires: ICMPv6 type 133 code 0, hop limit 255 (so it
    cannot have been routed from elsewhere), with a valid checksum."""
    p = ip.payload
    return (ip.next_header == PROTO_ICMPV6 and ip.hop_limit == 255 and len(p) >= 8
            and p[0] == ICMPV6_RS and p[1] == 0 and _icmpv6_checksum(ip.src, ip.dst, p) == 0)


def _icmpv6_checksum(src: ipaddress.IPv6Address, dst: ipaddress.IPv6Address, body: bytes) -> int:
    pseudo = src.packed + dst.packed + struct.pack("!IxxxB", len(body), PROTO_ICMPV6)
    return checksum(pseudo + body)


def dns_names(domains: list[str] | tuple) -> bytes:
    """Domain names in DNS wire format (labels, each with its length; a zero at the end)."""
    out = b""
    for domain in domains:
        for label in domain.strip(".").split("."):
            raw = label.encode("idna") if label else b""
            if not 0 < len(raw) < 64:
                raise ValueError(f"bad domain {domain!r}")
            out += bytes([len(raw)]) + raw
        out += b"\0"
    return out


def router_advertisement(router_mac: bytes, device_mac: bytes, prefix: ipaddress.IPv6Network,
                         lifetime: int, dns: ipaddress.IPv6Address | None = None,
                         to: ipaddress.IPv6Address = ALL_NODES, mtu: int = 1500,
                         deprecated: list[ipaddress.IPv6Network] | tuple = (),
                         search: list[str] | tuple = (), captive: str = "", extra: bytes = b"") -> bytes:
    """The Ethernet frame of an RA for one device: its /64 (autonomous, not on-link) valid
    for `lifetime` seconds, from fe80::1, `dns` as its DNS server if given, the prefixes
    it had before a renumbering with lifetime 0, and `captive`, the captive portal API's
    URL, if given. `extra`: more options, whole (the encrypted DNS announcement,
    homework/dnr.py)."""
    lifetime = max(0, int(lifetime))
    options = struct.pack("!BB6s", OPT_SOURCE_LL, 1, router_mac)
    options += struct.pack("!BBHI", OPT_MTU, 1, 0, mtu)
    options += struct.pack("!BBBBIII16s", OPT_PREFIX, 4, 64, PREFIX_AUTONOMOUS, lifetime, lifetime, 0,
                           prefix.network_address.packed)
    for old in deprecated:      # renumbered away: no longer preferred, lifetimes 0
        options += struct.pack("!BBBBIII16s", OPT_PREFIX, 4, 64, PREFIX_AUTONOMOUS, 0, 0, 0,
                               old.network_address.packed)
    if dns is not None:
        options += struct.pack("!BBHI16s", OPT_RDNSS, 3, 0, lifetime, dns.packed)
        if search:        # DNSSL (RFC 8106): the household's own domain(s), padded to 8 octets
            names = dns_names(search)
            names += b"\0" * (-(8 + len(names)) % 8)
            options += struct.pack("!BBHI", OPT_DNSSL, (8 + len(names)) // 8, 0, lifetime) + names
    if captive:          # RFC 8910: the URI, padded with NULs to a multiple of 8 octets
        uri = captive.encode()
        uri += b"\0" * (-(2 + len(uri)) % 8)
        options += struct.pack("!BB", OPT_CAPTIVE_PORTAL, (2 + len(uri)) // 8) + uri
    options += extra
    # "Other configuration" (O flag) when there is a DNS server: DHCPv6-only clients then
    # ask for it by INFORMATION-REQUEST (dhcpv6.py).
    flags = 0x40 if dns is not None else 0
    # The router is the default route for as long as the prefix lives (RAs come when the
    # lease is renewed, not on a timer), at most RFC 4861's 9000 s.
    router_lifetime = min(lifetime, ROUTER_LIFETIME_MAX)
    body = struct.pack("!BBHBBHII", ICMPV6_RA, 0, 0, 64, flags, router_lifetime, 0, 0) + options
    csum = _icmpv6_checksum(ROUTER_LINK_LOCAL, to, body)
    body = body[:2] + struct.pack("!H", csum) + body[4:]
    header = struct.pack("!IHBB16s16s", 6 << 28, len(body), PROTO_ICMPV6, 255, ROUTER_LINK_LOCAL.packed, to.packed)
    return device_mac + router_mac + struct.pack("!H", ETH_IPV6) + header + body
