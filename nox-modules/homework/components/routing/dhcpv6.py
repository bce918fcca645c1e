"""Stateless DHCPv6 (RFC 8415 §18.2.6): a device that asks with INFORMATION-REQUEST gets
the router's ::1 of its /64 as DNS server, the same answer its Router Advertisements
give (RFC 8106) for devices that read only DHCPv6. Addresses stay SLAAC from the
device's own /64: no stateful DHCPv6 (SOLICIT goes unanswered)."""
from __future__ import annotations

import ipaddress
import struct

from ...packets import PacketError, checksum
from ...ipv6plan import ROUTER_LINK_LOCAL

PORT_CLIENT, PORT_SERVER = 546, 547
INFORMATION_REQUEST, REPLY = 11, 7
OPT_CLIENTID, OPT_SERVERID, OPT_ORO, OPT_DNS_SERVERS, OPT_DOMAIN_LIST = 1, 2, 6, 23, 24
OPT_CAPTIVE_PORTAL = 103        # RFC 8910: the captive portal API's URL
DUID_LL, HW_ETHERNET = 3, 1


def parse_information_request(udp_payload: bytes) -> tuple[bytes, bytes, frozenset[int]]:
    """(transaction id, client id option body, the options it asks for (ORO)) of an
    INFORMATION-REQUEST; PacketError for anything else or anything malformed (options
    must fit exactly)."""
    if len(udp_payload) < 4 or udp_payload[0] != INFORMATION_REQUEST:
        raise PacketError("not a DHCPv6 INFORMATION-REQUEST")
    xid, client, i = udp_payload[1:4], b"", 4
    oro: frozenset[int] = frozenset()
    while i < len(udp_payload):
        if i + 4 > len(udp_payload):
            raise PacketError("truncated DHCPv6 option")
        code, length = struct.unpack_from("!HH", udp_payload, i)
        if i + 4 + length > len(udp_payload):
            raise PacketError("DHCPv6 option runs past the packet")
        if code == OPT_CLIENTID:
            client = udp_payload[i + 4:i + 4 + length]
        elif code == OPT_ORO:
            body = udp_payload[i + 4:i + 4 + length]
            oro = frozenset(struct.unpack_from("!H", body, j)[0] for j in range(0, len(body) - 1, 2))
        i += 4 + length
    return xid, client, oro


def _option(code: int, body: bytes) -> bytes:
    return struct.pack("!HH", code, len(body)) + body


def reply_frame(router_mac: bytes, device_mac: bytes, device_ll: ipaddress.IPv6Address, xid: bytes,
                client_id: bytes, dns: ipaddress.IPv6Address, search: bytes = b"", captive: str = "",
                extra: bytes = b"") -> bytes:
    """The Ethernet frame of the REPLY, from fe80::1:547 to the asking address :546.
    `search`: the domain search list in DNS wire format (ndp.dns_names); `captive`: the
    captive portal API's URL (RFC 8910, option 103), as the RA and DHCPv4 give it;
    `extra`: more options, whole (the encrypted DNS announcement, homework/dnr.py)."""
    body = bytes([REPLY]) + xid
    if client_id:
        body += _option(OPT_CLIENTID, client_id)
    body += _option(OPT_SERVERID, struct.pack("!HH", DUID_LL, HW_ETHERNET) + router_mac)
    body += _option(OPT_DNS_SERVERS, dns.packed)
    if search:
        body += _option(OPT_DOMAIN_LIST, search)
    if captive:
        body += _option(OPT_CAPTIVE_PORTAL, captive.encode())
    body += extra
    length = 8 + len(body)
    pseudo = ROUTER_LINK_LOCAL.packed + device_ll.packed + struct.pack("!IxxxB", length, 17)
    udp = struct.pack("!HHHH", PORT_SERVER, PORT_CLIENT, length, 0) + body
    csum = checksum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", csum) + udp[8:]
    header = struct.pack("!IHBB16s16s", 6 << 28, len(udp), 17, 255, ROUTER_LINK_LOCAL.packed, device_ll.packed)
    return device_mac + router_mac + struct.pack("!H", 0x86DD) + header + udp
