#!/usr/bin/env python3
"""IPv6 against IPv4 through the same router: one home with [ipv6] on and DNS
interception, one permitted device with a SLAAC address in its own /64, and the same
measurements over each family, in alternating rounds (v4 first, then v6 first):

  new connections/s  wrk -H 'Connection: close' to lighttpd in the emulated internet
                     (its own port per run, so no run reuses another's learned entries)
  bulk TCP           iperf3 device -> internet
  DNS                dnsperf from the device to the router's .1 and to its ::1, both
                     answered by homework-dnsd (names nobody asked before)

Aim: IPv6 at least 0.9x IPv4. Medians of BENCH_IPV6_ROUNDS rounds (default 3).
"""
from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests"), str(REPO / "nox-modules")]

import bench_dns as bd  # noqa: E402
import bench_routing as br  # noqa: E402
from homelab import LAN6_SITE, WEB6_ADDR, WEB_ADDR  # noqa: E402
from homelab.dns import NEW_ADDR, NEW_DOMAIN, DnsLab, dns_home  # noqa: E402
from homelab.routing import wait_until  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_IPV6_ROUNDS", "3"))
DNS_QUERIES = 20_000
IPERF6_PORT = 5203


def start_servers(home) -> None:
    """lighttpd on both families and every run port, iperf3 on both."""
    conf = home.dir / "lighttpd-bench6.conf"
    sockets = "".join(f'$SERVER["socket"] == "{a}:{p}" {{ }}\n'
                      for p in br.RUN_PORTS for a in (WEB_ADDR, f"[{WEB6_ADDR}]"))
    conf.write_text(f'server.document-root = "{home.dir / "www"}"\nserver.bind = "{WEB_ADDR}"\n'
                    f'server.port = {br.HTTP_PORT}\nserver.pid-file = "{home.dir}/lighttpd-bench6.pid"\n'
                    'server.max-connections = 4096\nserver.max-keep-alive-requests = 0\n'
                    'server.errorlog = "/dev/null"\nmimetype.assign = (".html" => "text/html")\n' + sockets)
    home.internet_popen(["lighttpd", "-D", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for addr, port in ((WEB_ADDR, 5201), (WEB6_ADDR, IPERF6_PORT)):
        home.internet_popen(["iperf3", "-s", "-B", addr, "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_until(lambda: home.internet(["ss", "-Hltn", f"sport = :{br.HTTP_PORT}"]).stdout.strip(), 10, "lighttpd")


def conn_rate(dev, host: str) -> float | None:
    url = f"http://{host}:{br.fresh_port()}/index.html"
    r = dev.run(["wrk", "-t", "1", "-c", "16", "-d", f"{br.SECONDS}s", "-H", "Connection: close", url],
                check=False, timeout=br.SECONDS + 30)
    m = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
    return float(m.group(1)) if m else None


def main() -> int:
    t0 = time.monotonic()
    results = {"v4": {"conn": [], "iperf": [], "dns": []}, "v6": {"conn": [], "iperf": [], "dns": []}}
    with dns_home(config={"ipv6": {"enabled": True, "prefix": LAN6_SITE},
                          "routing": {"flow_stats_interval": 3600, "per_host_flow_limit": 200000}}) as home:
        lab = DnsLab(home)
        dev = lab.join("bench6")
        lab.start(captive=False)
        start_servers(home)
        prefix = next(d["ipv6_prefix"] for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == dev.mac)
        wait_until(dev.ipv6_global, 15, "a SLAAC address")
        router6 = str(ipaddress.IPv6Network(prefix).network_address + 1)
        gateway = dev.default_gateway()
        assert lab.dig(dev, f"check.{NEW_DOMAIN}", server=router6) == ("NOERROR", [NEW_ADDR])
        files = bd.QueryFiles(home.dir)
        targets = {"v4": (WEB_ADDR, WEB_ADDR, 5201, gateway), "v6": (f"[{WEB6_ADDR}]", WEB6_ADDR, IPERF6_PORT, router6)}
        conn_rate(dev, WEB_ADDR)                      # warm-up, not recorded
        for r in range(ROUNDS):
            for fam in (("v4", "v6") if r % 2 == 0 else ("v6", "v4")):
                host, addr, iport, dns = targets[fam]
                results[fam]["conn"].append(conn_rate(dev, host))
                results[fam]["iperf"].append(br.iperf(dev, addr, iport))
                run = bd.dnsperf(lambda cmd: dev.run(cmd, timeout=bd.MAX_RUN_S + 60), dns, 53,
                                 files.file("distinct", DNS_QUERIES), bd.MAX_RUN_S)
                results[fam]["dns"].append(run["qps"] or None)
                br.say(f"round {r + 1} {fam}: conn/s {results[fam]['conn'][-1]} iperf {results[fam]['iperf'][-1]} "
                       f"dns qps {results[fam]['dns'][-1]}")
    print(f"\nIPv6 against IPv4 through the router, medians of {ROUNDS} alternating rounds "
          f"(aim: v6 at least 0.9x v4)")
    print(f"{'':22} {'IPv4':>10} {'IPv6':>10} {'v6 / v4':>8}")
    for key, name in (("conn", "new connections/s"), ("iperf", "iperf3 TCP Mb/s"), ("dns", "DNS qps (dnsd)")):
        v4, v6 = br.median(results["v4"][key]), br.median(results["v6"][key])
        print(f"{name:22} {v4 or 0:10.0f} {v6 or 0:10.0f} {br.ratio(v6, v4) or 0:8.2f}")
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-ipv6.json").write_text(json.dumps(results, indent=1))
    br.say(f"done in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
