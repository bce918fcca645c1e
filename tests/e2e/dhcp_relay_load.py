#!/usr/bin/env python3
"""Many DHCP clients behind one relay agent, run inside a device namespace (e2e helper).

    dhcp_relay_load.py GIADDR SERVER COUNT {join|renew} [LEASES.json]

`join`: COUNT clients (MACs 02:99:00:00:HH:LL) each do DISCOVER/OFFER/REQUEST/ACK through
the relay address GIADDR (our socket on GIADDR:67, as a relay agent listens); `renew`:
each client of LEASES.json renews its address (REQUEST with ciaddr). Prints JSON:
{"acks": {mac: address}, "naks": [mac, ...], "missing": [mac, ...]}. Requests go out in
windows and are retried until every client is answered or the time is up. Written
against the RFC 2131 wire format, not the server's code.
"""
from __future__ import annotations

import json
import select
import socket
import struct
import sys
import time

WINDOW = 64            # outstanding requests
RETRY = 1.0            # seconds before a request is sent again
DEADLINE = 40.0
COOKIE = b"\x63\x82\x53\x63"
DISCOVER, OFFER, REQUEST, ACK, NAK = 1, 2, 3, 5, 6


def mac_of(i: int) -> bytes:
    return bytes([0x02, 0x99, 0, 0, i >> 8, i & 0xFF])


def ip(s: str) -> bytes:
    return socket.inet_aton(s)


def build(mac: bytes, xid: int, giaddr: str, msg_type: int, ciaddr="0.0.0.0", options=()) -> bytes:
    fixed = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 1, xid, 0, 0, ip(ciaddr), b"\0" * 4,
                        b"\0" * 4, ip(giaddr), mac.ljust(16, b"\0"), b"\0" * 64, b"\0" * 128)
    opts = bytes((53, 1, msg_type))
    for code, value in options:
        opts += bytes((code, len(value))) + value
    return fixed + COOKIE + opts + b"\xff"


def parse(data: bytes) -> tuple[int, bytes, str, int, dict] | None:
    if len(data) < 240 or data[236:240] != COOKIE:
        return None
    xid = struct.unpack_from("!I", data, 4)[0]
    yiaddr = socket.inet_ntoa(data[16:20])
    mac = data[28:34]
    options, i = {}, 240
    while i < len(data) and data[i] != 255:
        if data[i] == 0:
            i += 1
            continue
        code, length = data[i], data[i + 1]
        options[code] = data[i + 2:i + 2 + length]
        i += 2 + length
    kind = options.get(53, b"\0")[0]
    return xid, mac, yiaddr, kind, options


def main() -> None:
    giaddr, server, count, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    known = json.load(open(sys.argv[5]))["acks"] if mode == "renew" else {}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind((giaddr, 67))
    macs = [mac_of(i) for i in range(count)] if mode == "join" else \
        [bytes.fromhex(m.replace(":", "")) for m in known]
    # per client: (message to send, sent at)
    todo: dict[bytes, list] = {}
    xids = {mac: 0x10000 + n for n, mac in enumerate(macs)}
    for mac in macs:
        if mode == "join":
            todo[mac] = [build(mac, xids[mac], giaddr, DISCOVER), 0.0]
        else:
            addr = known[mac.hex(":")]
            todo[mac] = [build(mac, xids[mac], giaddr, REQUEST, ciaddr=addr), 0.0]
    acks: dict[str, str] = {}
    naks: set[str] = set()
    pending = list(macs)
    deadline = time.monotonic() + DEADLINE
    while pending and time.monotonic() < deadline:
        now = time.monotonic()
        in_flight = 0
        for mac in pending:
            msg = todo[mac]
            if now - msg[1] < RETRY:
                in_flight += 1
                continue
            if in_flight >= WINDOW:
                break
            sock.sendto(msg[0], (server, 67))
            msg[1] = now
            in_flight += 1
        while True:
            ready, _, _ = select.select([sock], [], [], 0.05)
            if not ready:
                break
            reply = parse(sock.recv(4096))
            if reply is None:
                continue
            xid, mac, yiaddr, kind, options = reply
            if mac not in todo or xids.get(mac) != xid:
                continue
            if kind == OFFER and mode == "join" and mac.hex(":") not in acks:
                todo[mac] = [build(mac, xid, giaddr, REQUEST, options=[(50, ip(yiaddr)), (54, options[54])]), 0.0]
            elif kind == ACK:
                acks[mac.hex(":")] = yiaddr
            elif kind == NAK:
                naks.add(mac.hex(":"))
        pending = [mac for mac in pending if mac.hex(":") not in acks and mac.hex(":") not in naks]
    print(json.dumps({"acks": acks, "naks": sorted(naks), "missing": [m.hex(":") for m in pending]}))


if __name__ == "__main__":
    main()
