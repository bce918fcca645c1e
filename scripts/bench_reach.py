#!/usr/bin/env python3
"""Reaching in, against its peers on the same machine in the same run:

  (a) a port forward: new connections/s (wrk, one request per connection, from the emulated
      internet to the router's WAN address) and bulk TCP into the home (iperf3), through
      Homework (the reach component's DNAT to a device behind Open vSwitch, the controller's
      flows) against a plain Linux router namespace with one nftables DNAT rule to a
      device on a veth (no OVS, no controller);
  (b) remote access: TCP throughput over WireGuard from a client in the emulated internet
      to a device at home, through Homework (wireguard-go on the router, the away
      namespace, the device's own port on the bridge) against plain wireguard-go between
      the same two namespaces (the internet and the router's) without Homework.

Both directions of bulk TCP (the client sending, then -R). Rounds alternate between the
setups; medians of RUNS rounds; ratios Homework / peer. Every connection-rate run gets a
server port of its own (a forward of a range), so no run meets an earlier run's TIME_WAIT
entries. JSON in out/bench-reach.json. Environment: BENCH_REACH_RUNS (3),
BENCH_REACH_SECONDS (3).
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

from homelab import ROUTER_WAN_ADDR, WEB_ADDR, Home, sh  # noqa: E402
from homelab.routing import permitted_device, wait_until  # noqa: E402
from homelab.wgclient import WgClient  # noqa: E402

RUNS = int(os.environ.get("BENCH_REACH_RUNS", "3"))
SECONDS = int(os.environ.get("BENCH_REACH_SECONDS", "3"))
FIRST_PORT = 9100                     # the forwarded range: one port per connection-rate run
PORTS = range(FIRST_PORT, FIRST_PORT + 4 * RUNS)
IPERF_PORT = 5201
T0 = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(x, y):
    return round(x / y, 2) if x and y else None


def lighttpd(popen, workdir: Path, bind: str) -> None:
    """One server on every port of PORTS (a tiny page), where `popen` runs it."""
    www = workdir / "www"
    www.mkdir(parents=True, exist_ok=True)
    (www / "index.html").write_text("hello\n")
    conf = workdir / "lighttpd-reach.conf"
    conf.write_text(f'server.document-root = "{www}"\nserver.bind = "{bind}"\nserver.port = {PORTS[0]}\n'
                    f'server.pid-file = "{workdir}/lighttpd-reach.pid"\nserver.max-connections = 4096\n'
                    'server.max-keep-alive-requests = 0\nserver.errorlog = "/dev/null"\n'
                    'mimetype.assign = (".html" => "text/html")\n'
                    + "".join(f'$SERVER["socket"] == "{bind}:{p}" {{ }}\n' for p in PORTS[1:]))
    popen(["lighttpd", "-D", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def conn_rate(run, address: str, port: int) -> float | None:
    r = run(["wrk", "-t", "1", "-c", "16", "-d", f"{SECONDS}s", "-H", "Connection: close",
             f"http://{address}:{port}/index.html"], check=False, timeout=SECONDS + 30)
    m = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
    return float(m.group(1)) if m else None


def iperf(run, address: str, reverse: bool = False) -> float | None:
    r = run(["iperf3", "-c", address, "-p", str(IPERF_PORT), "-t", str(SECONDS), "-J"] + (["-R"] if reverse else []),
            check=False, timeout=SECONDS + 30)
    try:
        return json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
    except (ValueError, KeyError):
        return None


def wait_http(run, address: str, port: int, what: str) -> None:
    wait_until(lambda: run(["curl", "-s", "-o", "/dev/null", "-m", "2", f"http://{address}:{port}/index.html"],
                           check=False).returncode == 0, 30, what)


# -- (a) a port forward ------------------------------------------------------------------------
class PlainRouter:
    """A Linux router namespace: WAN veth to the home's internet, LAN veth to one device
    namespace, masquerade out and one DNAT rule in. Nothing else."""

    def __init__(self, home: Home):
        rid = home.run_id
        self.ns, self.dev_ns = f"{rid}-pr", f"{rid}-pd"
        self.wan = "192.0.2.130"            # its WAN address, on the internet's second link
        for ns in (self.ns, self.dev_ns):
            sh(["ip", "netns", "add", ns])
            home._namespaces.append(ns)
            sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        i = home.internet_ns
        sh(["ip", "-n", self.ns, "link", "add", "wan", "type", "veth", "peer", "name", "isp1", "netns", i])
        sh(["ip", "-n", self.ns, "link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", self.dev_ns])
        for ns, dev, addr in ((self.ns, "wan", f"{self.wan}/25"), (i, "isp1", "192.0.2.129/25"),
                              (self.ns, "lan", "10.9.0.1/30"), (self.dev_ns, "eth0", "10.9.0.2/30")):
            sh(["ip", "-n", ns, "addr", "add", addr, "dev", dev])
            sh(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off"], check=False)
            sh(["ip", "-n", ns, "link", "set", dev, "up"])
        sh(["ip", "-n", self.dev_ns, "route", "add", "default", "via", "10.9.0.1"])
        sh(["ip", "netns", "exec", self.ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        sh(["ip", "netns", "exec", self.ns, "nft", "-f", "-"], input=f"""table inet plain {{
  chain pre {{
    type nat hook prerouting priority dstnat; policy accept;
    iifname "wan" tcp dport {{ {PORTS[0]}-{PORTS[-1]}, {IPERF_PORT} }} dnat ip to 10.9.0.2
  }}
  chain post {{
    type nat hook postrouting priority srcnat; policy accept;
    oifname "wan" masquerade
  }}
}}
""")

    def run(self, cmd, check=True, timeout=60):
        return sh(["ip", "netns", "exec", self.dev_ns, *cmd], check=check, timeout=timeout)

    def popen(self, cmd, **kw):
        return subprocess.Popen(["ip", "netns", "exec", self.dev_ns, *cmd], start_new_session=True, **kw)


def bench_forward(results: dict) -> None:
    config = {"controller": {"components": ["dhcp", "routing", "reach"]}, "reach": {"upnp": False}}
    with Home(config=config, hwdb=False) as home:
        dev = permitted_device(home, "server")
        lighttpd(dev.popen, home.dir / "dev", "0.0.0.0")
        dev.popen(["iperf3", "-s", "-p", str(IPERF_PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for args in (["forward", "add", dev.mac, f"{PORTS[0]}-{PORTS[-1]}"],
                     ["forward", "add", dev.mac, str(IPERF_PORT)]):
            out = home.homework(*args)
            assert out.returncode == 0, out.stderr
        plain = PlainRouter(home)
        lighttpd(plain.popen, home.dir / "plain", "0.0.0.0")
        plain.popen(["iperf3", "-s", "-p", str(IPERF_PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # the same device's own connections out through the same path: what the datapath
        # (the userspace Open vSwitch here) costs without any forward
        lighttpd(home.internet_popen, home.dir / "internet", WEB_ADDR)
        home.internet_popen(["iperf3", "-s", "-B", WEB_ADDR, "-p", str(IPERF_PORT)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        setups = {"homework": (home.internet, ROUTER_WAN_ADDR), "linux-dnat": (home.internet, plain.wan),
                  "homework-outbound": (dev.run, WEB_ADDR)}
        for label, (run, address) in setups.items():
            wait_http(run, address, PORTS[0], f"{label} reaches its server")
        ports = iter(PORTS)
        rows = {label: {"conn": [], "in": [], "out": []} for label in setups}
        for r in range(RUNS):
            order = list(setups.items()) if r % 2 == 0 else list(reversed(setups.items()))
            for label, (run, address) in order:
                port = next(ports)
                rows[label]["conn"].append(conn_rate(run, address, port))
                # "in" is always towards the device at home, "out" from it
                outbound = label == "homework-outbound"
                rows[label]["in"].append(iperf(run, address, reverse=outbound))
                rows[label]["out"].append(iperf(run, address, reverse=not outbound))
                say(f"forward round {r + 1} {label}: {rows[label]['conn'][-1]} conn/s, "
                    f"{rows[label]['in'][-1]} / {rows[label]['out'][-1]} Mb/s in / out")
        for label, r in rows.items():
            results[f"forward-{label}"] = {"conn_per_s": median(r["conn"]), "in_mbps": median(r["in"]),
                                           "out_mbps": median(r["out"]), "runs": r}


# -- (b) WireGuard ------------------------------------------------------------------------------
def plain_wireguard(home: Home):
    """wireguard-go in the router's namespace and a client in the internet's, nothing else:
    the server end is 10.98.0.1 with an iperf3 server in the router's namespace."""
    from homework.components.remote import keys
    server_key, client_key = keys.new_private(), keys.new_private()
    ifname = f"{home.run_id}pw"
    proc = home.router_popen(["env", "WG_PROCESS_FOREGROUND=1", "wireguard-go", "-f", ifname],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: Path(f"/var/run/wireguard/{ifname}.sock").exists(), 10, "plain wireguard-go")
    home.router(["wg", "set", ifname, "listen-port", "51821", "private-key", "/dev/stdin",
                 "peer", keys.public_of(client_key), "allowed-ips", "10.98.0.2/32"], input=server_key)
    home.router(["ip", "addr", "add", "10.98.0.1/24", "dev", ifname])
    # its port through the router's WAN filter, as remote access opens its own
    home.router(["nft", "add", "rule", "inet", "homework", "remote_input", "udp", "dport", "51821", "accept"])
    home.router(["ip", "link", "set", ifname, "mtu", "1420", "up"])
    home.router_popen(["iperf3", "-s", "-B", "10.98.0.1", "-p", str(IPERF_PORT)], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
    conf = (f"[Interface]\nPrivateKey = {client_key}\nAddress = 10.98.0.2/32\n\n[Peer]\n"
            f"PublicKey = {keys.public_of(server_key)}\nEndpoint = {ROUTER_WAN_ADDR}:51821\n"
            "AllowedIPs = 10.98.0.0/24\nPersistentKeepalive = 25\n")
    client = WgClient(home.internet_ns, f"{home.run_id}pc", home.dir / "plain-wg").up(conf, ["10.98.0.0/24"])
    return proc, client


def bench_wireguard(results: dict) -> None:
    config = {"controller": {"components": ["dhcp", "routing", "remote"]}}
    with Home(config=config, hwdb=False) as home:
        dev = permitted_device(home, "nas")
        dev.popen(["iperf3", "-s", "-p", str(IPERF_PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        view = home.control("remote-add", name="bench phone", timeout=60)
        assert home.homework("permit", view["mac"]).returncode == 0
        client = WgClient(home.internet_ns, f"{home.run_id}wc", home.dir / "wgclient").up(view["config"],
                                                                                        ["10.2.0.0/16"])
        nas = dev.ipv4()[0]
        wait_until(lambda: client.run(["ping", "-c", "1", "-W", "1", nas], check=False).returncode == 0, 30,
                   "the nas through the tunnel")
        _proc, plain = plain_wireguard(home)
        wait_until(lambda: plain.run(["ping", "-c", "1", "-W", "1", "10.98.0.1"], check=False).returncode == 0, 30,
                   "plain wireguard-go")
        setups = {"homework": (client, nas), "plain-wireguard-go": (plain, "10.98.0.1")}
        rows = {label: {"up": [], "down": []} for label in setups}
        try:
            for r in range(RUNS):
                order = list(setups.items()) if r % 2 == 0 else list(reversed(setups.items()))
                for label, (c, address) in order:
                    rows[label]["up"].append(iperf(c.run, address))
                    rows[label]["down"].append(iperf(c.run, address, reverse=True))
                    say(f"wireguard round {r + 1} {label}: {rows[label]['up'][-1]} / {rows[label]['down'][-1]} "
                        "Mb/s to / from home")
        finally:
            client.close()
            plain.close()
        for label, r in rows.items():
            results[f"wireguard-{label}"] = {"up_mbps": median(r["up"]), "down_mbps": median(r["down"]), "runs": r}


def main() -> int:
    results: dict = {}
    bench_forward(results)
    bench_wireguard(results)
    hw, lx, ob = results["forward-homework"], results["forward-linux-dnat"], results["forward-homework-outbound"]
    print(f"\nA port forward, from the internet to a device at home (medians of {RUNS} alternating rounds):")
    print(f"  {'setup':38} {'new conn/s':>10} {'TCP in Mb/s':>12} {'TCP out Mb/s':>13}")
    for label, r in (("Homework (forward)", hw), ("plain Linux DNAT", lx),
                     ("Homework, the device's own connections", ob)):
        print(f"  {label:38} {r['conn_per_s'] or 0:10.0f} {r['in_mbps'] or 0:12.0f} {r['out_mbps'] or 0:13.0f}")
    print(f"  {'Homework forward / Linux DNAT':38} {ratio(hw['conn_per_s'], lx['conn_per_s']) or '-':>10} "
          f"{ratio(hw['in_mbps'], lx['in_mbps']) or '-':>12} {ratio(hw['out_mbps'], lx['out_mbps']) or '-':>13}")
    print(f"  {'Homework forward / its own connections':38} {ratio(hw['conn_per_s'], ob['conn_per_s']) or '-':>10} "
          f"{ratio(hw['in_mbps'], ob['in_mbps']) or '-':>12} {ratio(hw['out_mbps'], ob['out_mbps']) or '-':>13}")
    wh, wp = results["wireguard-homework"], results["wireguard-plain-wireguard-go"]
    print(f"\nWireGuard, a client in the internet to home (wireguard-go both; medians of {RUNS} alternating rounds):")
    print(f"  {'setup':34} {'to home Mb/s':>13} {'from home Mb/s':>15}")
    for label, r in (("Homework (remote device -> a device)", wh), ("plain wireguard-go (router ns)", wp)):
        print(f"  {label:34} {r['up_mbps'] or 0:13.0f} {r['down_mbps'] or 0:15.0f}")
    print(f"  {'Homework / plain':34} {ratio(wh['up_mbps'], wp['up_mbps']) or '-':>13} "
          f"{ratio(wh['down_mbps'], wp['down_mbps']) or '-':>15}")
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-reach.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
