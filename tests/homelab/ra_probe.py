"""Ask the router for a Router Advertisement as a device does (a Router Solicitation to
ff02::2) and print the RA's options as JSON: {"type": [values, ...]}, the captive portal
option (37, RFC 8910) as its URI, RDNSS (25) as addresses, the rest as hex.

    ip netns exec NS python3 ra_probe.py IFNAME [TIMEOUT]

Run with Debian's python3 in a device namespace (the standard library only)."""
import ipaddress
import json
import select
import socket
import struct
import sys
import time


def options(body: bytes) -> dict:
    out: dict = {}
    rest = body[16:]
    while len(rest) >= 2 and rest[1]:
        kind, length = rest[0], rest[1] * 8
        value = rest[2:length]
        if kind == 37:
            text = value.rstrip(b"\0").decode(errors="replace")
        elif kind == 25:
            text = [str(ipaddress.IPv6Address(value[6 + i:22 + i])) for i in range(0, len(value) - 6, 16)]
        else:
            text = value.hex()
        out.setdefault(str(kind), []).append(text)
        rest = rest[length:]
    return out


def main() -> int:
    ifname, timeout = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
    index = socket.if_nametoindex(ifname)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
    rs = struct.pack("!BBHI", 133, 0, 0, 0)            # the kernel fills in the checksum
    deadline = time.monotonic() + timeout
    next_rs = 0.0
    while time.monotonic() < deadline:
        if time.monotonic() >= next_rs:
            s.sendto(rs, ("ff02::2", 0, 0, index))
            next_rs = time.monotonic() + 1.0
        ready, _, _ = select.select([s], [], [], 0.2)
        if not ready:
            continue
        data, _addr = s.recvfrom(65535)
        if len(data) >= 16 and data[0] == 134:
            print(json.dumps(options(data)))
            return 0
    print("no Router Advertisement", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
