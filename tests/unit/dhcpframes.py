"""Build DHCP client frames for unit tests (the wire format, independent of the server code)."""
import struct

from homework.packets import build_ethernet, build_ipv4, build_udp, ip_bytes


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def dhcp_payload(mac: str, msg_type: int, xid: int = 0x1234, ciaddr="0.0.0.0", options=(), flags=0,
                 giaddr="0.0.0.0") -> bytes:
    fixed = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 0, xid, 0, flags, ip_bytes(ciaddr),
                        b"\0" * 4, b"\0" * 4, ip_bytes(giaddr), mac_bytes(mac).ljust(16, b"\0"), b"\0" * 64,
                        b"\0" * 128)
    opts = bytes((53, 1, msg_type))
    for code, value in options:
        opts += bytes((code, len(value))) + value
    return fixed + b"\x63\x82\x53\x63" + opts + b"\xff"


def dhcp_frame(mac: str, msg_type: int, src_ip="0.0.0.0", dst_ip="255.255.255.255", **kw) -> bytes:
    payload = dhcp_payload(mac, msg_type, ciaddr=kw.pop("ciaddr", src_ip if src_ip != "0.0.0.0" else "0.0.0.0"), **kw)
    udp = build_udp(ip_bytes(src_ip), ip_bytes(dst_ip), 68, 67, payload)
    return build_ethernet(b"\xff" * 6, mac_bytes(mac), 0x0800, build_ipv4(ip_bytes(src_ip), ip_bytes(dst_ip), 17, udp))


def opt_ip(code, ip):
    return (code, ip_bytes(ip))
