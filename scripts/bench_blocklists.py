#!/usr/bin/env python3
"""Blocklist benchmark: dnsperf from a device namespace through the interception
path (OVS -> nftables -> homework-dnsd -> the upstream resolver) with a 1,000,000-name
household blocklist in force against the same with no list, in the same run, rounds
alternating which goes first. The queried names are not on the list, so every query pays
the full lookup (a hash per suffix) and, the device now being restricted, the CNAME check
of its answers. Also: how long dnsd takes to load the list (its log) and how long the
controller takes to fetch, parse and store it.

Workload: a home's mix, 80% of queries to 200 popular names, 20% names nobody asked before,
one file played once per run (dnsperf -n 1 -c 10). Medians of ROUNDS rounds; ratio =
with/without qps (aim >= 0.95).
"""
from __future__ import annotations

import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests"), str(Path(__file__).resolve().parents[1] / "nox-modules")]

from bench_dns import dnsperf  # noqa: E402
from homelab.dns import BLOCKED_WEB, NEW_ADDR, NEW_DOMAIN, DnsLab, dns_home  # noqa: E402

ROUNDS = 3
QUERIES = 200_000
SETTLE_S = 3             # after a list change: the controller's parse and resync end first
NAMES = 1_000_000
POPULAR = 200
POPULAR_SHARE = 0.8
MAX_RUN_S = 60


def list_file(path: Path) -> None:
    """A hosts file of NAMES names under list.test (never queried), like the big public lists."""
    rng = random.Random(5)
    with open(path, "w") as f:
        f.write("# bench list\n")
        for i in range(NAMES):
            f.write(f"0.0.0.0 {rng.choice(('ads', 'track', 'pixel', 'metrics'))}{i}.{rng.randrange(50_000)}.list.test\n")


def main() -> None:
    t0 = time.monotonic()
    rng = random.Random(11)
    with dns_home(components=("dhcp", "routing", "dns", "blocklists")) as home:
        lab = DnsLab(home).start(captive=False)
        dev = lab.join("bench")
        gateway = dev.default_gateway()
        assert lab.dig(dev, f"check.{NEW_DOMAIN}") == ("NOERROR", [NEW_ADDR])
        list_file(lab.dir / "blocked-www" / "big.txt")
        url = f"http://{BLOCKED_WEB}/big.txt"
        runs = 0

        def queries() -> Path:
            nonlocal runs
            runs += 1
            path = home.dir / f"mix-{runs}.txt"
            path.write_text("".join(f"p{rng.randrange(POPULAR)}.pop.{NEW_DOMAIN} A\n" if rng.random() < POPULAR_SHARE
                                    else f"r{runs}-{i}.{NEW_DOMAIN} A\n" for i in range(QUERIES)))
            return path

        def dnsd_rss() -> list[int]:
            status = (Path("/proc") / str(lab.dnsd.pid) / "status").read_text()
            return [int(kb) for kb in re.findall(r"VmRSS:\s+(\d+) kB", status)]

        adds: list[float] = []
        rss: list[int] = []       # what loading the list added to dnsd's resident memory, kB
        list_id = None

        def set_list(on: bool) -> None:
            nonlocal list_id
            if on:
                before = dnsd_rss()
                t = time.monotonic()
                lab.homework("blocklist", "add", url)
                adds.append(time.monotonic() - t)
                rss.extend(after - b for after, b in zip(dnsd_rss(), before, strict=True))
                list_id = max(int(i) for i in re.findall(r'"id": (\d+)', lab.homework("--json", "blocklist", "list")))
            elif list_id is not None:
                lab.homework("blocklist", "remove", str(list_id))
                list_id = None

        results: dict[bool, list[dict]] = {False: [], True: []}
        for r in range(ROUNDS):
            for on in ((False, True) if r % 2 == 0 else (True, False)):
                set_list(on)
                time.sleep(SETTLE_S)
                results[on].append(dnsperf(lambda cmd: dev.run(cmd, timeout=MAX_RUN_S + 60), gateway, 53, queries(),
                                           MAX_RUN_S))
                set_list(False)
        stats = lab.homework("--json", "dns-stats")
        loads = [int(ms) for ms in re.findall(r"names loaded in (\d+) ms", (lab.dir / "dnsd.log").read_text())]

    def med(rows, key):
        return statistics.median(r[key] for r in rows)

    print(f"dnsperf -c 10 -n 1: {QUERIES:,} queries per run ({POPULAR_SHARE:.0%} of {POPULAR} popular names, "
          f"the rest new); medians of {ROUNDS} rounds, with and without alternating")
    print(f"{'':28} {'qps':>8} {'mean ms':>8} {'lost':>5}")
    for on in (False, True):
        label = f"{NAMES:,}-name list" if on else "no list"
        print(f"{label:28} {med(results[on], 'qps'):8.0f} {med(results[on], 'mean_ms'):8.3f} "
              f"{int(med(results[on], 'lost')):5d}")
    ratio = med(results[True], "qps") / med(results[False], "qps")
    print(f"ratio with/without: {ratio:.3f} (aim >= 0.95)")
    print(f"dnsd list load: median {statistics.median(loads) if loads else float('nan'):.0f} ms over {len(loads)} loads; "
          f"controller add (fetch, parse, store, push): median {statistics.median(adds):.1f} s")
    if rss:
        print(f"dnsd resident memory added by loading the list: median {statistics.median(rss) / 1024:.0f} MiB")
    print(f"dnsd/controller counters: {' '.join(stats.split())[:400]}")
    print(f"bench_blocklists: {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
