#!/usr/bin/env python3
"""DHCP benchmark: the Homework controller vs dnsmasq, same machine, same run.

Both servers sit behind an identical emulated home (router namespace, private OVS
with the netdev datapath, one veth per device): Homework's bridge is driven by the
controller (DHCP through its fast path: a raw socket on the bridge's LOCAL
interface), dnsmasq's is an OVS NORMAL bridge with
dnsmasq (--no-ping, lease file on tmpfs) on the bridge's LOCAL interface.

  1. perfdhcp -4 -r RATE -R N -p SECONDS -l eth0 -x t from a device namespace, for
     N = 100 and 1000 simulated clients. The offered rate ramps up (2 s steps) until
     the server drops more than 2 %; at the highest rate it kept up with, RUNS runs
     give 4-way exchanges/s, drops, and the median / p99 of each request's reply
     latency (DISCOVER->OFFER and REQUEST->ACK). perfdhcp always acts as a relay
     agent (giaddr = its address), so the perf device first gets an address.
     Also the server's own CPU time per completed exchange (from /proc), which a
     busy machine skews far less than rates and latencies.
  2. The seed's scenario: 100 device namespaces start udhcpc at once; time from
     starting the client to its ACK (median, max), and the exchange itself as the
     device's interface saw it (kernel timestamps of its first DISCOVER and its ACK):
     starting 100 clients at once on 2 cores takes most of a second whatever the
     server, so only the second number says how fast the server answers. Every round
     is against a fresh server (a new emulated home: no leases, nothing learned from
     earlier rounds), and the rounds alternate between the servers (homework, dnsmasq,
     dnsmasq, homework, ...), so a busy spell of the machine does not land on one of them.
     The devices have IPv6 off and new MACs, and the switch is quiet before the clock
     starts: no frame of theirs has reached either server's bridge yet.
Each number is the median of several runs. Prints a table with ratios and writes
out/bench-dhcp.json.

Homework runs twice: with the controller answering every request (`homework`), and with
homework-dhcpd answering the leases the controller has decided and offering never-seen
devices the blocks it reserved for them (`homework-dhcpd`).

Environment: BENCH_DHCP_RUNS (3), BENCH_DHCP_BURST_ROUNDS (6: a burst's median moves by
10-20 % from round to round, more than the servers differ), BENCH_DHCP_PERIOD (3 s), BENCH_DHCP_RAMP
("100,250,500,1000,2000,4000,8000,12000,16000"), BENCH_DHCP_RAMP_PERIOD (2 s),
BENCH_DHCP_MAX_DROPS (2 %), BENCH_DHCP_SAME_RATE (400/s: the rate at which every server's
latency is also measured, within dnsmasq's reach at 1000 clients), BENCH_DHCP_HIGH_RATE (8000/s:
the same at 100 clients, near the top of both), BENCH_DHCP_DEVICES (100),
BENCH_DHCP_SERVERS ("homework,homework-dhcpd,homework-dhcpd+identify,dnsmasq"; also homework+identify), BENCH_DHCP_FAST_PATH (1; 0: the controller's
packet-in path, for comparison).
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import select
import socket
import struct
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from homelab import BARE, HOOK, Device, Home, _read_pid, cpu_seconds  # noqa: E402

RUNS = int(os.environ.get("BENCH_DHCP_RUNS", "3"))
BURST_ROUNDS = int(os.environ.get("BENCH_DHCP_BURST_ROUNDS", "6"))
PERIOD = int(os.environ.get("BENCH_DHCP_PERIOD", "3"))
CLIENTS = (100, 1000)
RAMP = [int(x) for x in os.environ.get("BENCH_DHCP_RAMP", "100,250,500,1000,2000,4000,8000,12000,16000").split(",")]
RAMP_PERIOD = int(os.environ.get("BENCH_DHCP_RAMP_PERIOD", "2"))
MAX_DROPS = float(os.environ.get("BENCH_DHCP_MAX_DROPS", "2"))
SAME_RATE = int(os.environ.get("BENCH_DHCP_SAME_RATE", "400"))   # within every server's reach
# at 100 clients also a high rate for all: the top rates differ, so latencies at them do not compare
HIGH_RATE = int(os.environ.get("BENCH_DHCP_HIGH_RATE", "8000"))
N_DEVICES = int(os.environ.get("BENCH_DHCP_DEVICES", "100"))
SERVERS = [s for s in os.environ.get("BENCH_DHCP_SERVERS",
                                    "homework,homework-dhcpd,homework-dhcpd+identify,dnsmasq").split(",") if s]
DHCPD = REPO / "dhcpd" / "target" / "release" / "homework-dhcpd"
T0 = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))
    return s[k]


SO_TIMESTAMPNS, SO_RCVBUFFORCE, CLONE_NEWNET = 35, 33, 0x40000000
PERF_AGENT = "10.2.0.2"     # the perf device is the home's first device: block 0's .2
# perfdhcp is a relay agent bringing a thousand new MACs through one port: the controller
# must trust it as a relay and not rate-limit or forget its clients.
HOMEWORK_CONFIG = {"controller": {"components": list(BARE)},
                   "dhcp": {"relays": [PERF_AGENT], "new_macs_burst": 100000, "new_macs_per_minute": 10**6,
                            "fast_path": os.environ.get("BENCH_DHCP_FAST_PATH", "1") != "0",
                            "answerer": "controller"},
                   "devices": {"max_pending": 10**6}}
# homework-dhcpd: the daemon answers decided leases and offers never-seen devices
# reserved blocks; the controller decides the rest (the perf relay's clients among them)
HOMEWORK_DHCPD_CONFIG = {**HOMEWORK_CONFIG, "dhcp": {**HOMEWORK_CONFIG["dhcp"], "answerer": "dhcpd",
                                                        "dhcpd_binary": str(DHCPD)}}
# The same two with device identification on (components/identify: the DHCP options of what
# the controller and homework-dhcpd already parse become fingerprints, classified): the
# "+identify" columns against their twins show what identification costs the DHCP path.
IDENTIFY = {"controller": {"components": [*BARE, "identify"]}}
CONFIGS = {"homework": HOMEWORK_CONFIG, "homework-dhcpd": HOMEWORK_DHCPD_CONFIG,
           "homework+identify": {**HOMEWORK_CONFIG, **IDENTIFY},
           "homework-dhcpd+identify": {**HOMEWORK_DHCPD_CONFIG, **IDENTIFY}}


def ns_packet_socket(ns: str, ifname: str) -> socket.socket:
    """A raw AF_PACKET socket on ifname inside network namespace ns. setns() in a helper
    thread changes only that thread's namespace; the socket stays bound to its own."""
    result: dict = {}

    def work():
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {ns}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL: also outgoing
            sock.bind((ifname, 0))
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)  # floods on NORMAL bridges
            result["sock"] = sock
        except OSError as exc:
            result["error"] = exc
    t = threading.Thread(target=work)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["sock"]


def dhcp_type_and_mac(frame: bytes) -> tuple[int, str] | None:
    """(message type, client MAC) of a DHCP frame, else None."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    udp = 14 + (frame[14] & 0x0F) * 4
    if len(frame) < udp + 8 + 240 or {struct.unpack_from("!H", frame, udp + 2)[0]} - {67, 68}:
        return None
    bootp = udp + 8
    i = bootp + 240
    while i + 1 < len(frame) and frame[i] != 255:
        if frame[i] == 0:
            i += 1
            continue
        if frame[i] == 53 and frame[i + 1] == 1 and i + 2 < len(frame):
            return frame[i + 2], frame[bootp + 28:bootp + 34].hex(":")
        i += 2 + frame[i + 1]
    return None


class WireTimes:
    """Kernel timestamps of each device's first DISCOVER, OFFER, REQUEST and ACK on its
    interface: the exchange as the device saw it, and the server's two answers alone
    (DISCOVER -> OFFER, REQUEST -> ACK: without the client's own work between them)."""

    def __init__(self, devs: list[Device]):
        # On a flooding (NORMAL) bridge every interface also sees the others' broadcasts:
        # only a device's own exchange on its own interface counts.
        self.socks = [ns_packet_socket(d.ns, d.ifname) for d in devs]
        self.owner = {sock: d.mac for sock, d in zip(self.socks, devs, strict=True)}
        for sock in self.socks:
            sock.setblocking(False)
        self.discover: dict[str, float] = {}
        self.offer: dict[str, float] = {}
        self.request: dict[str, float] = {}
        self.ack: dict[str, float] = {}
        self._by_type = {1: self.discover, 2: self.offer, 3: self.request, 5: self.ack}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select(self.socks, [], [], 0.1)
            for sock in ready:
                while True:
                    try:
                        data, anc, _, _ = sock.recvmsg(2048, socket.CMSG_SPACE(16))
                    except BlockingIOError:
                        break
                    stamp = next((struct.unpack("qq", d[:16]) for lvl, typ, d in anc
                                  if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS), None)
                    found = dhcp_type_and_mac(data)
                    if stamp is None or found is None or found[1] != self.owner[sock]:
                        continue
                    kind, mac = found
                    t = stamp[0] + stamp[1] / 1e9
                    seen = self._by_type.get(kind)
                    if seen is not None:
                        seen[mac] = min(t, seen.get(mac, t))

    def close(self) -> list[float]:
        """Seconds from first DISCOVER to ACK, for every device that got both."""
        self._stop.set()
        self._thread.join()
        for sock in self.socks:
            sock.close()
        return [self.ack[m] - t for m, t in self.discover.items() if m in self.ack]

    def answers(self) -> tuple[list[float], list[float]]:
        """Seconds from each device's first DISCOVER to its first OFFER, and from its first
        REQUEST to its first ACK (call after close)."""
        return ([self.offer[m] - t for m, t in self.discover.items() if m in self.offer],
                [self.ack[m] - t for m, t in self.request.items() if m in self.ack])


def parse_perfdhcp(out: str) -> dict:
    res: dict = {"rate": 0.0, "sent": 0, "received": 0, "latencies_ms": []}
    m = re.search(r"Rate:\s*([0-9.]+)\s*4-way exchanges/second", out)
    if m:
        res["rate"] = float(m.group(1))
    res["acks"] = 0
    for section in re.split(r"\*\*\*Statistics for: ", out)[1:]:
        sent = re.search(r"sent packets:\s*(\d+)", section)
        recv = re.search(r"received packets:\s*(\d+)", section)
        res["sent"] += int(sent.group(1)) if sent else 0
        res["received"] += int(recv.group(1)) if recv else 0
        if section.startswith("REQUEST-ACK") and recv:
            res["acks"] = int(recv.group(1))   # completed 4-way exchanges
    for s, r in re.findall(r"sent / received:\s*([0-9.]+)\s*/\s*([0-9.]+)", out):
        res["latencies_ms"].append((float(r) - float(s)) * 1000)
    res["drops_pct"] = 100.0 * (1 - res["received"] / res["sent"]) if res["sent"] else None
    return res


class Server:
    """One emulated home serving DHCP with either the controller or dnsmasq."""

    def __init__(self, kind: str):
        self.kind = kind
        self.homework = kind.startswith("homework")
        config = CONFIGS.get(kind)
        self.home = Home(controller=self.homework, internet=False, hwdb=False, config=config,
                         log=lambda m: say(f"{kind}: {m}"))
        self.leasefile = None
        self.last_burst_cpu: dict[str, float] = {}     # the last burst's CPU seconds, by process
        self.last_to_ack_wire: list[float] = []         # and each device's start -> ACK on its interface
        self.last_answers: tuple[list[float], list[float]] = ([], [])   # DISCOVER -> OFFER, REQUEST -> ACK

    def __enter__(self):
        self.home.start()
        if self.kind == "dnsmasq":
            h = self.home
            h.router(["ip", "addr", "add", "10.2.0.1/16", "dev", "br0"])
            self.leasefile = Path("/dev/shm") / f"{h.run_id}-dnsmasq.leases"
            self.log = open(h.dir / "dnsmasq.log", "ab")
            h.router_popen(["dnsmasq", "-k", "--no-ping", "--port=0", "--interface=br0",
                            "--bind-interfaces", "--dhcp-authoritative", "--quiet-dhcp",
                            "--dhcp-lease-max=100000", "--no-resolv", "--no-hosts",
                            "--dhcp-range=10.2.0.10,10.2.255.250,255.255.0.0,1h",
                            f"--dhcp-leasefile={self.leasefile}",
                            f"--pid-file={h.dir / 'dnsmasq.pid'}"],
                           stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 10
            while not h.router(["ss", "-Hlun", "sport = :67"]).stdout.strip():
                if time.monotonic() > deadline:
                    raise RuntimeError("dnsmasq did not start")
                time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.home.close()
        if self.leasefile:
            self.leasefile.unlink(missing_ok=True)

    def daemon_pids(self) -> list[int]:
        """homework-dhcpd, the controller's child, if it runs."""
        pid = self.home._controller.pid if self.homework and self.home._controller else None
        if pid is None:
            return []
        out = subprocess.run(["pgrep", "-P", str(pid), "homework-dhcpd"], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def cpu_seconds(self, daemon_only: bool = False) -> float:
        """CPU time used so far by the DHCP server (controller and homework-dhcpd, or
        dnsmasq); `daemon_only`: homework-dhcpd's alone."""
        if daemon_only:
            pids = self.daemon_pids()
        elif self.homework:
            pids = [self.home._controller.pid if self.home._controller else None, *self.daemon_pids()]
        else:
            pids = [_read_pid(self.home.dir / "dnsmasq.pid")]
        try:
            return sum(cpu_seconds(pid) for pid in pids)
        except (OSError, IndexError, ValueError, TypeError):
            return float("nan")

    def perf_device(self) -> Device:
        dev = self.home.add_device(name="perf")
        dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
        dev.start_udhcpc()           # perfdhcp acts as a relay: it needs an address (giaddr)
        address, _ = dev.wait_for_ipv4(15)
        if self.homework and address != PERF_AGENT:
            raise RuntimeError(f"the perf device got {address}; the controller trusts {PERF_AGENT} as relay")
        dev.stop_dhcp()              # keep the address, stop renewing
        return dev

    def perfdhcp(self, dev: Device, clients: int, rate: int, period: int) -> dict:
        cmd = ["perfdhcp", "-4", "-r", str(rate), "-R", str(clients), "-p", str(period),
               "-l", dev.ifname, "-x", "t"]
        out = dev.run(cmd, check=False, timeout=period + 60)
        res = parse_perfdhcp(out.stdout + out.stderr)
        self.settle()
        if not res["sent"]:
            say(f"{self.kind}: perfdhcp said: {(out.stdout + out.stderr)[-800:]}")
        return res

    def settle(self, timeout: float = 10) -> None:
        """Let a server that fell behind drain its backlog before the next run."""
        if not self.homework:
            time.sleep(0.5)
            return
        last, deadline = None, time.monotonic() + timeout
        while time.monotonic() < deadline:
            res = self.home.homework("--json", "stats")
            try:
                counters = json.loads(res.stdout)
                # requests come as packet-ins or, on the fast path, from its socket
                count = (counters.get("core", {}).get("packet_in", 0)
                         + counters.get("dhcp", {}).get("fast_path_in", 0))
            except (ValueError, KeyError, TypeError, AttributeError):
                time.sleep(1)
                return
            if count == last:
                return
            last = count
            time.sleep(0.5)

    def settle_ovs(self, devs: list[Device], timeout: float = 10) -> None:
        """New MACs mean link down/up on every port, and OVS (netdev) spends seconds of CPU
        re-opening them: wait for the links and for the switch to go quiet, or the burst
        measures that instead of the DHCP server. Quiet means a whole second under 10 % of a
        core: after one quiet quarter second OVS still toggled ports in the burst."""
        waits: list[str] = []
        for d in devs:
            waits += ["--", "wait-until", "Interface", d.port_name, "link_state=up"]
        self.home.router(["ovs-vsctl", f"--timeout={int(timeout)}", *waits[1:]], check=False, timeout=timeout + 5)
        pid = _read_pid(self.home.ovs_dir / "run" / "ovs-vswitchd.pid")
        deadline = time.monotonic() + timeout
        try:
            last, quiet = cpu_seconds(pid), 0
            while time.monotonic() < deadline:
                time.sleep(0.25)
                now = cpu_seconds(pid)
                quiet = quiet + 1 if now - last < 0.25 * 0.1 else 0     # under 10 % of a core
                if quiet == 4:
                    return
                last = now
        except (OSError, IndexError, ValueError):
            time.sleep(1)

    def burst(self, devs: list[Device], round_no: int) -> tuple[list[float], list[float], list[float]]:
        """All devices start udhcpc at once; seconds from start to ACK for each, from
        DISCOVER to ACK on the device's interface, and from start to the first DISCOVER
        (how long the machine took to start the client, which the server's own CPU slows)."""
        for d in devs:  # fresh MACs each round: every round is 100 new devices
            d.mac = f"02:62:{round_no:02x}:{d.index >> 8:02x}:{d.index & 0xff:02x}:01"
            # IPv6 off, as for the perf device: a device's IPv6 speaks as its link comes up
            # (MLD reports, DAD, router solicitations), before the clock starts, and a learning
            # bridge (dnsmasq's) then knows every "new" MAC before the burst. With it on, OVS
            # learned no MAC in dnsmasq's burst, against 100 with it off, and dnsmasq's time left
            # its learning out. Homework's pipeline learns nothing from those frames.
            d.run(f"sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 "
                  f"net.ipv6.conf.{d.ifname}.disable_ipv6=1 && "
                  f"ip link set {d.ifname} down && ip addr flush dev {d.ifname} && "
                  f"ip link set {d.ifname} address {d.mac} && ip link set {d.ifname} up")
            for f in (d.dir / "events").glob("*.env"):
                f.unlink()
        self.settle_ovs(devs)
        cpu0 = self.burst_cpu()
        started: dict[str, float] = {}
        procs: list[subprocess.Popen] = []
        k = min(len(devs), 20)  # 20 launcher threads released together
        barrier = threading.Barrier(k)

        def launch(chunk):
            barrier.wait()
            for d in chunk:
                started[d.mac] = time.time()
                # Bare udhcpc: records the lease (hook) but configures nothing, exits when bound.
                procs.append(subprocess.Popen(
                    ["ip", "netns", "exec", d.ns, "udhcpc", "-f", "-q", "-n", "-i", d.ifname,
                     "-s", str(d.dir / "bench-hook.sh"), "-t", "10", "-T", "1"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        for d in devs:
            hook = d.dir / "bench-hook.sh"
            if not hook.exists():
                hook.write_text("#!/bin/sh\nHOOK_CLIENT=udhcpc HOOK_NEXT=/bin/true "
                                f"HOOK_EVENTS='{d.dir / 'events'}'\n"
                                "export HOOK_CLIENT HOOK_NEXT HOOK_EVENTS\n"
                                f"exec '{HOOK}' \"$@\"\n")
                hook.chmod(0o755)
        wire = WireTimes(devs)
        chunks = [devs[i::k] for i in range(k)]
        threads = [threading.Thread(target=launch, args=(c,)) for c in chunks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        deadline = time.monotonic() + 30
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        times = []
        for d in devs:
            bound = [ls for ls in d.leases() if ls.reason == "bound"]
            if bound:
                times.append(bound[0].time - started[d.mac])
        cpu1 = self.burst_cpu()
        self.last_burst_cpu = {k: cpu1[k] - cpu0[k] for k in cpu0}
        exchanges = wire.close()
        to_discover = [t - started[m] for m, t in wire.discover.items() if m in started]
        # the ACK's arrival on the device's interface: without the client's own work after it
        self.last_to_ack_wire = [t - started[m] for m, t in wire.ack.items() if m in started]
        self.last_answers = wire.answers()
        return times, exchanges, to_discover

    def burst_cpu(self) -> dict[str, float]:
        """CPU seconds so far: the DHCP server's, ovs-vswitchd's and the whole machine's
        (the clients' start, the server and the switch share the 2 cores)."""
        with open("/proc/stat") as fh:      # the machine: every state but idle and iowait
            v = [int(x) for x in fh.readline().split()[1:]]
        try:
            ovs = cpu_seconds(_read_pid(self.home.ovs_dir / "run" / "ovs-vswitchd.pid"))
        except (OSError, IndexError, ValueError, TypeError):
            ovs = float("nan")
        return {"server": self.cpu_seconds(), "ovs": ovs,
                "machine": (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")}


def perf_scenario(srv: Server, dev: Device, clients: int) -> dict:
    """Ramp the offered rate until the server drops more than MAX_DROPS %, then measure
    RUNS runs at the highest rate it kept up with. Past its capacity a server's queue
    grows until replies come later than perfdhcp waits (1 s) and everything counts as
    dropped, so a fixed overload rate says little; the sustained rate does."""
    ramp, best = [], None
    cpu0, daemon0, acks = srv.cpu_seconds(), srv.cpu_seconds(daemon_only=True), 0
    for rate in RAMP:
        r = srv.perfdhcp(dev, clients, rate, RAMP_PERIOD)
        acks += r["acks"]
        ok = r["drops_pct"] is not None and r["drops_pct"] <= MAX_DROPS
        if not ok:  # one more try: a busy machine (or a first contact) can spoil one step
            say(f"{srv.kind}: ramp {clients} clients @ {rate}/s: drops {fmt(r['drops_pct'])}%, trying again")
            r = srv.perfdhcp(dev, clients, rate, RAMP_PERIOD)
            acks += r["acks"]
            ok = r["drops_pct"] is not None and r["drops_pct"] <= MAX_DROPS
        say(f"{srv.kind}: ramp {clients} clients @ {rate}/s: {r['rate']:.0f} exch/s, "
            f"drops {fmt(r['drops_pct'])}%, median {fmt(pct(r['latencies_ms'], 50))} ms{'' if ok else '  <- over'}")
        ramp.append({"offered": rate, "rate": r["rate"], "drops_pct": r["drops_pct"]})
        if not ok:
            break
        best = rate
    res = {"ramp": ramp, "peak_rate": max((x["rate"] for x in ramp), default=0.0),
           "sustained_offered": best}
    if best is None:
        cpu = srv.cpu_seconds() - cpu0
        return res | {"rate": None, "drops_pct": None, "median_ms": None, "p99_ms": None,
                      "cpu_ms_per_exchange": 1000 * cpu / acks if acks else None}
    nan = float("nan")

    def runs_at(rate: int, what: str) -> list[dict]:
        nonlocal acks
        runs = []
        for i in range(RUNS):
            r = srv.perfdhcp(dev, clients, rate, PERIOD)
            acks += r["acks"]
            say(f"{srv.kind}: {clients} clients @ {rate}/s{what} run {i + 1}: {r['rate']:.0f} exch/s, "
                f"drops {fmt(r['drops_pct'])}%, median {fmt(pct(r['latencies_ms'], 50))} ms, "
                f"p99 {fmt(pct(r['latencies_ms'], 99))} ms")
            runs.append(r)
        return runs
    runs = runs_at(best, "")
    # the same offered rate for every server: latency compared without one of them at its edge
    same = runs_at(SAME_RATE, " (same rate for all)")
    high = runs_at(HIGH_RATE, " (same high rate for all)") if clients == CLIENTS[0] else []
    cpu = srv.cpu_seconds() - cpu0
    daemon = srv.cpu_seconds(daemon_only=True) - daemon0
    return res | {
        "cpu_ms_per_exchange": 1000 * cpu / acks if acks else None,
        "daemon_cpu_ms_per_exchange": 1000 * daemon / acks if acks and srv.daemon_pids() else None,
        "rate": statistics.median(r["rate"] for r in runs),
        "drops_pct": statistics.median(r["drops_pct"] or 0.0 for r in runs),
        "median_ms": statistics.median(pct(r["latencies_ms"], 50) or nan for r in runs),
        "p99_ms": statistics.median(pct(r["latencies_ms"], 99) or nan for r in runs),
        "same_median_ms": statistics.median(pct(r["latencies_ms"], 50) or nan for r in same),
        "same_p99_ms": statistics.median(pct(r["latencies_ms"], 99) or nan for r in same),
        "high_median_ms": statistics.median(pct(r["latencies_ms"], 50) or nan for r in high) if high else None,
        "high_p99_ms": statistics.median(pct(r["latencies_ms"], 99) or nan for r in high) if high else None,
        "high_drops_pct": statistics.median(r["drops_pct"] or 0.0 for r in high) if high else None,
    }


def add_devices_parallel(home: Home, n: int, threads: int = 4) -> list[Device]:
    names = [f"b{i + 1}" for i in range(n)]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda name: home.add_device(name=name), names))


def bench_server(kind: str) -> dict:
    result: dict = {"server": kind, "perfdhcp": {}, "burst": {}}
    with Server(kind) as srv:
        dev = srv.perf_device()
        for clients in CLIENTS:
            result["perfdhcp"][clients] = perf_scenario(srv, dev, clients)
    return result


def burst_round(kind: str, round_no: int) -> tuple[list[float], list[float], list[float], dict]:
    """One burst of N_DEVICES new devices against a fresh server of this kind."""
    with Server(kind) as srv:
        t = time.monotonic()
        devs = add_devices_parallel(srv.home, N_DEVICES)
        say(f"{kind}: {N_DEVICES} device namespaces ready in {time.monotonic() - t:.1f}s")
        times, wire, to_discover = srv.burst(devs, round_no)
        extra = {**srv.last_burst_cpu, "to_ack_wire": srv.last_to_ack_wire,
                 "offer_wire": srv.last_answers[0], "ack_wire": srv.last_answers[1]}
    say(f"{kind}: {N_DEVICES} devices at once, round {round_no}: {len(times)} bound, "
        f"median {fmt(pct(times, 50))}s, max {fmt(max(times) if times else None)}s; "
        f"on the wire DISCOVER->ACK median {fmt(pct(wire, 50))}s, max {fmt(max(wire) if wire else None)}s; "
        f"start->DISCOVER median {fmt(pct(to_discover, 50))}s; start->ACK on the wire "
        f"{fmt(pct(extra['to_ack_wire'], 50))}s; the server's answers DISCOVER->OFFER "
        f"{fmt(pct(extra['offer_wire'], 50))}s REQUEST->ACK {fmt(pct(extra['ack_wire'], 50))}s; CPU server {extra['server']:.2f}s "
        f"ovs-vswitchd {extra['ovs']:.2f}s machine {extra['machine']:.2f}s")
    return times, wire, to_discover, extra


def bench_bursts(results: dict) -> None:
    """BURST_ROUNDS rounds, each server fresh for each round, the order alternating."""
    rounds: dict[str, list] = {kind: [] for kind in SERVERS}
    wires: dict[str, list] = {kind: [] for kind in SERVERS}
    starts: dict[str, list] = {kind: [] for kind in SERVERS}
    extras: dict[str, list] = {kind: [] for kind in SERVERS}   # CPU and start -> ACK on the interface
    for r in range(BURST_ROUNDS):
        for kind in (SERVERS if r % 2 == 0 else SERVERS[::-1]):
            times, wire, to_discover, extra = burst_round(kind, r + 1)
            rounds[kind].append(times)
            wires[kind].append(wire)
            starts[kind].append(to_discover)
            extras[kind].append(extra)
    nan = float("nan")
    for kind in SERVERS:
        results[kind]["burst"] = {
            "devices": N_DEVICES,
            "bound": statistics.median(len(t) for t in rounds[kind]),
            "median_s": statistics.median(pct(t, 50) or nan for t in rounds[kind]),
            "p90_s": statistics.median(pct(t, 90) or nan for t in rounds[kind]),
            "max_s": statistics.median(max(t) if t else nan for t in rounds[kind]),
            "wire_median_s": statistics.median(pct(t, 50) or nan for t in wires[kind]),
            "wire_p90_s": statistics.median(pct(t, 90) or nan for t in wires[kind]),
            "to_discover_median_s": statistics.median(pct(t, 50) or nan for t in starts[kind]),
            "to_ack_wire_median_s": statistics.median(pct(c["to_ack_wire"], 50) or nan for c in extras[kind]),
            "offer_wire_median_s": statistics.median(pct(c["offer_wire"], 50) or nan for c in extras[kind]),
            "ack_wire_median_s": statistics.median(pct(c["ack_wire"], 50) or nan for c in extras[kind]),
            **{f"cpu_{part}_s": statistics.median(c[part] for c in extras[kind]) for part in ("server", "ovs", "machine")},
        }


def fmt(v, unit="") -> str:
    if v is None or v != v:
        return "n/a"
    if isinstance(v, float):
        v = f"{v:.3f}" if abs(v) < 10 else f"{v:.0f}"
    return f"{v}{unit}"


def ratio(a, b) -> str:
    try:
        if a is None or b is None or a != a or b != b or b == 0:
            return "n/a"
        return f"{a / b:.2f}x"
    except TypeError:
        return "n/a"


def table(results: dict) -> str:
    """One column per server, then each Homework variant's ratio to dnsmasq."""
    kinds = [k for k in SERVERS if k in results]
    ours = [k for k in kinds if k != "dnsmasq"]
    # identification on against off, in the same run
    twins = [k for k in kinds if k.endswith("+identify") and k.removesuffix("+identify") in kinds]
    dm = results.get("dnsmasq")
    rows = []

    def row(scenario, label, values, better, unit):
        base = values.get("dnsmasq")
        rows.append((scenario, label, *(fmt(values.get(k), unit) for k in kinds),
                     *(ratio(values.get(k), base) if dm else "n/a" for k in ours),
                     *(ratio(values.get(k), values.get(k.removesuffix("+identify"))) for k in twins), better))

    for clients in CLIENTS:
        for key, label, unit, better in (("sustained_offered", f"highest offered rate with <={MAX_DROPS:g}% drops", "/s", "higher"),
                                         ("rate", "4-way exchanges/s at that rate", "", "higher"),
                                         ("drops_pct", "drops at that rate", " %", "lower"),
                                         ("median_ms", "reply latency median", " ms", "lower"),
                                         ("p99_ms", "reply latency p99", " ms", "lower"),
                                         ("same_median_ms", f"reply latency median at {SAME_RATE}/s (same rate)", " ms", "lower"),
                                         ("same_p99_ms", f"reply latency p99 at {SAME_RATE}/s (same rate)", " ms", "lower"),
                                         ("high_median_ms", f"reply latency median at {HIGH_RATE}/s (same rate)", " ms", "lower"),
                                         ("high_p99_ms", f"reply latency p99 at {HIGH_RATE}/s (same rate)", " ms", "lower"),
                                         ("high_drops_pct", f"drops at {HIGH_RATE}/s (same rate)", " %", "lower"),
                                         ("peak_rate", "peak exchanges/s seen in the ramp", "", "higher"),
                                         ("cpu_ms_per_exchange", "server CPU per 4-way exchange", " ms", "lower"),
                                         ("daemon_cpu_ms_per_exchange", "  of which homework-dhcpd", " ms", "lower")):
            row(f"perfdhcp, {clients} clients", label,
                {k: results[k]["perfdhcp"][clients].get(key) for k in kinds}, better, unit)
    for key, label, unit in (("median_s", "start -> ACK median (the client's bound hook ran)", " s"),
                             ("p90_s", "start -> ACK p90", " s"), ("max_s", "start -> ACK max", " s"),
                             ("to_ack_wire_median_s", "start -> ACK on the device's interface, median", " s"),
                             ("wire_median_s", "DISCOVER -> ACK on the wire, median", " s"),
                             ("wire_p90_s", "DISCOVER -> ACK on the wire, p90", " s"),
                             ("offer_wire_median_s", "the server's answer: DISCOVER -> OFFER, median", " s"),
                             ("ack_wire_median_s", "the server's answer: REQUEST -> ACK, median", " s"),
                             ("to_discover_median_s", "start -> first DISCOVER median", " s"),
                             ("cpu_server_s", "CPU in the burst: the server", " s"),
                             ("cpu_ovs_s", "CPU in the burst: ovs-vswitchd", " s"),
                             ("cpu_machine_s", "CPU in the burst: the whole machine", " s"),
                             ("bound", "devices bound", "")):
        row(f"{N_DEVICES} devices start udhcpc at once", label, {k: results[k]["burst"][key] for k in kinds},
            "lower" if key != "bound" else "higher", unit)
    head = ("scenario", "metric", *kinds, *(f"{k}/dnsmasq" for k in ours),
            *(f"{k}/{k.removesuffix('+identify')}" for k in twins), "better")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    out = [line(head), line(["-" * w for w in widths])]
    prev = None
    for r in rows:
        out.append(line((r[0] if r[0] != prev else "",) + r[1:]))
        prev = r[0]
    return "\n".join(out)


def main() -> int:
    if os.geteuid() != 0:
        print("bench_dhcp: needs root (network namespaces, OVS)", file=sys.stderr)
        return 1
    results = {}
    say(f"load average at start: {os.getloadavg()[0]:.1f} (other work on this machine skews the numbers)")
    for kind in SERVERS:
        say(f"--- {kind} ---")
        results[kind] = bench_server(kind)
    say("--- bursts: fresh servers, interleaved rounds ---")
    bench_bursts(results)
    print()
    load = os.getloadavg()
    print(f"DHCP: Homework (controller answering; homework-dhcpd answering decided leases and new devices) vs dnsmasq "
          f"on an OVS NORMAL bridge (median of {RUNS} runs, bursts of {BURST_ROUNDS} rounds, "
          f"perfdhcp -p {PERIOD}, netdev datapath, {os.cpu_count()} cores shared by everything; "
          f"load average now {load[0]:.1f})")
    print(table(results))
    print("reply latency: each DISCOVER->OFFER and REQUEST->ACK as perfdhcp timed it (-x t).\n"
          "server CPU per exchange: the server process's user+system time over all perfdhcp runs of\n"
          "that scenario / completed exchanges; unlike rates it hardly depends on how busy the machine is.")
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-dhcp.json").write_text(json.dumps(results, indent=2))
    print(f"(raw numbers in {out / 'bench-dhcp.json'}; took {time.monotonic() - T0:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
