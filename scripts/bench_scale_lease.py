"""Lease many MACs from one device namespace (for `make bench`'s scale, crowd and
satellites sections).

    python3 bench_scale_lease.py IFACE FIRST COUNT [RATE]

Runs DISCOVER -> OFFER -> REQUEST -> ACK for COUNT locally administered MACs
(02:5c:xx:xx:xx:xx, numbered from FIRST) and prints one JSON object
{mac: [address, seconds from its first DISCOVER to its ACK, frames it sent again]} of the
leases it got. Without
RATE a window of exchanges is kept in flight (as fast as the server answers); with RATE
a new device starts every 1/RATE s whatever the others are doing, as a crowd arriving
at a venue does. A device that hears nothing within RETRY_SECONDS sends again, as a
client retransmits. Honest devices as far as the DHCP server can tell (real frames on
the port, chaddr = source MAC); they never send traffic afterwards, which is what an
idle household looks like.

Frames are packed and read with struct (standard library only): the player must not be
what limits the crowd (scapy took about a millisecond a frame each way).
"""
import heapq
import json
import random
import select
import socket
import struct
import sys
import time

WINDOW = 32            # exchanges in flight without RATE
RETRY_SECONDS = 2.0
DEADLINE_SECONDS = 300
MAGIC = b"\x63\x82\x53\x63"
DISCOVER, OFFER, REQUEST, ACK, NAK = 1, 2, 3, 5, 6


def mac_of(n: int) -> str:
    return "02:5c:" + ":".join(f"{(n >> s) & 0xff:02x}" for s in (24, 16, 8, 0))


def _checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(mac: str, xid: int, kind: int, requested: bytes = b"", server: bytes = b"") -> bytes:
    """A broadcast DHCP DISCOVER or REQUEST from `mac` (UDP checksum 0: none, as IPv4 allows)."""
    hw = bytes.fromhex(mac.replace(":", ""))
    options = bytes([53, 1, kind])
    if requested:
        options += bytes([50, 4]) + requested
    if server:
        options += bytes([54, 4]) + server
    options += b"\xff"
    bootp = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 0, xid, 0, 0x8000, b"\0" * 4, b"\0" * 4,
                        b"\0" * 4, b"\0" * 4, hw + b"\0" * 10, b"", b"") + MAGIC + options
    udp = struct.pack("!HHHH", 68, 67, 8 + len(bootp), 0) + bootp
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, b"\0" * 4, b"\xff" * 4)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return b"\xff" * 6 + hw + b"\x08\x00" + ip + udp


def dhcp_reply(data: bytes):
    """(xid, message type, yiaddr bytes, server id bytes) of a DHCP reply, or None."""
    if len(data) < 14 + 20 + 8 + 240 or data[12:14] != b"\x08\x00" or data[23] != 17:
        return None
    ihl = (data[14] & 0x0F) * 4
    udp = 14 + ihl
    if struct.unpack_from("!H", data, udp + 2)[0] != 68:
        return None
    bootp = udp + 8
    if data[bootp] != 2 or data[bootp + 236:bootp + 240] != MAGIC:
        return None
    xid = struct.unpack_from("!I", data, bootp + 4)[0]
    yiaddr = data[bootp + 16:bootp + 20]
    kind, server, i = None, b"", bootp + 240
    while i < len(data) and data[i] != 255:
        if data[i] == 0:
            i += 1
            continue
        code, length = data[i], data[i + 1]
        if code == 53:
            kind = data[i + 2]
        elif code == 54:
            server = data[i + 2:i + 2 + length]
        i += 2 + length
    return xid, kind, yiaddr, server


def main() -> int:
    iface, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rate = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind((iface, 0))
    sock.setblocking(False)
    todo = [mac_of(first + i) for i in range(count)][::-1]
    xids: dict[int, str] = {}       # xid -> mac
    stage: dict[str, tuple] = {}    # mac -> (kind, requested, server, sent at)
    retries: list = []              # heap of (due, mac, sent at)
    began: dict[str, float] = {}    # mac -> its first DISCOVER
    resent: dict[str, int] = {}     # mac -> frames sent again after RETRY_SECONDS of silence
    leases: dict[str, list] = {}
    start = time.monotonic()
    deadline = start + DEADLINE_SECONDS + (count / rate if rate else 0)

    def send(mac: str, kind: int, requested: bytes = b"", server: bytes = b"") -> None:
        xid = random.getrandbits(32)
        xids[xid] = mac
        now = time.monotonic()
        stage[mac] = (kind, requested, server, now)
        heapq.heappush(retries, (now + RETRY_SECONDS, mac, now))
        sock.send(frame(mac, xid, kind, requested, server))

    def begin(mac: str) -> None:
        began[mac] = time.monotonic()
        send(mac, DISCOVER)

    while (todo or stage) and time.monotonic() < deadline:
        now = time.monotonic()
        if rate:
            while todo and now >= start + (count - len(todo)) / rate:
                begin(todo.pop())
            wait = start + (count - len(todo)) / rate - now if todo else 0.05
        else:
            while todo and len(stage) < WINDOW:
                begin(todo.pop())
            wait = 0.05
        if retries:
            wait = min(wait, retries[0][0] - now)
        select.select([sock], [], [], max(0.0, wait))
        while True:
            try:
                got = dhcp_reply(sock.recv(2048))
            except BlockingIOError:
                break
            if not got:
                continue
            xid, kind, yiaddr, server = got
            mac = xids.pop(xid, None)
            if mac is None or mac not in stage:
                continue
            if kind == OFFER and stage[mac][0] == DISCOVER:
                send(mac, REQUEST, yiaddr, server)
            elif kind == ACK:
                leases[mac] = [socket.inet_ntoa(yiaddr), round(time.monotonic() - began[mac], 4), resent.get(mac, 0)]
                del stage[mac]
            elif kind == NAK:
                send(mac, DISCOVER)
        now = time.monotonic()
        while retries and retries[0][0] <= now:
            _, mac, sent = heapq.heappop(retries)
            if mac in stage and stage[mac][3] == sent:      # nothing heard since this send
                kind, requested, server, _ = stage[mac]
                resent[mac] = resent.get(mac, 0) + 1
                send(mac, kind, requested, server)
    print(json.dumps(leases))
    return 0 if len(leases) == count else 1


if __name__ == "__main__":
    sys.exit(main())
