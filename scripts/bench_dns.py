#!/usr/bin/env python3
"""DNS benchmark (issue 5): dnsperf from a device namespace through the interception path
(OVS -> nftables -> homework-dnsd -> dnsmasq) against dnsperf from the same namespace
straight at the same dnsmasq (OVS -> dnsmasq on the gateway address, port 5353), in the
same run, rounds interleaved; then the same with 10,000 policy rules loaded.

Throughput: dnsperf -c 10 for THROUGHPUT_S seconds (qps, mean latency at saturation).
Latency: a paced run (-Q LATENCY_QPS, -v) for p50/p99 per query. Medians of ROUNDS rounds.
Informative ceiling: dnsperf inside the router namespace straight at 127.0.0.1:5353.

Every run plays a query file of names nobody asked before, once (dnsperf -n 1): a file of
a few names played in a loop measured caches (dnsd's, dnsmasq's) and never the learning
the controller does for each new name. The router's dnsmasq answers every *.fresh.test
name itself (--address), the same work on both paths.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests"), str(Path(__file__).resolve().parents[1] / "nox-modules")]

from homelab import ns_cmd  # noqa: E402
from homelab.dns import DnsLab, dns_home  # noqa: E402

ROUNDS = 3
THROUGHPUT_S = 5
LATENCY_S = 3
LATENCY_QPS = 2000
RULES = 10_000
FRESH_ADDR = "203.0.113.91"
MAX_QPS = 40_000          # names per throughput file: enough for THROUGHPUT_S s at this rate


class FreshNames:
    """Query files of names never asked before: run k gets r<k>-<i>.fresh.test."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.runs = 0

    def file(self, count: int) -> Path:
        self.runs += 1
        path = self.directory / f"fresh-{self.runs}.txt"
        path.write_text("".join(f"r{self.runs}-{i}.fresh.test A\n" for i in range(count)))
        return path


def dnsperf(run, server: str, port: int, qfile: Path, seconds: int, qps: int | None = None) -> dict:
    cmd = ["dnsperf", "-s", server, "-p", str(port), "-d", str(qfile), "-n", "1", "-c", "10",
           "-l", str(seconds), "-t", "2"]
    if qps:
        cmd += ["-Q", str(qps), "-v"]
    out = run(cmd).stdout
    res = {"qps": 0.0, "mean_ms": 0.0, "lost": 0}
    lat = []
    for line in out.splitlines():
        s = line.strip()
        if s.startswith("Queries per second:"):
            res["qps"] = float(s.split()[-1])
        elif s.startswith("Average Latency (s):"):
            res["mean_ms"] = float(s.split()[3]) * 1000
        elif s.startswith("Queries lost:"):
            res["lost"] = int(s.split()[2])
        elif qps and s.startswith(">") and len(s.split()) >= 5:
            try:
                lat.append(float(s.split()[-1]) * 1000)
            except ValueError:
                pass
    if lat:
        lat.sort()
        res["p50_ms"] = lat[len(lat) // 2]
        res["p99_ms"] = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    return res


def med(rows: list[dict], key: str) -> float:
    vals = [r[key] for r in rows if key in r]
    return statistics.median(vals) if vals else float("nan")


def main() -> None:
    t0 = time.monotonic()
    with dns_home() as home:
        lab = DnsLab(home)
        dev = lab.join("bench")
        gateway = dev.default_gateway()
        lab.start(captive=False, dnsmasq_args=(f"--listen-address={gateway}", f"--address=/fresh.test/{FRESH_ADDR}"))
        fresh = FreshNames(home.dir)
        assert lab.dig(dev, "check.fresh.test") == ("NOERROR", [FRESH_ADDR])

        def in_dev(cmd):
            return dev.run(cmd, timeout=120)

        def in_router(cmd):
            return subprocess.run(ns_cmd(home.router_ns, cmd), capture_output=True, text=True, timeout=120)

        results: dict[str, list[dict]] = {"peer": [], "ours": [], "ours_10k": [], "ceiling": []}
        lat: dict[str, list[dict]] = {"peer": [], "ours": [], "ours_10k": []}

        def measure(label, server, port, run=in_dev, latency=True):
            results[label].append(dnsperf(run, server, port, fresh.file(MAX_QPS * THROUGHPUT_S), THROUGHPUT_S))
            if latency:
                lat[label].append(dnsperf(run, server, port, fresh.file(LATENCY_QPS * LATENCY_S + 100), LATENCY_S,
                                          LATENCY_QPS))

        for _ in range(ROUNDS):
            measure("peer", gateway, 5353)
            measure("ours", gateway, 53)
        # 10,000 rules: half the device's own, half household-wide; queried names stay allowed
        half = RULES // 2
        for start in range(0, half, 500):      # the control socket takes requests of modest size
            lab.homework("call", "import-dns-rules", f"mac={dev.mac}", "action=deny",
                         "domains=" + ",".join(f"blocked{i}.example.net" for i in range(start, start + 500)))
            lab.homework("call", "import-dns-rules", "action=deny",
                         "domains=" + ",".join(f"ads{i}.tracker.test" for i in range(start, start + 500)))
        for _ in range(ROUNDS):
            measure("peer", gateway, 5353)
            measure("ours_10k", gateway, 53)
            measure("ceiling", "127.0.0.1", 5353, run=in_router, latency=False)
        stats = lab.homework("--json", "dns-stats")

    peer_q, ours_q, ours10_q = med(results["peer"], "qps"), med(results["ours"], "qps"), med(results["ours_10k"], "qps")
    print(f"dnsperf -c 10 -n 1, new names every run, {THROUGHPUT_S} s runs, medians of {ROUNDS} "
          f"(peer: {len(results['peer'])} runs)")
    print(f"{'path':44} {'qps':>9} {'mean ms':>8} {'p50 ms':>7} {'p99 ms':>7} {'lost':>5}")
    rows = [("peer: device -> OVS -> dnsmasq (same dnsmasq)", "peer"),
            ("ours: device -> OVS -> nft -> dnsd -> dnsmasq", "ours"),
            (f"ours, {RULES:,} rules loaded", "ours_10k")]
    for title, key in rows:
        print(f"{title:44} {med(results[key], 'qps'):9.0f} {med(results[key], 'mean_ms'):8.3f} "
              f"{med(lat[key], 'p50_ms'):7.3f} {med(lat[key], 'p99_ms'):7.3f} {int(med(results[key], 'lost')):5d}")
    print(f"{'ceiling: router ns -> dnsmasq (no OVS)':44} {med(results['ceiling'], 'qps'):9.0f} "
          f"{med(results['ceiling'], 'mean_ms'):8.3f}")
    print(f"ratio qps ours/peer: {ours_q / peer_q:.2f}   with {RULES:,} rules: {ours10_q / peer_q:.2f}   (aim >= 0.8)")
    for key in ("ours", "ours_10k"):
        added50 = med(lat[key], "p50_ms") - med(lat["peer"], "p50_ms")
        added99 = med(lat[key], "p99_ms") - med(lat["peer"], "p99_ms")
        print(f"added latency ({key}) at {LATENCY_QPS} qps: p50 {added50 * 1000:+.0f} us, p99 {added99 * 1000:+.0f} us"
              f"   (aim: p99 + <= 1 ms)")
    print(f"dnsd/controller counters: {' '.join(stats.split())[:400]}")
    print(f"bench_dns: {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
