"""Imitate a device's DHCP (scapy): the options a real device sends, from a device namespace.

    python3 imitate.py IFACE dhcp4 '{"12": "Toms-iPhone", "55": [1, 121, 3, ...], "60": "MSFT 5.0"}' [COUNT]
    python3 imitate.py IFACE dhcp6 '{"duid": "0001...", "oro": [23, 24], "vendor": [311, "MSFT 5.0"]}' [COUNT]

dhcp4 sends COUNT DISCOVERs (default 2, a second apart) with the options in the order given
(numbers: a list is bytes, text is text, a 2-byte size is [hi, lo]); the frame's source and
chaddr are the interface's MAC. dhcp6 sends INFORMATION-REQUESTs from the interface's
link-local address to ff02::1:2. Prints what it sent.
"""
import json
import struct
import sys
import time

from scapy.all import BOOTP, DHCP, IP, UDP, Ether, IPv6, conf, get_if_hwaddr, sendp

conf.verb = 0


def value(v) -> bytes:
    return bytes(v) if isinstance(v, list) else str(v).encode()


def dhcp4(iface: str, options: dict, count: int) -> None:
    mac = get_if_hwaddr(iface)
    opts = [("message-type", "discover")] + [(int(code), value(v)) for code, v in options.items()] + ["end"]
    frame = (Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / IP(src="0.0.0.0", dst="255.255.255.255")
             / UDP(sport=68, dport=67)
             / BOOTP(chaddr=bytes.fromhex(mac.replace(":", "")) + b"\0" * 10, xid=0x1d3a7e, flags=0x8000)
             / DHCP(options=opts))
    for i in range(count):
        sendp(frame, iface=iface)
        if i + 1 < count:
            time.sleep(1)
    print("sent", count, "DISCOVERs from", mac)


def link_local(iface: str) -> str:
    with open("/proc/net/if_inet6") as fh:
        for line in fh:
            addr, _idx, _plen, scope, _flags, name = line.split()
            if name == iface and scope == "20":
                return ":".join(addr[i:i + 4] for i in range(0, 32, 4))
    raise SystemExit(f"{iface} has no link-local address yet")


def option6(code: int, body: bytes) -> bytes:
    return struct.pack("!HH", code, len(body)) + body


def dhcp6(iface: str, spec: dict, count: int) -> None:
    mac = get_if_hwaddr(iface)
    body = bytes([11]) + b"\x4a\x11\x9e"
    body += option6(1, bytes.fromhex(spec["duid"]))
    if "oro" in spec:
        body += option6(6, struct.pack(f"!{len(spec['oro'])}H", *spec["oro"]))
    if "vendor" in spec:
        enterprise, text = spec["vendor"]
        body += option6(16, struct.pack("!IH", enterprise, len(text)) + text.encode())
    frame = (Ether(src=mac, dst="33:33:00:01:00:02") / IPv6(src=link_local(iface), dst="ff02::1:2")
             / UDP(sport=546, dport=547) / body)
    for i in range(count):
        sendp(frame, iface=iface)
        if i + 1 < count:
            time.sleep(1)
    print("sent", count, "INFORMATION-REQUESTs from", mac)


if __name__ == "__main__":
    iface, kind, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    {"dhcp4": dhcp4, "dhcp6": dhcp6}[kind](iface, spec, count)
