"""Prints the Rust fixtures (request frame, expected reply frame) built by the controller's
own code: DhcpServer._reply/_packet_out on a stand-in `self`, then fastpath.reply_frame.
Run from /work/main: PYTHONPATH=nox-modules python3 dhcpd/tools/fixtures.py"""
import functools
from types import SimpleNamespace

from homework.components.dhcp import fastpath
from homework.components.dhcp import message as m
from homework.components.dhcp.server import DhcpServer
from homework.packets import build_ethernet, build_ipv4, build_udp, parse_ethernet, parse_ipv4, parse_udp

MAC = bytes.fromhex("020000000005")
PORT = 3
BLOCK = SimpleNamespace(device="10.2.0.6", router="10.2.0.5", broadcast="10.2.0.7")
LEASE = 3600


RELAY = "10.2.0.2"                          # a relay agent (perfdhcp in the bench is one)
RELAY_MAC = bytes.fromhex("02000000aa02")


def request(msg_type, *, flags=0, ciaddr="0.0.0.0", opts=(), xid=0x12345678, giaddr="0.0.0.0"):
    fixed = m.FIXED.pack(1, 1, 6, 0, xid, 7, flags, m.ip4(ciaddr), b"\0" * 4, b"\0" * 4,
                         m.ip4(giaddr), MAC.ljust(16, b"\0"), b"\0" * 64, b"\0" * 128)
    out = fixed + m.MAGIC + bytes((53, 1, msg_type))
    for code, value in opts:
        out += bytes((code, len(value))) + value
    out += b"\xff"
    if giaddr != "0.0.0.0":      # from the relay agent, unicast to the server, port 67 -> 67
        src, dst = m.ip4(giaddr), m.ip4(BLOCK.router)
        udp = build_udp(src, dst, 67, 67, out)
        return build_ethernet(fastpath.marker(PORT), RELAY_MAC, 0x0800, build_ipv4(src, dst, 17, udp))
    src = m.ip4(ciaddr)
    dst = m.ip4("255.255.255.255") if ciaddr == "0.0.0.0" else m.ip4(BLOCK.router)
    udp = build_udp(src, dst, 68, 67, out)
    return build_ethernet(fastpath.marker(PORT), MAC, 0x0800, build_ipv4(src, dst, 17, udp))


def reply(frame, msg_type, entry_hostname):
    eth = parse_ethernet(frame)
    msg = m.parse(parse_udp(parse_ipv4(eth.payload).payload).payload)
    fake = SimpleNamespace(hostnames={msg.mac: entry_hostname} if entry_hostname else {},
                           lease_time_for=lambda mac: LEASE,
                           _router_mac=lambda: "02:aa:bb:cc:dd:01")
    fake._packet_out = functools.partial(DhcpServer._packet_out, fake)
    lease_time = LEASE if msg_type == m.ACK else None
    out = DhcpServer._reply(fake, msg_type, msg, BLOCK, PORT, lease_time)
    return fastpath.reply_frame(out)


CASES = [
    ("discover_broadcast_hostname", request(m.DISCOVER, flags=0x8000, opts=[(12, b"my-phone")]), m.OFFER, "laptop"),
    ("discover_broadcast_entry_hostname", request(m.DISCOVER, flags=0x8000), m.OFFER, "laptop"),
    ("discover_requested_no_hostname", request(m.DISCOVER, flags=0x8000, opts=[(50, m.ip4("10.2.0.6"))]), m.OFFER, ""),
    ("selecting_unicast", request(m.REQUEST, opts=[(54, m.ip4("10.2.0.5")), (50, m.ip4("10.2.0.6"))]), m.ACK, "laptop"),
    ("selecting_unicast_no_hostname", request(m.REQUEST, opts=[(54, m.ip4("10.2.0.5")), (50, m.ip4("10.2.0.6"))]), m.ACK, ""),
    ("renewing_sanitised_hostname", request(m.REQUEST, ciaddr="10.2.0.6", opts=[(12, b"my host\x01na\"me\x80")]), m.ACK, "laptop"),
    ("renewing_no_hostname", request(m.REQUEST, ciaddr="10.2.0.6"), m.ACK, ""),
    ("init_reboot_broadcast", request(m.REQUEST, flags=0x8000, opts=[(50, m.ip4("10.2.0.6")), (12, b"a" * 70)]), m.ACK, ""),
]

# relayed (the entry's relay is RELAY): answered to the relay agent, 67 -> 67
RELAY_CASES = [
    ("relayed_discover", request(m.DISCOVER, giaddr=RELAY), m.OFFER, ""),
    ("relayed_selecting", request(m.REQUEST, giaddr=RELAY, opts=[(54, m.ip4("10.2.0.5")), (50, m.ip4("10.2.0.6"))]),
     m.ACK, "laptop"),
]

if __name__ == "__main__":
    for name, req, kind, host in CASES:
        print(f"// {name}")
        print(f'("{name}", "{host}", "{req.hex()}",')
        print(f' "{reply(req, kind, host).hex()}"),')
    print("// relayed")
    for name, req, kind, host in RELAY_CASES:
        print(f"// {name}")
        print(f'("{name}", "{host}", "{req.hex()}",')
        print(f' "{reply(req, kind, host).hex()}"),')
    print("// bpf")
    print(f'"{fastpath.bpf_bytes().hex()}"')
