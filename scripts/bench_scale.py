#!/usr/bin/env python3
"""Scale benchmark: what an idle household costs as it grows.

One emulated home (controller with dhcp + routing, userspace OVS). Three real devices
(udhcpc) are permitted; then more permitted devices come from one extra namespace that
leases many MACs itself (scripts/bench_scale_lease.py: real DHCP exchanges on its port)
and `permit`s them over the control socket. At 3, 100 and 1,000 permitted devices, with
no traffic, the controller and ovs-vswitchd are left alone for SETTLE seconds and then
measured over WINDOW seconds: CPU (utime+stime from /proc/PID/stat, % of one core) and
RSS (VmRSS). Table on stdout, JSON in out/bench-scale.json.
Environment: BENCH_SCALE_COUNTS ("3,100,1000"), BENCH_SCALE_SETTLE (15), BENCH_SCALE_WINDOW (30).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from homelab import BARE, Home, _read_pid, cpu_seconds  # noqa: E402
from homelab.routing import permitted_device  # noqa: E402

COUNTS = [int(x) for x in os.environ.get("BENCH_SCALE_COUNTS", "3,100,1000").split(",") if x]
SETTLE = float(os.environ.get("BENCH_SCALE_SETTLE", "15"))
WINDOW = float(os.environ.get("BENCH_SCALE_WINDOW", "30"))
LEASER = REPO / "scripts" / "bench_scale_lease.py"
PY = "/usr/bin/python3"
T0 = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def control(home: Home, cmd: str, **args):
    """One command over the control socket (a CLI process per call would cost 1,000 starts)."""
    return home.control(cmd, **args)


def add_permitted(home: Home, herd, first: int, count: int) -> int:
    """Lease `count` more MACs from the herd namespace and permit them; returns how many."""
    out = herd.run([PY, str(LEASER), herd.ifname, str(first), str(count)], check=False, timeout=400)
    leases = json.loads(out.stdout or "{}")
    if len(leases) < count:
        say(f"only {len(leases)} of {count} leases: {out.stderr[-400:]}")
    for mac in leases:
        control(home, "permit", mac=mac)
    return len(leases)


def measure(pids: dict, settle: float = SETTLE, window: float = WINDOW) -> dict:
    """CPU (% of one core) and RSS of each process, left alone `settle` s, then over `window` s."""
    time.sleep(settle)
    start = {name: cpu_seconds(pid) for name, pid in pids.items()}
    t = time.monotonic()
    time.sleep(window)
    wall = time.monotonic() - t
    return {name: {"cpu_pct": round(100 * (cpu_seconds(pid) - start[name]) / wall, 2), "rss_mb": round(rss_mb(pid), 1)}
            for name, pid in pids.items()}


def main() -> int:
    config = {"controller": {"components": list(BARE)},
              "dhcp": {"pending_lease": 86400, "new_macs_burst": 100000, "new_macs_per_minute": 1000000},
              "devices": {"max_pending": 100000}}
    results = []
    with Home(config=config, internet=False, hwdb=False, log=say) as home:
        real = [permitted_device(home) for _ in range(3)]
        permitted = len(real)
        herd = home.add_device(name="herd")
        herd.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
        pids = {"controller": home._controller.pid,
                "ovs-vswitchd": _read_pid(home.ovs_dir / "run" / "ovs-vswitchd.pid")}
        for target in COUNTS:
            if target > permitted:
                t = time.monotonic()
                permitted += add_permitted(home, herd, permitted, target - permitted)
                say(f"{permitted} permitted devices ({time.monotonic() - t:.0f} s to lease and permit)")
            flows = home.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-aggregate", "br0"], check=False).stdout
            row = {"permitted": permitted, "flows": flows.strip().split("flow_count=")[-1], **measure(pids)}
            say(str(row))
            results.append(row)
    print(f"\n{'permitted':>9} {'flows':>7} {'controller CPU %':>17} {'RSS MB':>7} "
          f"{'ovs-vswitchd CPU %':>19} {'RSS MB':>7} {'together %':>11}")
    for r in results:
        c, o = r["controller"], r["ovs-vswitchd"]
        print(f"{r['permitted']:>9} {r['flows']:>7} {c['cpu_pct']:>17.2f} {c['rss_mb']:>7.1f} "
              f"{o['cpu_pct']:>19.2f} {o['rss_mb']:>7.1f} {c['cpu_pct'] + o['cpu_pct']:>11.2f}")
    print(f"(idle, no traffic; CPU over {WINDOW:.0f} s after {SETTLE:.0f} s of quiet; % of one core)")
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-scale.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
