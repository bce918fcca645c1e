#!/usr/bin/env python3
"""Scale benchmark: what an idle household costs as it grows.

The router runs what the image runs on a box without Wi-Fi, IPv6 on (a household home,
homelab/household.py: every component of homework.lineup but the radio, with
homework-dnsd, dnsmasq, hwdbd, lighttpd for the Guest Board and the captive page, and
mosquitto; not the emulated home's link simulator, which stands in for a radio), in an
emulated home on userspace OVS.
Three real devices (udhcpc, SLAAC) are permitted; more permitted devices come from one
extra namespace that leases many MACs itself (scripts/bench_scale_lease.py: real DHCP
exchanges on its port) and permits them over the control socket. At 3, 100 and 1,000
permitted devices, with no traffic, the router is left alone for SETTLE seconds and then
measured over WINDOW seconds, ROUNDS times: CPU (utime+stime from /proc/PID/stat, % of
one core) and RSS of every process in the router namespace, by program. The ratio that
matters is the whole router's idle CPU at 1,000 devices against its own at 3.

With BENCH_SCALE_PROFILE=1, py-spy samples the controller over the last window of the
largest count and the table ends with its hottest functions (own and total samples).
Table on stdout, JSON in out/bench-scale.json.
Environment: BENCH_SCALE_COUNTS ("3,100,1000"), BENCH_SCALE_SETTLE (15), BENCH_SCALE_WINDOW (20),
BENCH_SCALE_ROUNDS (3), BENCH_SCALE_PROFILE (0).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from homelab import Home, cpu_seconds, sh  # noqa: E402
from homelab.household import describe  # noqa: E402
from homelab.routing import permitted_device  # noqa: E402

COUNTS = [int(x) for x in os.environ.get("BENCH_SCALE_COUNTS", "3,100,1000").split(",") if x]
SETTLE = float(os.environ.get("BENCH_SCALE_SETTLE", "15"))
WINDOW = float(os.environ.get("BENCH_SCALE_WINDOW", "20"))
ROUNDS = int(os.environ.get("BENCH_SCALE_ROUNDS", "3"))
PROFILE = os.environ.get("BENCH_SCALE_PROFILE", "0") == "1"
LEASER = REPO / "scripts" / "bench_scale_lease.py"
PY = "/usr/bin/python3"
T0 = time.monotonic()
# The herd's MACs all come through one port and never renew: the per-port limits on new
# MACs and the pending cap are lifted, and the pending lease lasts a day, so a herd device
# keeps its lease (and its flows) without renewing.
HERD_CONFIG = {"dhcp": {"pending_lease": 86400, "new_macs_burst": 100000, "new_macs_per_minute": 1000000},
               "devices": {"max_pending": 100000}}
# The programs that make up the router (the rest of the namespace is the emulated home's).
ROUTER_PROGRAMS = ("controller", "ovs-vswitchd", "ovsdb-server", "homework-dnsd", "homework-dhcpd", "hwdbd",
                   "lighttpd", "dnsmasq", "mosquitto")


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def program_of(pid: int, controller_pid: int) -> str | None:
    if pid == controller_pid:
        return "controller"
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None
    return name if name in ROUTER_PROGRAMS else None


def router_pids(home: Home) -> dict[int, str]:
    """Every router program's processes in the router namespace (pid -> program)."""
    out = sh(["ip", "netns", "pids", home.router_ns], check=False).stdout.split()
    controller = home._controller.pid
    found = {}
    for pid in map(int, filter(str.isdigit, out)):
        program = program_of(pid, controller)
        if program:
            found[pid] = program
    return found


def cpu_of(pids: dict[int, str]) -> dict[int, float]:
    out = {}
    for pid in pids:
        try:
            out[pid] = cpu_seconds(pid)
        except OSError:
            pass
    return out


def measure_window(home: Home, window: float) -> dict:
    """% of one core and RSS per program over one window of quiet."""
    pids = router_pids(home)
    start = cpu_of(pids)
    t = time.monotonic()
    time.sleep(window)
    wall = time.monotonic() - t
    end = cpu_of(pids)
    cpu: Counter = Counter()
    rss: Counter = Counter()
    for pid, program in pids.items():
        if pid in start and pid in end:
            cpu[program] += 100 * (end[pid] - start[pid]) / wall
            rss[program] += rss_mb(pid)
    return {"cpu": dict(cpu), "rss": dict(rss)}


def profile_controller(pid: int, seconds: float, out: Path) -> subprocess.Popen | None:
    spy = shutil.which("py-spy") or str(REPO / ".venv" / "bin" / "py-spy")
    if not Path(spy).exists():
        say("py-spy not installed (make deps): no profile")
        return None
    return subprocess.Popen([spy, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200",
                             "--format", "raw", "--output", str(out), "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profiler(spy: subprocess.Popen, timeout: float) -> None:
    """py-spy ends by itself after its duration; one that does not (a loaded machine) is
    asked to write what it has (SIGINT), then stopped."""
    try:
        spy.wait(timeout)
    except subprocess.TimeoutExpired:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(15)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait()


def flame_summary(collapsed: Path, top: int = 15) -> dict:
    """Hottest functions of a py-spy collapsed-stack file: own samples (the frame at the
    top of the stack) and total (anywhere in the stack), as shares of all samples."""
    own: Counter = Counter()
    total: Counter = Counter()
    samples = 0
    for line in collapsed.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        n = int(n)
        samples += n
        frames = [f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].rsplit("/", 1)[-1] + ")"
                  if " (" in f else f for f in stack.split(";")]
        own[frames[-1]] += n
        for f in set(frames):
            total[f] += n
    return {"samples": samples,
            "own": [(f, round(100 * n / samples, 1)) for f, n in own.most_common(top)] if samples else [],
            "total": [(f, round(100 * n / samples, 1)) for f, n in total.most_common(top)] if samples else []}


def add_permitted(home: Home, herd, first: int, count: int) -> tuple[int, float]:
    """Lease `count` more MACs from the herd namespace and permit them (one call with the
    list); returns how many and how long the permit took."""
    out = herd.run([PY, str(LEASER), herd.ifname, str(first), str(count)], check=False, timeout=900)
    leases = json.loads(out.stdout or "{}")
    if len(leases) < count:
        say(f"only {len(leases)} of {count} leases: {out.stderr[-400:]}")
    t = time.monotonic()
    for mac in leases:
        home.control("permit", mac=mac)
    return len(leases), time.monotonic() - t


def main() -> int:
    results = []
    profile = None
    with Home(config=HERD_CONFIG, log=say, stand_ins=False) as home:
        real = [permitted_device(home) for _ in range(3)]
        permitted = len(real)
        herd = home.add_device(name="herd")
        herd.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
        for target in COUNTS:
            if target > permitted:
                t = time.monotonic()
                got, permit_s = add_permitted(home, herd, permitted, target - permitted)
                permitted += got
                say(f"{permitted} permitted devices ({time.monotonic() - t:.0f} s to lease and permit; "
                    f"the permit of {got} took {permit_s:.2f} s)")
            flows = home.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-aggregate", "br0"], check=False).stdout
            time.sleep(SETTLE)
            windows = []
            for r in range(ROUNDS):
                if PROFILE and target == COUNTS[-1] and r == ROUNDS - 1:
                    profile = REPO / "out" / "bench-scale-controller.pyspy"
                    profile.parent.mkdir(exist_ok=True)
                    spy = profile_controller(home._controller.pid, WINDOW, profile)
                windows.append(measure_window(home, WINDOW))
            programs = sorted({p for w in windows for p in w["cpu"]})
            row = {"permitted": permitted, "flows": int(flows.strip().split("flow_count=")[-1] or 0),
                   "cpu": {p: round(statistics.median(w["cpu"].get(p, 0.0) for w in windows), 2) for p in programs},
                   "rss": {p: round(windows[-1]["rss"].get(p, 0.0), 1) for p in programs},
                   "router_cpu": round(statistics.median(sum(w["cpu"].values()) for w in windows), 2),
                   "router_cpu_runs": [round(sum(w["cpu"].values()), 2) for w in windows],
                   "router_rss": round(sum(windows[-1]["rss"].values()), 1)}
            say(json.dumps(row))
            results.append(row)
        if profile is not None and spy is not None:
            stop_profiler(spy, WINDOW + 30)
        described = describe(home)
    print(f"\nrouter: the image's components on a box without Wi-Fi: {described}; the herd's limits lifted: "
          f"{json.dumps(HERD_CONFIG)}")
    programs = sorted({p for r in results for p in r["cpu"]}, key=lambda p: -results[-1]["cpu"].get(p, 0))
    print(f"\nidle CPU, % of one core (median of {ROUNDS} windows of {WINDOW:.0f} s after {SETTLE:.0f} s of quiet)")
    print(f"{'permitted':>9} {'flows':>7} " + " ".join(f"{p[:13]:>13}" for p in programs) + f" {'router':>8} {'RSS MB':>7}")
    for r in results:
        print(f"{r['permitted']:>9} {r['flows']:>7} " + " ".join(f"{r['cpu'].get(p, 0):13.2f}" for p in programs)
              + f" {r['router_cpu']:8.2f} {r['router_rss']:7.0f}")
    if len(results) > 1 and results[0]["router_cpu"]:
        first, last = results[0], results[-1]
        print(f"whole router at {last['permitted']} devices / at {first['permitted']}: "
              f"{last['router_cpu'] / first['router_cpu']:.2f}x CPU, {last['router_rss'] / first['router_rss']:.2f}x RSS"
              f" (aim: at most 2x CPU)")
    summary = None
    if profile is not None and profile.exists():
        summary = flame_summary(profile)
        print(f"\ncontroller profile at {results[-1]['permitted']} devices (py-spy, {summary['samples']} samples "
              f"over {WINDOW:.0f} s; idle samples included):")
        for f, share in summary["total"]:
            print(f"  {share:5.1f}%  {f}")
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-scale.json").write_text(json.dumps({"router": described, "rows": results,
                                                       "profile": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
