"""The router's IPv4 addresses on the WAN (for hairpin forwards and the board), read with
one ioctl (SIOCGIFCONF lists every IPv4 address of every interface, secondary ones too),
so a periodic look starts no process."""
from __future__ import annotations

import array
import fcntl
import ipaddress
import socket
import struct

SIOCGIFCONF = 0x8912
IFREQ_SIZE = 40            # struct ifreq on 64-bit Linux


def ipv4_addresses(ifname: str, max_entries: int = 512) -> list[str]:
    """Every IPv4 address of `ifname` (an alias label 'wan0:1' counts as wan0)."""
    buf = array.array("B", b"\0" * (max_entries * IFREQ_SIZE))
    addr, _ = buf.buffer_info()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("iL", len(buf), addr)
        used = struct.unpack("iL", fcntl.ioctl(s.fileno(), SIOCGIFCONF, req))[0]
    raw = buf.tobytes()[:used]
    out = []
    for off in range(0, len(raw), IFREQ_SIZE):
        name = raw[off:off + 16].split(b"\0", 1)[0].decode(errors="replace")
        if name.split(":", 1)[0] != ifname:
            continue
        out.append(socket.inet_ntoa(raw[off + 20:off + 24]))
    return out


def is_public(address: str) -> bool:
    """Could the internet reach this address? (Not private, shared, documentation or
    otherwise reserved: behind another router's NAT, a forward here is not enough.)"""
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return ip.is_global
