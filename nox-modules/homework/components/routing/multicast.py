"""IGMP membership tracking (seed §4.4.3): multicast reaches only the devices that joined.

Devices report joins and leaves (IGMP v1/v2/v3) to the controller; the router asks
again with general queries so memberships of devices that left silently expire.
Source filters of IGMPv3 are not honoured: a device that wants any source of a group
gets the whole group, which is what home protocols (mDNS, SSDP) need."""
from __future__ import annotations

import ipaddress
import struct

from ...packets import PacketError, build_ethernet, build_ipv4, checksum, ip_bytes

V1_REPORT, V2_REPORT, V2_LEAVE, V3_REPORT, QUERY = 0x12, 0x16, 0x17, 0x22, 0x11
# IGMPv3 record types
MODE_IS_INCLUDE, MODE_IS_EXCLUDE, TO_INCLUDE, TO_EXCLUDE, ALLOW_NEW, BLOCK_OLD = 1, 2, 3, 4, 5, 6
ALL_SYSTEMS = "224.0.0.1"
ALL_SYSTEMS_MAC = bytes.fromhex("01005e000001")


def _group(raw: bytes) -> str:
    return ".".join(map(str, raw))


def is_multicast(addr: str) -> bool:
    try:
        return 224 <= int(addr.split(".", 1)[0]) <= 239
    except ValueError:
        return False


def parse_igmp(payload: bytes) -> tuple[list[str], list[str]]:
    """(groups joined, groups left) announced by one IGMP message; queries and other
    types give nothing. Raises PacketError on truncated input."""
    if len(payload) < 8:
        raise PacketError("IGMP message truncated")
    kind = payload[0]
    if kind in (V1_REPORT, V2_REPORT):
        group = _group(payload[4:8])
        return ([group] if is_multicast(group) else []), []
    if kind == V2_LEAVE:
        return [], [_group(payload[4:8])]
    if kind != V3_REPORT:
        return [], []
    return _group_records(payload, 4, _group, is_multicast, "IGMPv3")


def _group_records(msg: bytes, addr_len: int, to_group, wanted, name: str) -> tuple[list[str], list[str]]:
    """(joined, left) from the group records of an IGMPv3 or MLDv2 report: the same
    layout (type, aux length, source count, group, sources, aux data) with 4- or 16-byte
    addresses. Wanting any source of a group is a join, including none of its sources a
    leave; source filters are not kept (see the module's docstring)."""
    (nrec,) = struct.unpack_from("!H", msg, 6)
    joined, left, offset = [], [], 8
    for _ in range(nrec):
        if offset + 4 + addr_len > len(msg):
            raise PacketError(f"{name} record truncated")
        rtype, aux, nsrc = struct.unpack_from("!BBH", msg, offset)
        group = to_group(msg[offset + 4:offset + 4 + addr_len])
        offset += 4 + addr_len + addr_len * nsrc + 4 * aux
        if offset > len(msg):
            raise PacketError(f"{name} sources truncated")
        if not wanted(group):
            continue
        if rtype in (MODE_IS_EXCLUDE, TO_EXCLUDE) or (rtype in (MODE_IS_INCLUDE, ALLOW_NEW) and nsrc):
            joined.append(group)
        elif rtype == TO_INCLUDE and nsrc == 0:
            left.append(group)
    return joined, left


def general_query(router_mac: bytes, gateway: str, max_resp_tenths: int = 100) -> bytes:
    """IGMPv3 general query from `gateway` to 224.0.0.1 (hosts answer within max_resp)."""
    body = struct.pack("!BBH4sBBH", QUERY, min(max_resp_tenths, 127), 0, b"\0" * 4, 2, 60, 0)
    body = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
    ip = build_ipv4(ip_bytes(gateway), ip_bytes(ALL_SYSTEMS), 2, body, ttl=1)
    return build_ethernet(ALL_SYSTEMS_MAC, router_mac, 0x0800, ip)


class Memberships:
    """group -> {mac: last report time}. Pure bookkeeping; the component turns changes
    into flows."""

    def __init__(self, lifetime: float):
        self.lifetime = lifetime
        self._groups: dict[str, dict[str, float]] = {}

    def join(self, group: str, mac: str, now: float) -> bool:
        """True if the group's member set changed."""
        members = self._groups.setdefault(group, {})
        new = mac not in members
        members[mac] = now
        return new

    def leave(self, group: str, mac: str) -> bool:
        members = self._groups.get(group)
        if not members or mac not in members:
            return False
        del members[mac]
        if not members:
            del self._groups[group]
        return True

    def drop_device(self, mac: str) -> list[str]:
        """Forget a device everywhere (denied, lease gone); the groups that changed."""
        return [g for g in list(self._groups) if self.leave(g, mac)]

    def expire(self, now: float) -> list[str]:
        changed = []
        for group, members in list(self._groups.items()):
            for mac, seen in list(members.items()):
                if now - seen > self.lifetime:
                    self.leave(group, mac)
                    if group not in changed:
                        changed.append(group)
        return changed

    def members(self, group: str) -> list[str]:
        return sorted(self._groups.get(group, {}))

    def groups(self) -> list[str]:
        return sorted(self._groups)

    def devices(self) -> set[str]:
        """The MACs that are members of some group."""
        return {mac for members in self._groups.values() for mac in members}

    def clear(self) -> None:
        self._groups.clear()


# -- IPv6: MLD (RFC 2710, RFC 3810), the same bookkeeping with IPv6 groups ------------------
MLD_QUERY, MLD_V1_REPORT, MLD_V1_DONE, MLD_V2_REPORT = 130, 131, 132, 143
ALL_NODES_MAC = bytes.fromhex("333300000001")
ROUTER_ALERT_HBH = bytes([58, 0, 5, 2, 0, 0, 1, 0])     # next: ICMPv6; Router Alert (MLD); PadN


def _group6(raw: bytes) -> str:
    return str(ipaddress.IPv6Address(raw))


SOLICITED_NODE = ipaddress.IPv6Network("ff02::1:ff00:0/104")
NOT_FORWARDED6 = {ipaddress.IPv6Address(a) for a in ("ff02::1", "ff02::2", "ff02::16")}


def _wanted6(group: str) -> bool:
    """A group worth forwarding between devices (mDNS's ff02::fb, SSDP's ff02::c, ...):
    not interface-local, not all-nodes/all-routers/MLD routers, and not a solicited-node
    group (that would carry neighbour discovery from one device to another, which the
    one-subnet-per-device design never allows)."""
    addr = ipaddress.IPv6Address(group)
    return (addr.is_multicast and (int(addr) >> 112) & 0xF >= 2 and addr not in NOT_FORWARDED6
            and addr not in SOLICITED_NODE)


def icmpv6_of(ipv6_payload: bytes, next_header: int) -> bytes:
    """The ICMPv6 message behind an optional Hop-by-Hop header (MLD carries one)."""
    if next_header == 0:
        if len(ipv6_payload) < 8:
            raise PacketError("Hop-by-Hop header truncated")
        size = 8 * (ipv6_payload[1] + 1)
        next_header, ipv6_payload = ipv6_payload[0], ipv6_payload[size:]
    if next_header != 58:
        raise PacketError("not ICMPv6")
    return ipv6_payload


def parse_mld(msg: bytes) -> tuple[list[str], list[str]]:
    """(groups joined, groups left) of one MLD message (v1 report/done, v2 report)."""
    if len(msg) < 8:
        raise PacketError("MLD message truncated")
    kind = msg[0]
    if kind in (MLD_V1_REPORT, MLD_V1_DONE):
        if len(msg) < 24:
            raise PacketError("MLDv1 message truncated")
        group = _group6(msg[8:24])
        if not _wanted6(group):
            return [], []
        return ([group], []) if kind == MLD_V1_REPORT else ([], [group])
    if kind != MLD_V2_REPORT:
        return [], []
    return _group_records(msg, 16, _group6, _wanted6, "MLDv2")


def mld_general_query(router_mac: bytes, router_ll: bytes, max_resp_ms: int = 10000) -> bytes:
    """MLDv2 general query from the router's link-local to ff02::1, hop limit 1, with
    the Router Alert option hosts require."""
    dst = ipaddress.IPv6Address("ff02::1").packed
    icmp = struct.pack("!BBHHH16sBBH", MLD_QUERY, 0, 0, min(max_resp_ms, 32767), 0, b"\0" * 16, 2, 60, 0)
    pseudo = router_ll + dst + struct.pack("!IxxxB", len(icmp), 58)
    icmp = icmp[:2] + struct.pack("!H", checksum(pseudo + icmp)) + icmp[4:]
    payload = ROUTER_ALERT_HBH + icmp
    header = struct.pack("!IHBB16s16s", 6 << 28, len(payload), 0, 1, router_ll, dst)
    return ALL_NODES_MAC + router_mac + struct.pack("!H", 0x86DD) + header + payload
