#!/usr/bin/env python3
"""The resolver behind homework-dnsd, measured with dnsperf from a device namespace of one
emulated home, every side in the same run, rounds alternating their order; medians.

A. DNSSEC validation (names of the emulated internet's signed zone: each new one is a
   signed wildcard answer with its NSEC3 proof, two signatures to check):
     ours          device -> OVS -> nft -> dnsd -> unbound, validating -> nsd
     ours, off     the same with validation off for that zone (the household's switch)
     unbound       unbound alone, validating, asked directly (same config, same nsd)
     dnsmasq       dnsmasq --dnssec alone, validating, asked directly (same nsd, same anchor)
   on never-seen names (no cache can help) and on cached ones (200 names asked again).
B. The upstream over TLS against plain: ours with the internet's resolver (unbound) asked
   over TLS (853, certificate checked) against the same resolver asked in plain DNS.
C. DNS to the router over TLS (853) and HTTPS (the Guest Board's lighttpd, HTTP/2, SCGI to
   dnsd) against port 53, cached and never-seen names. DNS over HTTPS is driven by nghttp2's
   h2load, not dnsperf: dnsperf 2.10's DoH client keeps one answer buffer per connection, and
   when two streams' frames interleave (lighttpd ends each stream with an empty DATA frame
   of its own) it glues two answers into one and counts the other query lost.

Throughput: dnsperf -c 10 playing a file once (-n 1); latency: a paced run (-Q LATENCY_QPS)
per query, p50/p99. Ratio = side / reference qps.
"""
from __future__ import annotations

import base64
import os
import random
import statistics
import struct
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests"), str(Path(__file__).resolve().parents[1] / "nox-modules"),
                str(Path(__file__).resolve().parent)]

from bench_dns import dnsperf, med  # noqa: E402
from homelab import new_run_id  # noqa: E402
from homelab import dnssec  # noqa: E402
from homelab.dns import DOT_NAME, DOT_UPSTREAM, NEW_ADDR, DnsLab, dns_config  # noqa: E402
from homelab.web import Web, web_home  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 3))
NEW = int(os.environ.get("BENCH_NAMES", 20_000))      # never-seen names per throughput run
CACHED = NEW            # queries per cached run, over POPULAR names
POPULAR = 200
LATENCY_S = 5
LATENCY_QPS = 1000
MAX_RUN_S = 60
TABLES = os.environ.get("BENCH_RESOLVER_TABLES", "ABC").upper()   # which of A, B, C to run (C needs A's port 53)
ZONE = dnssec.NEW_SIGNED            # *.new.signed.dnssec.test: every name exists, signed
UNBOUND_PORT, DNSMASQ_PORT = 5336, 5354
DOH_STREAMS = 8                     # at once per connection: what lighttpd allows (SETTINGS)
LOST_AFTER_S = 2                    # dnsperf's -t: an answer later than this counts as lost


class Files:
    def __init__(self, directory: Path):
        self.directory, self.runs = directory, 0

    def new(self, count: int) -> Path:
        self.runs += 1
        path = self.directory / f"new-{self.runs}.txt"
        path.write_text("".join(f"r{self.runs}-{i}.{ZONE} A\n" for i in range(count)))
        return path

    def cached(self, count: int) -> Path:
        self.runs += 1
        rng = random.Random(self.runs)
        path = self.directory / f"cached-{self.runs}.txt"
        path.write_text("".join(f"p{rng.randrange(POPULAR)}.{ZONE} A\n" for _ in range(count)))
        return path


def wait(what: str, check, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def doh_path(name: str) -> str:
    """/dns-query?dns= with the A query for `name` (RFC 8484 GET: base64url, id 0)."""
    wire = struct.pack(">6H", 0, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0" + struct.pack(">2H", 1, 1)
    return "/dns-query?dns=" + base64.urlsafe_b64encode(wire).decode().rstrip("=")


def h2load(dev, gw: str, qfile: Path, seconds: int, qps: int | None = None, clients: int = 10) -> dict:
    """DNS over HTTPS as dnsperf measures the other doors: `clients` HTTP/2 connections (one
    h2load each, so that every connection asks its own names), DOH_STREAMS requests at once on
    each, the names of a dnsperf query file; paced at `qps` in all when given. An answer that
    is not a 200 within LOST_AFTER_S counts as lost, as dnsperf's timeout does."""
    names = [line.split()[0] for line in qfile.read_text().splitlines() if line.strip()]
    work = qfile.with_suffix(".h2load")
    work.mkdir(exist_ok=True)
    jobs = []
    for i in range(clients):
        part = names[i::clients]
        uris, log = work / f"{i}.uris", work / f"{i}.log"
        uris.write_text("".join(f"https://{gw}{doh_path(n)}\n" for n in part))
        log.unlink(missing_ok=True)
        cmd = f"h2load -c 1 -m {DOH_STREAMS} -n {len(part)} -i {uris} --log-file={log}"
        if qps:
            cmd += f" --rps={max(1, qps // clients)}"
        jobs.append(f"timeout {seconds + LOST_AFTER_S + 30} {cmd} > {work / f'{i}.out'} 2>&1")
    dev.run(" & ".join(jobs) + " & wait", timeout=seconds + 120)
    elapsed, lat, answered = 0.0, [], 0
    for i in range(clients):
        out = (work / f"{i}.out").read_text()
        for line in out.splitlines():
            if line.startswith("finished in "):          # "493.51ms," or "2.37s,"
                took = line.split()[2].rstrip(",")
                scale = next(f for unit, f in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0)) if took.endswith(unit))
                elapsed = max(elapsed, float(took.rstrip("mus")) * scale)
        log = work / f"{i}.log"
        for row in (log.read_text().splitlines() if log.exists() else ()):
            _, status, us = row.split("\t")[:3]
            if status == "200":
                answered += 1
                lat.append(int(us) / 1000)
    lat.sort()
    on_time = sum(1 for ms in lat if ms <= LOST_AFTER_S * 1000)
    res = {"qps": answered / elapsed if elapsed else 0.0, "lost": len(names) - on_time,
           "mean_ms": statistics.fmean(lat) if lat else 0.0}
    if qps and lat:
        res["p50_ms"], res["p99_ms"] = lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    return res


def unbound_alone(lab: DnsLab, gateway: str) -> subprocess.Popen:
    """A second unbound with the router's own configuration, on the device's gateway
    address: unbound alone, validating, asking the same nsd."""
    from homework import unbound
    from homework.config import load
    base = load(lab.home.config_path)
    config = replace(base, dns_resolver=f"{gateway}:{UNBOUND_PORT}", state_dir=lab.dir / "alone",
                     dns_resolver_control=str(lab.dir / "alone.ctl"))
    unbound.write_household(config, unbound.Plan(forwards=(unbound.Forward(dnssec.AUTH_ADDR),)))
    path = unbound.prepare(config)
    path.write_text(path.read_text().replace("  access-control: ::1/128 allow\n",
                                             "  access-control: ::1/128 allow\n  access-control: 10.0.0.0/8 allow\n"))
    p = lab.home.router_popen(["unbound", "-d", "-c", str(path)], stdout=open(lab.dir / "alone.log", "ab"),
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wait("unbound alone", lambda: lab.home.router(["ss", "-Hlun", f"src {gateway}:{UNBOUND_PORT}"]).stdout.strip())
    return p


def dnsmasq_alone(lab: DnsLab, gateway: str) -> subprocess.Popen:
    """dnsmasq validating (--dnssec) with the same trust anchor, asking the same nsd."""
    ds = subprocess.run(["ldns-key2ds", "-n", "-2", str(dnssec.anchor_path(lab.dir))], capture_output=True,
                        text=True, check=True).stdout.split()
    owner, tag, alg, digest_type, digest = ds[0].rstrip("."), ds[4], ds[5], ds[6], ds[7]
    p = lab.home.router_popen(["dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", "--bind-interfaces",
                               f"--listen-address={gateway}", f"--port={DNSMASQ_PORT}", f"--server={dnssec.AUTH_ADDR}",
                               "--dnssec", "--conf-file=/usr/share/dnsmasq-base/trust-anchors.conf",   # it wants the root's
                               f"--trust-anchor={owner},{tag},{alg},{digest_type},{digest}",
                               "--cache-size=10000", "--user=root", f"--pid-file={lab.dir / 'alone-dnsmasq.pid'}",
                               "--log-facility=-"], stdout=open(lab.dir / "alone-dnsmasq.log", "ab"),
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wait("dnsmasq alone", lambda: lab.home.router(["ss", "-Hlun", f"src {gateway}:{DNSMASQ_PORT}"]).stdout.strip())
    return p


def upstream(lab: DnsLab, *args: str, state: str) -> None:
    lab.homework("dns-upstream", *args)
    view = lab.upstream_status(state, timeout=30)
    assert view["state"] == state, view


def main() -> None:
    t0 = time.monotonic()
    run_id = new_run_id()
    with web_home(config=dns_config(run_id, ("dhcp", "routing", "dns")), run_id=run_id) as home:
        home.web = Web(home).start()
        lab = DnsLab(home).start(captive=False)
        lab.start_dot_upstream()
        dev = lab.join("bench")
        gw = dev.default_gateway()
        files = Files(home.dir)
        in_dev = lambda cmd: dev.run(cmd, timeout=MAX_RUN_S + 60)  # noqa: E731

        # the router's resolver asks nsd directly (the same upstream as the sides of table A)
        lab.set_upstreams(dnssec.AUTH_ADDR)
        household = home.state_dir / "resolver" / "household.conf"
        wait("the resolver follows the lease", lambda: f"forward-addr: {dnssec.AUTH_ADDR}@53" in household.read_text())
        wait("answers", lambda: lab.dig(dev, f"check.{ZONE}") == ("NOERROR", [NEW_ADDR]))
        if "A" in TABLES:
            unbound_alone(lab, gw)
            dnsmasq_alone(lab, gw)

        sides = {  # name -> (port, dnsperf mode, extra args)
            "ours": (53, "udp", ()), "unbound": (UNBOUND_PORT, "udp", ()), "dnsmasq": (DNSMASQ_PORT, "udp", ()),
            "dot": (853, "dot", ()), "doh": (443, "doh", ()),
        }
        thr: dict[tuple, list[dict]] = {}
        lat: dict[tuple, list[dict]] = {}

        def measure(key: tuple, side: str, workload: str):
            port, mode, extra = sides[side]
            make = files.new if workload == "new" else files.cached

            def run(qfile: Path, seconds: int, qps: int | None = None) -> dict:
                if mode == "doh":
                    return h2load(dev, gw, qfile, seconds, qps)
                return dnsperf(in_dev, gw, port, qfile, seconds, qps, mode=mode, extra=extra)

            if workload == "cached":       # the popular names in every cache first
                run(files.cached(POPULAR * 5), MAX_RUN_S)
            thr.setdefault(key, []).append(run(make(NEW if workload == "new" else CACHED), MAX_RUN_S))
            lat.setdefault(key, []).append(run(make(LATENCY_QPS * LATENCY_S), LATENCY_S, LATENCY_QPS))

        def validation(on: bool):
            lab.homework("dnssec", "insecure", "remove" if on else "add", dnssec.SIGNED)

        # A and C: the router asking nsd in plain DNS
        for r in range(ROUNDS):
            for workload in ("new", "cached"):
                order = (["ours", "ours-off", "unbound", "dnsmasq"] if "A" in TABLES else ["ours"]) + \
                    (["dot", "doh"] if "C" in TABLES else [])
                for name in (order if r % 2 == 0 else order[::-1]):
                    if name == "ours-off":
                        validation(False)
                        measure(("A", "ours, off", workload), "ours", workload)
                        validation(True)
                    elif name in ("dot", "doh"):
                        measure(("C", name, workload), name, workload)
                    else:
                        measure(("A", name, workload), name, workload)
        # B: the upstream over TLS against plain, the same resolver (the internet's unbound)
        for r in range(ROUNDS if "B" in TABLES else 0):
            for how in (("plain", "tls") if r % 2 == 0 else ("tls", "plain")):
                if how == "tls":
                    upstream(lab, "custom", f"{DOT_UPSTREAM}#{DOT_NAME}", "--fallback", "none", state="encrypted")
                else:
                    lab.set_upstreams(DOT_UPSTREAM)
                    upstream(lab, "isp", state="plain")
                    wait("plain to the internet's resolver", lambda: f"forward-addr: {DOT_UPSTREAM}@53"
                         in household.read_text())
                measure(("B", how, "new"), "ours", "new")
        stats = lab.homework("--json", "dns-stats")

    def row(label: str, key: tuple, ref: tuple | None):
        q, r = med(thr[key], "qps"), (med(thr[ref], "qps") if ref else None)
        print(f"{label:48} {q:8.0f} {med(lat[key], 'p50_ms'):7.3f} {med(lat[key], 'p99_ms'):7.3f} "
              f"{int(med(thr[key], 'lost')):5d}" + (f" {q / r:6.2f}" if r else "       -"))

    print(f"dnsperf -c 10 -n 1: {NEW:,} new names / {CACHED:,} cached queries a throughput run; latency at "
          f"{LATENCY_QPS} qps for {LATENCY_S} s; medians of {ROUNDS} rounds, sides alternating")
    head = f"{'':48} {'qps':>8} {'p50 ms':>7} {'p99 ms':>7} {'lost':>5} {'ratio':>6}"
    for workload, title in (("new", "never-seen names"), ("cached", "cached names")) if "A" in TABLES else ():
        print(f"\nA. DNSSEC validation, {title} (ratio: against ours)\n{head}")
        for side in ("ours", "ours, off", "unbound", "dnsmasq"):
            row({"ours": "ours: dnsd -> unbound, validating", "ours, off": "ours, validation off for the zone",
                 "unbound": "unbound alone, validating", "dnsmasq": "dnsmasq --dnssec alone"}[side],
                ("A", side, workload), None if side == "ours" else ("A", "ours", workload))
    if "B" in TABLES:
        print(f"\nB. The upstream over TLS against plain DNS, never-seen names (ratio: against plain)\n{head}")
        row("ours, upstream plain (53)", ("B", "plain", "new"), None)
        row("ours, upstream DNS over TLS (853)", ("B", "tls", "new"), ("B", "plain", "new"))
    for workload, title in (("new", "never-seen names"), ("cached", "cached names")) if "C" in TABLES else ():
        print(f"\nC. DNS to the router over TLS and HTTPS, {title} (ratio: against port 53)\n{head}")
        row("port 53 (UDP)", ("A", "ours", workload), None)
        row("DNS over TLS (853, dnsd)", ("C", "dot", workload), ("A", "ours", workload))
        row("DNS over HTTPS (443, lighttpd -> dnsd; h2load)", ("C", "doh", workload), ("A", "ours", workload))
    print(f"\ndnsd/controller counters: {' '.join(stats.split())[:400]}")
    print(f"bench_resolver: {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
