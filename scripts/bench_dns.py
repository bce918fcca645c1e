#!/usr/bin/env python3
"""DNS benchmark: dnsperf from a device namespace through the interception
path (OVS -> nftables -> homework-dnsd -> the validating resolver, unbound -> the upstream
resolver) against dnsperf from the same namespace straight at the router's dnsmasq (OVS ->
dnsmasq on the gateway address, port 5353, which forwards to the same upstream), in the same
run, rounds alternating which side goes first; then the same with 10,000 policy rules
loaded. A third side, "direct", is dnsd without the resolver ([dns] resolver = "": it asks
the upstream itself and nothing is validated), restarted for its turns: what the
resolver's hop costs. The upstream's names are not signed, so no side checks a signature
here (scripts/bench_resolver.py measures validation).

Two workloads, each a file played once (dnsperf -n 1):
  distinct: DISTINCT names nobody asked before (no cache can help; the controller learns each);
  mix:      a home's mix: 80% of queries to 200 popular names, 20% names nobody asked before.
Throughput: dnsperf -c 10 over the whole file (qps, mean latency at saturation).
Latency: a paced run (-Q LATENCY_QPS, -v) of the same workload for p50/p99 per query.
Medians of ROUNDS rounds; ratio = ours/peer qps; added = ours - peer latency.

The upstream is the emulated internet's dnsmasq, which answers every name under NEW_DOMAIN.
"""
from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests"), str(Path(__file__).resolve().parents[1] / "nox-modules")]

from homelab.dns import NEW_ADDR, NEW_DOMAIN, DnsLab, dns_home  # noqa: E402

ROUNDS = 3
DISTINCT = 50_000
LATENCY_S = 5
LATENCY_QPS = 2000
RULES = 10_000
POPULAR = 200
POPULAR_SHARE = 0.8
MAX_RUN_S = 60            # guard: a throughput run plays its whole file unless this ends it


class QueryFiles:
    """Query files; every new name is r<run>-<i>.NEW_DOMAIN, so no run repeats another's."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.runs = 0
        self.rng = random.Random(11)

    def file(self, workload: str, count: int) -> Path:
        self.runs += 1
        path = self.directory / f"{workload}-{self.runs}.txt"
        lines = []
        for i in range(count):
            if workload == "mix" and self.rng.random() < POPULAR_SHARE:
                lines.append(f"p{self.rng.randrange(POPULAR)}.pop.{NEW_DOMAIN} A\n")
            else:
                lines.append(f"r{self.runs}-{i}.{NEW_DOMAIN} A\n")
        path.write_text("".join(lines))
        return path


def dnsperf(run, server: str, port: int, qfile: Path, seconds: int, qps: int | None = None,
            mode: str = "udp", extra: tuple = ()) -> dict:
    """mode: udp, tcp, dot or doh (dnsperf's -m); extra: more arguments (-O doh-uri=...)."""
    cmd = ["dnsperf", "-m", mode, "-s", server, "-p", str(port), "-d", str(qfile), "-n", "1", "-c", "10",
           "-l", str(seconds), "-t", "2", *extra]
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
        lab.start(captive=False, dnsmasq_args=(f"--listen-address={gateway}",))
        files = QueryFiles(home.dir)
        assert lab.dig(dev, f"check.{NEW_DOMAIN}") == ("NOERROR", [NEW_ADDR])

        def in_dev(cmd):
            return dev.run(cmd, timeout=MAX_RUN_S + 60)

        # results[(side, workload, rules)] = [runs]; side: peer (dnsmasq direct) or ours
        thr: dict[tuple, list[dict]] = {}
        lat: dict[tuple, list[dict]] = {}

        mode = {"dnsd": "ours"}

        def measure(side: str, workload: str, rules: int):
            if side in ("ours", "direct") and mode["dnsd"] != side:
                lab.restart_dnsd(**({"resolver": ""} if side == "direct" else {}))
                mode["dnsd"] = side
                assert lab.dig(dev, f"check.{NEW_DOMAIN}") == ("NOERROR", [NEW_ADDR])
            port = 5353 if side == "peer" else 53
            key = (side, workload, rules)
            thr.setdefault(key, []).append(dnsperf(in_dev, gateway, port, files.file(workload, DISTINCT), MAX_RUN_S))
            lat.setdefault(key, []).append(dnsperf(in_dev, gateway, port, files.file(workload, LATENCY_QPS * LATENCY_S),
                                                   LATENCY_S, LATENCY_QPS))

        def rounds(rules: int):
            for r in range(ROUNDS):
                for workload in ("distinct", "mix"):
                    for side in (("peer", "ours", "direct") if r % 2 == 0 else ("direct", "ours", "peer")):
                        measure(side, workload, rules)

        rounds(0)
        # 10,000 rules: half the device's own, half household-wide; queried names stay allowed
        half = RULES // 2
        for start in range(0, half, 500):      # the control socket takes requests of modest size
            lab.homework("call", "import-dns-rules", f"mac={dev.mac}", "action=deny",
                         "domains=" + ",".join(f"blocked{i}.example.net" for i in range(start, start + 500)))
            lab.homework("call", "import-dns-rules", "action=deny",
                         "domains=" + ",".join(f"ads{i}.tracker.test" for i in range(start, start + 500)))
        rounds(RULES)
        stats = lab.homework("--json", "dns-stats")

    print(f"dnsperf -c 10 -n 1: {DISTINCT:,} queries per throughput run; latency at {LATENCY_QPS} qps for "
          f"{LATENCY_S} s; medians of {ROUNDS} rounds, peer and ours alternating")
    print("peer: device -> OVS -> dnsmasq (-> upstream); ours: device -> OVS -> nft -> dnsd -> unbound (-> upstream);"
          " direct: dnsd without the resolver (-> upstream)")
    print(f"{'workload':44} {'side':6} {'qps':>8} {'mean ms':>8} {'p50 ms':>7} {'p99 ms':>7} {'lost':>5} "
          f"{'ratio':>6} {'added p99':>10}")
    worst_ratio, worst_added = float("inf"), float("-inf")
    for rules in (0, RULES):
        for workload, title in (("distinct", f"{DISTINCT:,} distinct new names"),
                                ("mix", f"mix {POPULAR_SHARE:.0%} of {POPULAR} popular / new")):
            label = title + (f", {rules:,} rules" if rules else "")
            peer, ours, direct = ("peer", workload, rules), ("ours", workload, rules), ("direct", workload, rules)
            ratio = med(thr[ours], "qps") / med(thr[peer], "qps")
            added = (med(lat[ours], "p99_ms") - med(lat[peer], "p99_ms")) * 1000
            worst_ratio, worst_added = min(worst_ratio, ratio), max(worst_added, added)
            for key in (peer, ours, direct):
                r = med(thr[key], "qps") / med(thr[peer], "qps")
                a = (med(lat[key], "p99_ms") - med(lat[peer], "p99_ms")) * 1000
                print(f"{label:44} {key[0]:6} {med(thr[key], 'qps'):8.0f} {med(thr[key], 'mean_ms'):8.3f} "
                      f"{med(lat[key], 'p50_ms'):7.3f} {med(lat[key], 'p99_ms'):7.3f} {int(med(thr[key], 'lost')):5d}"
                      + (f" {r:6.2f} {a:+8.0f} us" if key is not peer else ""))
    print(f"worst ratio ours/peer: {worst_ratio:.2f} (aim >= 0.9); worst added p99: {worst_added:+.0f} us (aim <= 1000)")
    print(f"dnsd/controller counters: {' '.join(stats.split())[:600]}")
    print(f"bench_dns: {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
