"""ICMP time exceeded for packets whose TTL runs out in the switch.

Device-to-device traffic is routed inside Open vSwitch (dec_ttl), so the kernel never
sees a TTL-1 packet and cannot answer it; the switch hands such packets to us
(packet-in reason invalid_ttl) and we answer as a router would, from the sender's
gateway address. That is what makes traceroute show the router between two devices."""
from __future__ import annotations

import ipaddress
import struct

from ...packets import build_ethernet, build_ipv4, checksum, ip_bytes

ICMP_TIME_EXCEEDED = 11
ICMPV6_TIME_EXCEEDED = 3
ETH_IP = 0x0800
ETH_IPV6 = 0x86DD
IPV6_MIN_MTU = 1280


def time_exceeded(router_mac: bytes, device_mac: bytes, gateway: str, original_ip: bytes) -> bytes:
    """An Ethernet frame carrying ICMP type 11 code 0 to the sender of `original_ip`
    (the IPv4 packet as received: header + at least 8 bytes are quoted, RFC 792)."""
    ihl = (original_ip[0] & 0x0F) * 4
    quoted = original_ip[:ihl + 8]
    body = struct.pack("!BBHI", ICMP_TIME_EXCEEDED, 0, 0, 0) + quoted
    body = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
    source = original_ip[12:16]
    ip = build_ipv4(ip_bytes(gateway), source, 1, body, ttl=64)
    return build_ethernet(device_mac, router_mac, ETH_IP, ip)


def time_exceeded6(router_mac: bytes, device_mac: bytes, router: ipaddress.IPv6Address, original: bytes) -> bytes:
    """ICMPv6 type 3 code 0 (RFC 4443) from the router's ::1 of the sender's /64, quoting
    as much of the packet as we have and the minimum MTU allows."""
    sender = ipaddress.IPv6Address(original[8:24])
    body = struct.pack("!BBHI", ICMPV6_TIME_EXCEEDED, 0, 0, 0) + original[:IPV6_MIN_MTU - 48]
    pseudo = router.packed + sender.packed + struct.pack("!IxxxB", len(body), 58)
    body = body[:2] + struct.pack("!H", checksum(pseudo + body)) + body[4:]
    header = struct.pack("!IHBB16s16s", 6 << 28, len(body), 58, 64, router.packed, sender.packed)
    return build_ethernet(device_mac, router_mac, ETH_IPV6, header + body)
