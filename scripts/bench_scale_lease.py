"""Lease many MACs from one device namespace (for `make bench`'s scale section).

    python3 bench_scale_lease.py IFACE FIRST COUNT

Runs DISCOVER -> OFFER -> REQUEST -> ACK for COUNT locally administered MACs
(02:5c:xx:xx:xx:xx, numbered from FIRST), a window of them in flight at once, and prints
one JSON object {mac: address} of the leases it got. Honest devices as far as the DHCP
server can tell (real frames on the port, chaddr = source MAC); they never send traffic
afterwards, which is what an idle household looks like.
"""
import json
import random
import socket
import sys
import time

from scapy.all import BOOTP, DHCP, IP, UDP, Ether, conf

conf.verb = 0
WINDOW = 32            # exchanges in flight
RETRY_SECONDS = 2.0
DEADLINE_SECONDS = 300


def mac_of(n: int) -> str:
    return "02:5c:" + ":".join(f"{(n >> s) & 0xff:02x}" for s in (24, 16, 8, 0))


def frame(mac: str, xid: int, options: list) -> bytes:
    chaddr = bytes.fromhex(mac.replace(":", "")) + b"\0" * 10
    pkt = (Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / IP(src="0.0.0.0", dst="255.255.255.255")
           / UDP(sport=68, dport=67) / BOOTP(chaddr=chaddr, xid=xid, flags=0x8000)
           / DHCP(options=options + ["end"]))
    return bytes(pkt)


def dhcp_reply(data: bytes):
    """(xid, message type, yiaddr, server id) of a DHCP reply, or None."""
    if len(data) < 42 or data[12:14] != b"\x08\x00" or data[23] != 17:
        return None
    pkt = Ether(data)
    if not pkt.haslayer(BOOTP) or not pkt.haslayer(DHCP) or pkt[UDP].dport != 68:
        return None
    opts = {o[0]: o[1] for o in pkt[DHCP].options if isinstance(o, tuple) and len(o) >= 2}
    return pkt[BOOTP].xid, opts.get("message-type"), pkt[BOOTP].yiaddr, opts.get("server_id")


def main() -> int:
    iface, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    sock.bind((iface, 0))
    sock.settimeout(0.1)
    todo = [mac_of(first + i) for i in range(count)]
    xids = {}                       # xid -> mac
    stage = {}                      # mac -> (DISCOVER|REQUEST options, sent at)
    leases = {}
    deadline = time.monotonic() + DEADLINE_SECONDS

    def send(mac, options):
        xid = random.getrandbits(32)
        xids[xid] = mac
        stage[mac] = (options, time.monotonic())
        sock.send(frame(mac, xid, options))

    while (todo or stage) and time.monotonic() < deadline:
        while todo and len(stage) < WINDOW:
            send(todo.pop(), [("message-type", "discover")])
        try:
            got = dhcp_reply(sock.recv(4096))
        except TimeoutError:
            got = None
        if got:
            xid, kind, yiaddr, server = got
            mac = xids.pop(xid, None)
            if mac is not None and mac in stage:
                if kind == 2:                       # OFFER -> REQUEST
                    send(mac, [("message-type", "request"), ("requested_addr", yiaddr), ("server_id", server)])
                elif kind == 5:                     # ACK
                    leases[mac] = yiaddr
                    del stage[mac]
                else:                               # NAK: start again
                    send(mac, [("message-type", "discover")])
        now = time.monotonic()
        for mac, (options, sent) in list(stage.items()):
            if now - sent > RETRY_SECONDS:
                send(mac, options)
    print(json.dumps(leases))
    return 0 if len(leases) == count else 1


if __name__ == "__main__":
    sys.exit(main())
