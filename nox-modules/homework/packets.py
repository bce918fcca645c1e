"""Minimal, allocation-light Ethernet/ARP/IPv4/UDP/TCP parsing and building.

Written for the controller's hot path: parsing a frame is a handful of struct unpacks;
malformed input raises PacketError, which callers count and drop.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from .macaddr import from_bytes

ETH_HDR = struct.Struct("!6s6sH")
IP_HDR = struct.Struct("!BBHHHBBH4s4s")
UDP_HDR = struct.Struct("!HHHH")
BROADCAST_MAC = b"\xff" * 6


class PacketError(ValueError):
    pass


@dataclass
class Frame:
    dst: bytes
    src: bytes
    ethertype: int
    payload: bytes
    vlan: int | None = None

    @property
    def src_mac(self) -> str:
        return from_bytes(self.src)

    @property
    def dst_mac(self) -> str:
        return from_bytes(self.dst)


@dataclass
class IPv4:
    src: bytes
    dst: bytes
    proto: int
    ttl: int
    payload: bytes
    header_len: int
    total_len: int
    ident: int = 0

    @property
    def src_ip(self) -> str:
        return ".".join(map(str, self.src))

    @property
    def dst_ip(self) -> str:
        return ".".join(map(str, self.dst))


@dataclass
class UDP:
    sport: int
    dport: int
    payload: bytes


def parse_ethernet(data: bytes) -> Frame:
    if len(data) < 14:
        raise PacketError(f"ethernet frame too short ({len(data)} bytes)")
    dst, src, ethertype = ETH_HDR.unpack_from(data)
    offset, vlan = 14, None
    if ethertype == 0x8100:
        if len(data) < 18:
            raise PacketError("truncated VLAN tag")
        vlan = struct.unpack_from("!H", data, 14)[0] & 0x0FFF
        ethertype = struct.unpack_from("!H", data, 16)[0]
        offset = 18
    return Frame(dst, src, ethertype, data[offset:], vlan)


def parse_ipv4(data: bytes) -> IPv4:
    if len(data) < 20:
        raise PacketError("IPv4 header truncated")
    vihl, _tos, total, ident, _frag, ttl, proto, _csum, src, dst = IP_HDR.unpack_from(data)
    if vihl >> 4 != 4:
        raise PacketError(f"not IPv4 (version {vihl >> 4})")
    ihl = (vihl & 0x0F) * 4
    if ihl < 20 or ihl > len(data):
        raise PacketError(f"bad IPv4 header length {ihl}")
    if total < ihl:
        raise PacketError(f"bad IPv4 total length {total}")
    end = min(total, len(data))
    return IPv4(src, dst, proto, ttl, data[ihl:end], ihl, total, ident)


def parse_udp(data: bytes) -> UDP:
    if len(data) < 8:
        raise PacketError("UDP header truncated")
    sport, dport, length, _csum = UDP_HDR.unpack_from(data)
    if length < 8:
        raise PacketError(f"bad UDP length {length}")
    return UDP(sport, dport, data[8:length] if length <= len(data) else data[8:])


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def build_ethernet(dst: bytes, src: bytes, ethertype: int, payload: bytes) -> bytes:
    frame = ETH_HDR.pack(dst, src, ethertype) + payload
    return frame if len(frame) >= 60 else frame + b"\0" * (60 - len(frame))


def build_ipv4(src: bytes, dst: bytes, proto: int, payload: bytes, ttl: int = 64, ident: int = 0) -> bytes:
    header = IP_HDR.pack(0x45, 0, 20 + len(payload), ident, 0x4000, ttl, proto, 0, src, dst)
    csum = checksum(header)
    return header[:10] + struct.pack("!H", csum) + header[12:] + payload


def build_udp(src_ip: bytes, dst_ip: bytes, sport: int, dport: int, payload: bytes) -> bytes:
    length = 8 + len(payload)
    pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 17, length)
    header = UDP_HDR.pack(sport, dport, length, 0)
    csum = checksum(pseudo + header + payload) or 0xFFFF
    return UDP_HDR.pack(sport, dport, length, csum) + payload


def ip_bytes(text: str) -> bytes:
    parts = text.split(".")
    if len(parts) != 4:
        raise PacketError(f"bad IPv4 address {text!r}")
    return bytes(int(p) for p in parts)
