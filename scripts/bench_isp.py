#!/usr/bin/env python3
"""The seed's evaluation of the ISP edge (its "Rethinking Home ISP communication"),
reproduced: three households behind one ispedge bridge (tests/homelab/isp_edge.py) on a
backhaul shaped to BACKHAUL_KBIT, well below the sum of their lines. Household A makes a
video call (paced UDP media from the internet to A, CALL_KBIT, and an interactive UDP
exchange every 100 ms, as a call's control traffic or a game) while someone in A downloads
and households B and C download flat out (iperf3, 4 TCP streams each, the internet to
them). All in the downstream direction, where the backhaul is the bottleneck.

Variants, alternating within each round:
  one queue    a plain ISP: the edge serves no household, every packet waits in one shared
               HTB class at the backhaul's rate (its 1000-packet FIFO: today's bufferbloat)
  edge         ispedge's three queues per household, nothing placed: A's call shares A's
               default queue with A's own download, B and C have theirs
  edge+placed  A's router placed the call's two connections in A's high queue (guaranteed
               GUARANTEED_KBIT, first priority)

Per variant: the call's one-way delay (p50, p95) and loss, the interactive exchange's RTT
(p50, p95) and loss, the call's received rate (its guaranteed rate held: the rate it was
sent at), and the backhaul's use by the downloads. Medians of ROUNDS. Plus what the edge
refused: A placing B's connection (403), and the time an edge restart costs a router's
placements is measured by tests/e2e/test_isp_router.py (printed there).
Environment: BENCH_ISP_ROUNDS (3), BENCH_ISP_SECONDS (10). JSON in out/bench-isp.json;
`--table` prints the last run's table again.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from homelab import _kill_pid, ns_cmd  # noqa: E402
from homelab.isp_edge import (EDGE_ADDR, EDGE_PORT, SERVER_ADDR, EdgeLab, household_public,  # noqa: E402
                              in_netns)
from homelab.latency import percentile  # noqa: E402
from homework.ispedge_client import EdgeClient, EdgeEndpoint, EdgeError  # noqa: E402

BACKHAUL_KBIT = 20000
LINE_KBIT = 20000
GUARANTEED_KBIT = 4000
CALL_PPS, CALL_SIZE = 160, 1200          # 1.5 Mbit/s of media
CALL_KBIT = CALL_PPS * CALL_SIZE * 8 / 1000
ROUNDS = int(os.environ.get("BENCH_ISP_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_ISP_SECONDS", "10"))
WARM_S = 4
MEDIA_PORT, MEDIA_SPORT, ECHO_PORT, ECHO_SPORT = 5004, 40000, 7007, 41000
IPERF_PORT = 5201
OUT = REPO / "out" / "bench-isp.json"
PROBE = REPO / "tests" / "homelab" / "callprobe.py"
VARIANTS = ("one queue", "edge", "edge+placed")
_KBITS = re.compile(r"([0-9.]+) Kbits/sec\s+receiver")


def popen(ns: str, cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(ns_cmd(ns, cmd), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)


class Client(EdgeClient):
    def __init__(self, lab: EdgeLab, name: str):
        super().__init__(EdgeEndpoint(f"https://{EDGE_ADDR}:{EDGE_PORT}", **lab.issue(name)))
        self.netns = lab.ns(name)

    def _call(self, method, path, body=None):
        with in_netns(self.netns):
            return super()._call(method, path, body)


def one_run(lab: EdgeLab, variant: str, a: Client) -> dict:
    lab.reconfigure(serving=variant != "one queue")
    a_pub = household_public(1)
    if variant == "edge+placed":
        a.place("udp", SERVER_ADDR, MEDIA_SPORT, a_pub, MEDIA_PORT, "high")
        a.place("udp", a_pub, ECHO_SPORT, SERVER_ADDR, ECHO_PORT, "high")
    # a one-off iperf3 server per household and run (a server left busy by a stuck test
    # would hang the next run's client)
    servers = [popen(lab.ns(n), ["iperf3", "-s", "-1", "-p", str(IPERF_PORT)]) for n in ("a", "b", "c")]
    for n in ("a", "b", "c"):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not lab.household(
                n, ["ss", "-Hltn", f"sport = :{IPERF_PORT}"], check=False).stdout.strip():
            time.sleep(0.05)
    bulk = []
    for n, streams in ((1, 2), (2, 4), (3, 4)):          # A's own download, B's, C's
        bulk.append(popen(lab.internet_ns, ["iperf3", "-c", household_public(n), "-p", str(IPERF_PORT),
                                            "-t", str(int(WARM_S + SECONDS + 2)), "-P", str(streams), "-f", "k",
                                            "--connect-timeout", "5000"]))
    time.sleep(WARM_S)
    recv = popen(lab.ns("a"), ["python3", str(PROBE), "recv", "--port", str(MEDIA_PORT), "--seconds",
                               str(SECONDS + 1.5)])
    time.sleep(0.3)
    send = popen(lab.internet_ns, ["python3", str(PROBE), "send", "--dst", a_pub, "--src", SERVER_ADDR,
                                   "--port", str(MEDIA_PORT),
                                   "--sport", str(MEDIA_SPORT), "--pps", str(CALL_PPS), "--size", str(CALL_SIZE),
                                   "--seconds", str(SECONDS)])
    echo = popen(lab.ns("a"), ["python3", str(PROBE), "echo", "--dst", SERVER_ADDR, "--port", str(ECHO_PORT),
                               "--sport", str(ECHO_SPORT), "--interval", "0.1", "--seconds", str(SECONDS)])
    media = json.loads(recv.communicate(timeout=SECONDS + 60)[0] or "{}")
    inter = json.loads(echo.communicate(timeout=SECONDS + 60)[0] or "{}")
    send.wait(30)
    bulk_kbit = 0.0
    for p in bulk:
        try:
            out = p.communicate(timeout=SECONDS + WARM_S + 60)[0]
        except subprocess.TimeoutExpired:
            _kill_pid(p.pid, 3)
            out = ""
        rates = _KBITS.findall(out)
        bulk_kbit += float(rates[-1]) if rates else 0.0
    for p in servers:
        _kill_pid(p.pid, 3)
    sent = CALL_PPS * SECONDS
    high = a.queues()["queues"]["high"]["packets"] if variant != "one queue" else 0
    return {"variant": variant,
            "call_p50_ms": percentile(media.get("delays_ms", []), 50),
            "call_p95_ms": percentile(media.get("delays_ms", []), 95),
            "call_loss_pct": 100 * max(0.0, sent - media.get("received", 0)) / sent,
            "call_kbit": media.get("kbit_s", 0.0),
            "echo_p50_ms": percentile(inter.get("rtts_ms", []), 50),
            "echo_p95_ms": percentile(inter.get("rtts_ms", []), 95),
            "echo_loss_pct": 100 * inter.get("lost", 0) / max(1, inter.get("sent", 1)),
            "bulk_pct": 100 * bulk_kbit / BACKHAUL_KBIT, "high_packets": high}


def refused_others(lab: EdgeLab, a: Client, b: Client) -> dict:
    """A may neither place nor see B's connection."""
    lab.reconfigure(serving=True)
    b.place("udp", SERVER_ADDR, 40100, household_public(2), 5004, "high")
    try:
        a.place("udp", SERVER_ADDR, 40100, household_public(2), 5004, "high")
        placed = "accepted"
    except EdgeError as exc:
        placed = f"{exc.status}"
    seen = any(p["dst"] == household_public(2) for p in a.placements()["placements"])
    return {"a_places_b": placed, "a_sees_b": seen}


def table(result: dict) -> None:
    print(f"Three households behind one edge; backhaul {BACKHAUL_KBIT / 1000:.0f} Mbit/s downstream, lines "
          f"{LINE_KBIT / 1000:.0f} Mbit/s each; A's call {CALL_KBIT / 1000:.1f} Mbit/s media + UDP exchange every "
          f"100 ms, while A downloads (2 streams) and B and C download (4 each). A's guaranteed rate "
          f"{GUARANTEED_KBIT / 1000:.0f} Mbit/s. Medians of {result['rounds']} rounds of {result['seconds']:.0f} s.")
    print()
    print("| variant | call delay p50 | call delay p95 | call loss | call received | exchange RTT p50 | exchange RTT p95 "
          "| exchange loss | downloads' use of the backhaul |")
    print("|---|---|---|---|---|---|---|---|---|")

    def ms(v):
        return "-" if v is None else f"{v:.1f} ms"
    for v in VARIANTS:
        r = result["variants"][v]
        print(f"| {v} | {ms(r['call_p50_ms'])} | {ms(r['call_p95_ms'])} | {r['call_loss_pct']:.1f}% | "
              f"{r['call_kbit'] / 1000:.2f} Mbit/s | {ms(r['echo_p50_ms'])} | {ms(r['echo_p95_ms'])} | "
              f"{r['echo_loss_pct']:.1f}% | {r['bulk_pct']:.0f}% |")
    o = result["others"]
    print()
    print(f"A placing B's connection: {'refused, HTTP ' + o['a_places_b'] if o['a_places_b'] != 'accepted' else 'ACCEPTED'}; "
          f"A's listing shows B's: {'yes' if o['a_sees_b'] else 'no'}.")


def median_of(runs: list[dict]) -> dict:
    keys = [k for k in runs[0] if k != "variant"]
    return {k: statistics.median([r[k] for r in runs if r[k] is not None]) if any(r[k] is not None for r in runs)
            else None for k in keys}


def main() -> int:
    if "--table" in sys.argv:
        table(json.loads(OUT.read_text()))
        return 0
    households = {"a": {"line_kbit": LINE_KBIT, "guaranteed_kbit": GUARANTEED_KBIT},
                  "b": {"line_kbit": LINE_KBIT, "guaranteed_kbit": GUARANTEED_KBIT},
                  "c": {"line_kbit": LINE_KBIT, "guaranteed_kbit": GUARANTEED_KBIT}}
    with EdgeLab(households, backhaul_kbit=BACKHAUL_KBIT, tap_ports=True) as lab:
        servers = [popen(lab.internet_ns, ["python3", str(PROBE), "echo-server", "--port", str(ECHO_PORT),
                                           "--bind", SERVER_ADDR])]
        try:
            time.sleep(1)
            a, b = Client(lab, "a"), Client(lab, "b")
            runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
            for r in range(ROUNDS):
                for v in VARIANTS:
                    runs[v].append(one_run(lab, v, a))
                    print(f"round {r + 1} {v}: {runs[v][-1]}", file=sys.stderr, flush=True)
            result = {"rounds": ROUNDS, "seconds": SECONDS,
                      "variants": {v: median_of(runs[v]) for v in VARIANTS}, "runs": runs,
                      "others": refused_others(lab, a, b)}
        finally:
            for p in servers:
                _kill_pid(p.pid, 3)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
