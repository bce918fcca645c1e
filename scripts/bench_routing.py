#!/usr/bin/env python3
"""Routing benchmark: Homework's forwarding path against its peers, same machine, same run.

Setups (each on real namespaces; servers in the homelab "internet" behind NAT):
  linux          plain Linux router namespace, one veth per device, no OVS
  ovs-normal     OVS (netdev datapath) with one NORMAL flow: the sandbox ceiling for OVS
  learn-switch   OVS + reactive MAC-learning switch on os-ken (scripts/bench_peers)
  reactive-flow  OVS + the seed's reactive design: every new 5-tuple to the controller
  homework       OVS + the Homework controller (dhcp, routing): proactive per-device
                 flows; per-flow records of NATed flows from conntrack, per-flow
                 entries learned by the switch for flows inside the household

Measured:
  (a) new TCP connections/s: wrk -H 'Connection: close' to lighttpd in the internet
      namespace; first-packet latency: p50/p99 of sequential connect() times (each a new
      5-tuple, so each pays whatever per-flow set-up the router does)
  (b) iperf3 TCP device -> internet and device -> device
  (c) homework with N = 1 .. 100k learned flow entries installed (seed Figure 4.5):
      ping RTT device -> device (p50) and UDP packets/s over N distinct flows
Medians of RUNS runs; ratios to the peers; JSON in out/bench-routing.json.
Every connection-rate run gets a server port of its own (lighttpd listens on RUN_PORTS):
runs that reuse one server port and one (NAT) source address collide with the TIME_WAIT
entries the previous runs left behind, and whichever setup comes later pays for them.
Environment: BENCH_ROUTING_RUNS (5), BENCH_ROUTING_SECONDS (3), BENCH_ROUTING_FLOWS
("1,1000,10000,100000"), BENCH_ROUTING_SETUPS (all five, comma separated).
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

from homelab import BARE, WEB_ADDR, Home, sh  # noqa: E402
from homelab.routing import permitted_device, wait_until  # noqa: E402

RUNS = int(os.environ.get("BENCH_ROUTING_RUNS", "5"))
SECONDS = int(os.environ.get("BENCH_ROUTING_SECONDS", "3"))
FLOWS = [int(x) for x in os.environ.get("BENCH_ROUTING_FLOWS", "1,1000,10000,100000").split(",") if x]
SETUPS = os.environ.get("BENCH_ROUTING_SETUPS", "linux,ovs-normal,learn-switch,reactive-flow,homework").split(",")
PY = "/usr/bin/python3"
HTTP_PORT = 8081
RUN_PORTS = range(8100, 8100 + 20 * RUNS)   # one per connection-rate run (see fresh_port)
_ports = iter(RUN_PORTS)
T0 = time.monotonic()

CONNECTS = r"""
import json, socket, sys, time
addr = (sys.argv[1], int(sys.argv[2])); out = []
for _ in range(int(sys.argv[3])):
    s = socket.socket(); t = time.perf_counter(); s.connect(addr); out.append(time.perf_counter() - t); s.close()
print(json.dumps(out))
"""

# Sends UDP datagrams over n distinct flows (dst port x source socket); "prime" sends each
# once, "blast" cycles through them for `seconds` and prints how many were sent.
UDP_FLOWS = r"""
import socket, sys, time
dst, n, mode, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
per = 50000
socks = []
for k in range((n + per - 1) // per):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 30000 + k)); socks.append(s)
targets = [(socks[i // per], (dst, 1024 + i % per)) for i in range(n)]
payload = b"x" * 18
if mode == "prime":   # paced: a burst would overflow the switch's receive queue
    for j, (s, a) in enumerate(targets):
        s.sendto(payload, a)
        if j % 20 == 19:
            time.sleep(0.001)
    print(n); sys.exit()
sent, end, i = 0, time.monotonic() + seconds, 0
while time.monotonic() < end:
    for _ in range(1000):
        s, a = targets[i]; i = (i + 1) % n
        try:
            s.sendto(payload, a); sent += 1
        except OSError:
            pass
print(sent)
"""


def fresh_port() -> int:
    """A server port no earlier run of this process connected to."""
    return next(_ports)


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# -- the internet's servers ------------------------------------------------------------------
def start_servers(home: Home) -> None:
    conf = home.dir / "lighttpd-bench.conf"
    www = home.dir / "www"
    conf.write_text(f'server.document-root = "{www}"\nserver.bind = "{WEB_ADDR}"\nserver.port = {HTTP_PORT}\n'
                    f'server.pid-file = "{home.dir}/lighttpd-bench.pid"\nserver.max-connections = 4096\n'
                    'server.max-keep-alive-requests = 0\nserver.errorlog = "/dev/null"\n'
                    'mimetype.assign = (".html" => "text/html")\n'
                    + "".join(f'$SERVER["socket"] == "{WEB_ADDR}:{p}" {{ }}\n' for p in RUN_PORTS))
    home.internet_popen(["lighttpd", "-D", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    home.internet_popen(["iperf3", "-s", "-B", WEB_ADDR, "-p", "5201"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
    wait_until(lambda: home.internet(["ss", "-Hltn", f"sport = :{HTTP_PORT}"]).stdout.strip(), 10, "lighttpd")


class NsDevice:
    """A client namespace of the plain Linux router (no OVS), looking like homelab's Device."""

    def __init__(self, home: Home, index: int):
        self.ns = f"{home.run_id}-l{index}"
        self.name = self.ns
        port = f"{home.run_id}-l{index}"
        self.ip, gw = f"10.4.{index}.2", f"10.4.{index}.1"
        sh(["ip", "netns", "add", self.ns])
        home._namespaces.append(self.ns)
        sh(["ip", "-n", home.router_ns, "link", "add", port, "type", "veth", "peer", "name", "eth0",
            "netns", self.ns])
        for ns, dev, addr in ((home.router_ns, port, f"{gw}/30"), (self.ns, "eth0", f"{self.ip}/30")):
            sh(["ip", "-n", ns, "addr", "add", addr, "dev", dev])
            sh(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off"], check=False)
            sh(["ip", "-n", ns, "link", "set", dev, "up"])
        sh(["ip", "-n", self.ns, "link", "set", "lo", "up"])
        sh(["ip", "-n", self.ns, "route", "add", "default", "via", gw])

    def run(self, cmd, check=True, timeout=60):
        return sh(["ip", "netns", "exec", self.ns, *cmd], check=check, timeout=timeout)

    def popen(self, cmd, **kw):
        return subprocess.Popen(["ip", "netns", "exec", self.ns, *cmd], start_new_session=True, **kw)


def static_ovs_devices(home: Home) -> list:
    """Two devices on the OVS bridge in one /24 with the router at .1 (learning-switch style)."""
    home.router(["ip", "addr", "add", "10.3.0.1/24", "dev", "br0"])
    devs = []
    for i in (11, 12):
        d = home.add_device()
        d.run(["ip", "addr", "add", f"10.3.0.{i}/24", "dev", "eth0"])
        d.run(["ip", "route", "add", "default", "via", "10.3.0.1"])
        d.ip = f"10.3.0.{i}"
        devs.append(d)
    return devs


# -- measurements ------------------------------------------------------------------------------
def measure(devs, label: str, results: dict, iperf_d2d: bool = True) -> None:
    a, b = devs
    out = {}
    url = f"http://{WEB_ADDR}:{HTTP_PORT}/index.html"
    for _try in range(20):
        if a.run(["curl", "-s", "-o", "/dev/null", "-m", "2", url], check=False).returncode == 0:
            break
        time.sleep(0.25)
    rates = []
    for _ in range(RUNS):
        run_url = f"http://{WEB_ADDR}:{fresh_port()}/index.html"
        r = a.run(["wrk", "-t", "1", "-c", "16", "-d", f"{SECONDS}s", "-H", "Connection: close", run_url],
                  check=False, timeout=SECONDS + 30)
        m = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
        rates.append(float(m.group(1)) if m else None)
    out["conn_per_s"] = median(rates)
    lat = []
    for _ in range(RUNS):
        r = a.run([PY, "-c", CONNECTS, WEB_ADDR, str(fresh_port()), "300"], check=False, timeout=120)
        if r.returncode == 0:
            lat.append(json.loads(r.stdout))
    out["connect_p50_ms"] = median([pct(x, 50) * 1000 for x in lat])
    out["connect_p99_ms"] = median([pct(x, 99) * 1000 for x in lat])
    out["iperf_internet_mbps"] = median([iperf(a, WEB_ADDR, 5201) for _ in range(max(1, RUNS - 1))])
    if iperf_d2d:
        srv = b.popen(["iperf3", "-s", "-B", b.ip, "-p", "5202"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        out["iperf_device_mbps"] = median([iperf(a, b.ip, 5202) for _ in range(max(1, RUNS - 1))])
        srv.kill()
    results[label] = out
    say(f"{label}: {out}")


def iperf(dev, addr: str, port: int) -> float | None:
    r = dev.run(["iperf3", "-c", addr, "-p", str(port), "-t", str(SECONDS), "-J"], check=False,
                timeout=SECONDS + 30)
    try:
        return json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
    except (ValueError, KeyError):
        return None


def flow_scaling(home: Home, a, b, results: dict) -> None:
    """Seed Figure 4.5: switching latency and packet rate with N learned flow entries."""
    rows = []
    def learned():
        out = home.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-aggregate", "br0", "table=10"]).stdout
        m = re.search(r"flow_count=(\d+)", out)
        return int(m.group(1)) if m else 0
    for n in FLOWS:
        t = time.monotonic()
        for _ in range(3):          # re-send until every flow has its entry (lost packets)
            a.run([PY, "-c", UDP_FLOWS, b.ip, str(n), "prime", "0"], timeout=300)
            if learned() >= n:
                break
        installed = learned()
        say(f"{installed} flow entries installed for N={n} in {time.monotonic() - t:.1f}s")
        ping = a.run(["ping", "-n", "-q", "-c", "200", "-i", "0.005", b.ip], check=False, timeout=60).stdout
        m = re.search(r"= [\d.]+/([\d.]+)/", ping)
        rtt = float(m.group(1)) if m else None
        before = int(b.run(["cat", "/sys/class/net/eth0/statistics/rx_packets"]).stdout)
        sent = int(a.run([PY, "-c", UDP_FLOWS, b.ip, str(n), "blast", "2"], timeout=120).stdout)
        time.sleep(0.3)
        received = int(b.run(["cat", "/sys/class/net/eth0/statistics/rx_packets"]).stdout) - before
        row = {"flows": n, "installed": installed, "ping_avg_ms": rtt, "sent_pps": sent / 2,
               "received_pps": received / 2}
        rows.append(row)
        say(f"flows {n}: {row}")
    results["homework"]["flow_scaling"] = rows


# -- setups -------------------------------------------------------------------------------------
def run_peers(results: dict) -> None:
    wanted = [s for s in ("linux", "ovs-normal", "learn-switch", "reactive-flow") if s in SETUPS]
    if not wanted:
        return
    with Home(controller=False, hwdb=False) as home:
        start_servers(home)
        if "linux" in wanted:
            devs = [NsDevice(home, 1), NsDevice(home, 2)]
            measure(devs, "linux", results)
        if {"ovs-normal", "learn-switch", "reactive-flow"} & set(wanted):
            devs = static_ovs_devices(home)
            if "ovs-normal" in wanted:
                measure(devs, "ovs-normal", results)
            for label, mode in (("learn-switch", "mac"), ("reactive-flow", "flow")):
                if label not in wanted:
                    continue
                env = dict(home.ovs_env, REACTIVE_MODE=mode)
                log = open(home.dir / f"{label}.log", "ab")
                ctl = subprocess.Popen(["ip", "netns", "exec", home.router_ns, "osken-manager",
                                        "--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", "6653",
                                        str(REPO / "scripts" / "bench_peers" / "reactive_switch.py")],
                                       env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
                home._procs.append(ctl)
                home.router(["ovs-ofctl", "-O", "OpenFlow13", "del-flows", "br0"])
                home.vsctl("set", "bridge", "br0", "fail_mode=secure", "--", "set-controller", "br0",
                           "tcp:127.0.0.1:6653")
                wait_until(lambda: "priority=0" in home.dump_flows(), 30, f"{label} connected")
                measure(devs, label, results, iperf_d2d=False)
                home.vsctl("del-controller", "br0")
                ctl.terminate()
                ctl.wait(10)


def connection_rates(a, n_runs: int = 1) -> tuple[list, list]:
    rates, lat = [], []
    for _ in range(n_runs):
        url = f"http://{WEB_ADDR}:{fresh_port()}/index.html"
        r = a.run(["wrk", "-t", "1", "-c", "16", "-d", f"{SECONDS}s", "-H", "Connection: close", url],
                  check=False, timeout=SECONDS + 30)
        m = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
        rates.append(float(m.group(1)) if m else None)
        r = a.run([PY, "-c", CONNECTS, WEB_ADDR, str(fresh_port()), "300"], check=False, timeout=120)
        if r.returncode == 0:
            lat.append(json.loads(r.stdout))
    return rates, lat


def paired_with_normal(home: Home, a, results: dict) -> None:
    """The fairest ratio on a shared, noisy machine: the same namespaces and bridge,
    alternating between the Homework controller and one NORMAL flow (no controller)."""
    hw, normal = ([], []), ([], [])
    for _ in range(RUNS):
        for label, bucket in (("homework", hw), ("normal", normal)):
            if label == "normal":
                home.vsctl("del-controller", "br0", "--", "set", "bridge", "br0", "fail_mode=standalone")
                home.router(["ovs-ofctl", "-O", "OpenFlow13", "replace-flows", "br0", "-"],
                            input="priority=0,actions=NORMAL\n")
            rates, lat = connection_rates(a)
            bucket[0].extend(rates)
            bucket[1].extend(lat)
            if label == "normal":
                home.router(["ovs-ofctl", "-O", "OpenFlow13", "del-flows", "br0"])
                home.vsctl("set", "bridge", "br0", "fail_mode=secure", "--", "set-controller", "br0",
                           "tcp:127.0.0.1:6653")
                wait_until(lambda: "priority=20000" in home.dump_flows(), 30, "controller resynchronised")
    for label, (rates, lat) in (("homework-paired", hw), ("ovs-normal-paired", normal)):
        results[label] = {"conn_per_s": median(rates),
                          "connect_p50_ms": median([pct(x, 50) * 1000 for x in lat]),
                          "connect_p99_ms": median([pct(x, 99) * 1000 for x in lat])}
        say(f"{label}: {results[label]}")


def device_server(dev, ports) -> None:
    """lighttpd in a device's namespace on its own address, one port per run (as the
    internet's, so no run meets an earlier one's TIME_WAIT entries)."""
    conf = dev.dir / "lighttpd-d2d.conf"
    www = dev.dir / "www"
    www.mkdir(exist_ok=True)
    (www / "index.html").write_text("<html><body>device to device</body></html>\n")
    conf.write_text(f'server.document-root = "{www}"\nserver.bind = "{dev.ip}"\nserver.port = {ports[0]}\n'
                    f'server.pid-file = "{dev.dir}/lighttpd-d2d.pid"\nserver.max-connections = 4096\n'
                    'server.max-keep-alive-requests = 0\nserver.errorlog = "/dev/null"\n'
                    'mimetype.assign = (".html" => "text/html")\n'
                    + "".join(f'$SERVER["socket"] == "{dev.ip}:{p}" {{ }}\n' for p in ports[1:]))
    dev.popen(["lighttpd", "-D", "-f", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: dev.run(["ss", "-Hltn", f"sport = :{ports[0]}"]).stdout.strip(), 10, "device lighttpd")


def d2d_rates(client, server_ip: str, port: int) -> tuple[float | None, list]:
    url = f"http://{server_ip}:{port}/index.html"
    r = client.run(["wrk", "-t", "1", "-c", "16", "-d", f"{SECONDS}s", "-H", "Connection: close", url],
                   check=False, timeout=SECONDS + 30)
    m = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
    lat = client.run([PY, "-c", CONNECTS, server_ip, str(port), "300"], check=False, timeout=120)
    return (float(m.group(1)) if m else None), (json.loads(lat.stdout) if lat.returncode == 0 else [])


def paired_device_to_device(home: Home, a, b, results: dict) -> None:
    """New connections from one device to another on the same bridge, alternating runs:
    Homework's pipeline (a and b permitted, each in its own /30, routed by the switch)
    against one NORMAL flow switching two devices of one /24 (c and d, plugged into the
    same bridge): the sandbox's ceiling for OVS."""
    c, d = static_ovs_devices(home)
    ports_b = [fresh_port() for _ in range(RUNS)]
    ports_d = [fresh_port() for _ in range(RUNS)]
    device_server(b, ports_b)
    device_server(d, ports_d)
    hw, normal = ([], []), ([], [])
    for i in range(RUNS):
        rate, lat = d2d_rates(a, b.ip, ports_b[i])
        hw[0].append(rate)
        hw[1].append(lat)
        home.vsctl("del-controller", "br0", "--", "set", "bridge", "br0", "fail_mode=standalone")
        home.router(["ovs-ofctl", "-O", "OpenFlow13", "replace-flows", "br0", "-"], input="priority=0,actions=NORMAL\n")
        wait_until(lambda: c.ping(d.ip, timeout=1), 10, "NORMAL switches c to d")
        rate, lat = d2d_rates(c, d.ip, ports_d[i])
        normal[0].append(rate)
        normal[1].append(lat)
        home.router(["ovs-ofctl", "-O", "OpenFlow13", "del-flows", "br0"])
        home.vsctl("set", "bridge", "br0", "fail_mode=secure", "--", "set-controller", "br0", "tcp:127.0.0.1:6653")
        wait_until(lambda: "priority=20000" in home.dump_flows(), 30, "controller resynchronised")
        wait_until(lambda: a.ping(b.ip, timeout=1), 10, "a reaches b again")
    for label, (rates, lat) in (("homework-d2d", hw), ("ovs-normal-d2d", normal)):
        lat = [x for x in lat if x]
        results[label] = {"conn_per_s": median(rates), "conn_per_s_runs": rates,
                          "connect_p50_ms": median([pct(x, 50) * 1000 for x in lat]),
                          "connect_p99_ms": median([pct(x, 99) * 1000 for x in lat])}
        say(f"{label}: {results[label]}")
    packet_ins = home.homework("--json", "stats").stdout
    results["homework-d2d"]["controller_packet_ins"] = json.loads(packet_ins).get("core", {}).get("packet_in", 0)


# The seed's Figure 4.5 needs a learned entry per flow: the `switch` flow records, and a
# flow limit above the largest N (the shipped pipeline learns flows within the household
# per pair, and the internet's from conntrack).
SCALING_CONFIG = {"controller": {"components": list(BARE)},
                  "routing": {"flow_records": "switch", "per_host_flow_limit": 200000, "flow_stats_interval": 3600}}


def run_homework(results: dict) -> None:
    """Homework's forwarding path as shipped: the controller with dhcp and routing, every
    routing setting at its default (flow records from conntrack, the flow limit, polling
    every 10 s)."""
    if "homework" not in SETUPS:
        return
    with Home(config={"controller": {"components": list(BARE)}}, hwdb=False) as home:
        start_servers(home)
        a, b = permitted_device(home), permitted_device(home)
        for d in (a, b):
            d.ip = d.ipv4()[0]
        measure([a, b], "homework", results)
        paired_with_normal(home, a, results)
        paired_device_to_device(home, a, b, results)
    if FLOWS:
        with Home(config=SCALING_CONFIG, hwdb=False) as home:
            a, b = permitted_device(home), permitted_device(home)
            for d in (a, b):
                d.ip = d.ipv4()[0]
            flow_scaling(home, a, b, results)


def ratio(x, y):
    return round(x / y, 2) if x and y else None


def main() -> int:
    results: dict = {}
    run_peers(results)
    run_homework(results)
    hw = results.get("homework", {})
    print(f"\n{'setup':17} {'conn/s':>8} {'connect p50 ms':>15} {'p99 ms':>8} {'iperf inet Mb/s':>16} "
          f"{'iperf dev-dev Mb/s':>19}")
    for label, r in results.items():
        if "conn_per_s" not in r:
            continue
        print(f"{label:17} {r.get('conn_per_s') or 0:8.0f} {r.get('connect_p50_ms') or 0:15.3f} "
              f"{r.get('connect_p99_ms') or 0:8.3f} {r.get('iperf_internet_mbps') or 0:16.0f} "
              f"{r.get('iperf_device_mbps') or 0:19.0f}")
    print("\nratios homework / peer:")
    for peer in ("linux", "ovs-normal", "learn-switch", "reactive-flow"):
        p = results.get(peer)
        if p and hw:
            print(f"  vs {peer:14} conn/s {ratio(hw.get('conn_per_s'), p.get('conn_per_s'))}  "
                  f"connect p50 {ratio(hw.get('connect_p50_ms'), p.get('connect_p50_ms'))}  "
                  f"p99 {ratio(hw.get('connect_p99_ms'), p.get('connect_p99_ms'))}  "
                  f"iperf inet {ratio(hw.get('iperf_internet_mbps'), p.get('iperf_internet_mbps'))}  "
                  f"dev-dev {ratio(hw.get('iperf_device_mbps'), p.get('iperf_device_mbps'))}")
    hd, nd = results.get("homework-d2d"), results.get("ovs-normal-d2d")
    if hd and nd:
        print(f"  device to device, same bridge, alternating runs: homework / OVS NORMAL conn/s "
              f"{ratio(hd['conn_per_s'], nd['conn_per_s'])} ({hd['conn_per_s'] or 0:.0f} vs {nd['conn_per_s'] or 0:.0f}), "
              f"connect p50 {ratio(hd['connect_p50_ms'], nd['connect_p50_ms'])} "
              f"({hd['connect_p50_ms'] or 0:.3f} vs {nd['connect_p50_ms'] or 0:.3f} ms); "
              f"packet-ins to the controller in the whole home's run: {hd.get('controller_packet_ins')}")
    hp, np_ = results.get("homework-paired"), results.get("ovs-normal-paired")
    if hp and np_:
        print(f"  paired, same namespaces, alternating runs: homework / OVS NORMAL conn/s "
              f"{ratio(hp['conn_per_s'], np_['conn_per_s'])} ({hp['conn_per_s']:.0f} vs {np_['conn_per_s']:.0f}), "
              f"connect p50 {ratio(hp['connect_p50_ms'], np_['connect_p50_ms'])}, "
              f"p99 {ratio(hp['connect_p99_ms'], np_['connect_p99_ms'])}")
    if hw.get("flow_scaling"):
        print("\nhomework with N learned flow entries (ping avg RTT device->device, UDP pps over N flows):")
        base = hw["flow_scaling"][0]
        for row in hw["flow_scaling"]:
            print(f"  N={row['flows']:>6} installed={row['installed']:>6} rtt {row['ping_avg_ms'] or 0:.3f} ms "
                  f"({ratio(row['ping_avg_ms'], base['ping_avg_ms'])}x)  rx {row['received_pps']:.0f} pps "
                  f"({ratio(row['received_pps'], base['received_pps'])}x, sent {row['sent_pps']:.0f})")
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-routing.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
