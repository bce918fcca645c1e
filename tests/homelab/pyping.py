"""Minimal ICMP echo (ping) for machines without iputils-ping.

    python3 pyping.py ADDR [COUNT] [TIMEOUT_SECONDS]

Exit 0 when at least one reply came back; prints one line per reply with the RTT.
"""
import os
import socket
import struct
import sys
import time


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ping(addr: str, count: int = 1, timeout: float = 2.0) -> int:
    ident = os.getpid() & 0xFFFF
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    got = 0
    for seq in range(1, count + 1):
        payload = struct.pack("!d", time.monotonic()) + b"homelab-ping"
        header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        header = struct.pack("!BBHHH", 8, 0, checksum(header + payload), ident, seq)
        sent = time.monotonic()
        sock.sendto(header + payload, (addr, 0))
        deadline = sent + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                print(f"no reply from {addr} seq={seq}")
                break
            sock.settimeout(left)
            try:
                packet, (src, _) = sock.recvfrom(2048)
            except TimeoutError:
                continue
            ihl = (packet[0] & 0x0F) * 4
            typ, _code, _ck, rid, rseq = struct.unpack("!BBHHH", packet[ihl:ihl + 8])
            if typ == 0 and rid == ident and rseq == seq and src == addr:
                got += 1
                print(f"reply from {src} seq={seq} time={(time.monotonic() - sent) * 1000:.3f} ms")
                break
        if seq < count:
            time.sleep(0.2)
    return got


if __name__ == "__main__":
    a = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    t = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    sys.exit(0 if ping(a, n, t) else 1)
