#!/usr/bin/env python3
"""A video call's two halves for the ISP edge's evaluation (scripts/bench_isp.py): paced
media (UDP datagrams stamped with a sequence number and the send time) and an interactive
exchange (UDP echo, as a game or a call's control traffic). Both ends run on this machine
in different namespaces, so the send time stamps give one-way delays.

    callprobe.py recv --port 5004 --seconds 10            -> JSON: received, lost, delays, kbit/s
    callprobe.py send --dst ADDR --src ADDR --port 5004 --sport 40000 --pps 160 --size 1200 --seconds 10
    callprobe.py echo-server --port 7 --bind ADDR
    callprobe.py echo --dst ADDR --port 7 --sport 41000 --interval 0.1 --seconds 10   -> JSON: rtts (ms), lost
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time

STAMP = struct.Struct("!Qd")


def family(addr: str) -> int:
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def recv(port: int, seconds: float, v6: bool) -> dict:
    s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("::" if v6 else "0.0.0.0", port))
    s.settimeout(0.5)
    seqs, delays, nbytes = set(), [], 0
    first = last = None
    end = time.time() + seconds
    while time.time() < end:
        try:
            data, _ = s.recvfrom(65536)
        except TimeoutError:
            continue
        now = time.time()
        seq, sent = STAMP.unpack_from(data)
        seqs.add(seq)
        delays.append((now - sent) * 1000)
        nbytes += len(data)
        first = first if first is not None else now
        last = now
    top = max(seqs) if seqs else -1
    low = min(seqs) if seqs else 0
    span = (last - first) if first is not None and last is not None and last > first else 0
    return {"received": len(seqs), "lost": (top - low + 1) - len(seqs) if seqs else 0,
            "delays_ms": delays, "kbit_s": nbytes * 8 / span / 1000 if span else 0.0}


def send(dst: str, port: int, sport: int, pps: float, size: int, seconds: float, src: str = "") -> None:
    s = socket.socket(family(dst), socket.SOCK_DGRAM)
    s.bind((src or ("::" if ":" in dst else "0.0.0.0"), sport))
    pad = b"x" * max(0, size - STAMP.size)
    start = time.time()
    n = 0
    while True:
        due = start + n / pps
        if due > start + seconds:
            return
        wait = due - time.time()
        if wait > 0:
            time.sleep(wait)
        try:
            s.sendto(STAMP.pack(n, time.time()) + pad, (dst, port))
        except OSError:
            pass
        n += 1


def echo_server(port: int, bind: list[str]) -> None:
    """Answers from the address asked (one socket per address: an unbound socket would
    answer from the route's address, another connection to the network)."""
    socks = []
    for addr in bind:
        fam = family(addr)
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.bind((addr, port))
        socks.append(s)
    import selectors
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            data, peer = key.fileobj.recvfrom(65536)
            key.fileobj.sendto(data, peer)


def echo(dst: str, port: int, sport: int, interval: float, seconds: float) -> dict:
    s = socket.socket(family(dst), socket.SOCK_DGRAM)
    s.bind(("::" if ":" in dst else "0.0.0.0", sport))
    s.settimeout(interval)
    rtts, sent, got = [], 0, set()
    end = time.time() + seconds
    while time.time() < end:
        s.sendto(STAMP.pack(sent, time.time()), (dst, port))
        sent += 1
        deadline = time.time() + interval
        while time.time() < deadline:
            try:
                data, _ = s.recvfrom(65536)
            except (TimeoutError, OSError):
                break
            seq, t0 = STAMP.unpack_from(data)
            if seq not in got:
                got.add(seq)
                rtts.append((time.time() - t0) * 1000)
        time.sleep(max(0.0, deadline - time.time()))
    # answers still in flight after the last probe
    s.settimeout(2)
    try:
        while len(got) < sent:
            data, _ = s.recvfrom(65536)
            seq, t0 = STAMP.unpack_from(data)
            if seq not in got:
                got.add(seq)
                rtts.append((time.time() - t0) * 1000)
    except (TimeoutError, OSError):
        pass
    return {"sent": sent, "rtts_ms": rtts, "lost": sent - len(got)}


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--seconds", type=float, required=True)
    r.add_argument("--v6", action="store_true")
    for name in ("send", "echo"):
        p = sub.add_parser(name)
        p.add_argument("--dst", required=True)
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--sport", type=int, required=True)
        p.add_argument("--seconds", type=float, required=True)
        if name == "send":
            p.add_argument("--src", default="", help="the address to send from (default: the route's)")
            p.add_argument("--pps", type=float, default=160)
            p.add_argument("--size", type=int, default=1200)
        else:
            p.add_argument("--interval", type=float, default=0.1)
    es = sub.add_parser("echo-server")
    es.add_argument("--port", type=int, required=True)
    es.add_argument("--bind", action="append", required=True, help="an address to answer on (repeatable)")
    a = ap.parse_args()
    if a.cmd == "recv":
        print(json.dumps(recv(a.port, a.seconds, a.v6)))
    elif a.cmd == "send":
        send(a.dst, a.port, a.sport, a.pps, a.size, a.seconds, a.src)
    elif a.cmd == "echo-server":
        echo_server(a.port, a.bind)
    else:
        print(json.dumps(echo(a.dst, a.port, a.sport, a.interval, a.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
