#!/usr/bin/env python3
"""Crowd benchmark: a thousand devices arriving through one Wi-Fi-like port, then let in.

One namespace (the "crowd") plays CROWD devices behind a single port of the router's
bridge, as an access point's interface carries every station: each MAC starts its DHCP
exchange 1/RATE s after the one before (scripts/bench_scale_lease.py, real frames,
retransmitting after 2 s as clients do), whatever the others are doing. Measured per
device: first DISCOVER to ACK. Then all of them are permitted at once, over the control
socket, either in CROWD calls of one MAC or in calls with a list (decide-group, as many
MACs a call as it takes), and timed until the last answer and until the switch holds
every device's permitted entry. Also timed: how long after the crowd's last lease the
controller has booked every device (homework-dhcpd answers a new device itself; the
controller books it behind, and its flows and place on the Guest Board come with that).

Two routers in the same run, ROUNDS rounds each, alternating: what the image runs on a
box without Wi-Fi, with IPv6 (a household home, homelab/household.py, without the link
simulator that stands in for a radio) and the controller with dhcp and routing only (the
lightest configuration, the peer). Both lift the per-port limits on
never-seen MACs and the pending cap (a crowd is exactly what those limits refuse), and
give pending devices day-long leases (the crowd never renews).
Environment: BENCH_CROWD_DEVICES (1000), BENCH_CROWD_RATE (100), BENCH_CROWD_ROUNDS (2),
BENCH_CROWD_ROUTERS ("image,light"), BENCH_CROWD_PERMIT ("alternate": one call each in
even rounds, lists in odd ones; "each" or "list": that way in every round), BENCH_CROWD_CALLERS (1:
the calls of one each go one after another; N: from N callers at once), BENCH_CROWD_PROFILE (0; 1: py-spy samples the image
router's controller while the crowd arrives and while it is permitted,
out/bench-crowd-controller-{arrive,permit}.pyspy, and the table is followed by each
phase's hottest frames).
JSON in out/bench-crowd.json.
"""
from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "scripts"))

from homelab import BARE, Home, _read_pid, cpu_seconds  # noqa: E402
from homelab.household import describe  # noqa: E402

CROWD = int(os.environ.get("BENCH_CROWD_DEVICES", "1000"))
RATE = float(os.environ.get("BENCH_CROWD_RATE", "100"))
ROUNDS = int(os.environ.get("BENCH_CROWD_ROUNDS", "2"))
PROFILE = os.environ.get("BENCH_CROWD_PROFILE", "0") == "1"
PERMIT = os.environ.get("BENCH_CROWD_PERMIT", "alternate")
CALLERS = int(os.environ.get("BENCH_CROWD_CALLERS", "1"))
ROUTERS = [r for r in os.environ.get("BENCH_CROWD_ROUTERS", "image,light").split(",") if r]
LEASER = REPO / "scripts" / "bench_scale_lease.py"
PY = "/usr/bin/python3"
CROWD_CONFIG = {"dhcp": {"pending_lease": 86400, "new_macs_burst": 100000, "new_macs_per_minute": 1000000},
                "devices": {"max_pending": 100000}}
T0 = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], p: float) -> float | None:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else None


def profiler(pid: int, phase: str) -> subprocess.Popen:
    """py-spy sampling the controller until stop_profiler (raw collapsed stacks)."""
    return subprocess.Popen([str(REPO / ".venv" / "bin" / "py-spy"), "record", "--pid", str(pid), "--duration", "600",
                             "--rate", "100", "--format", "raw", "--nonblocking", *(["--idle"] if os.environ.get("BENCH_CROWD_PROFILE_IDLE") == "1" else []), "--output",
                             str(REPO / "out" / f"bench-crowd-controller-{phase}.pyspy")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profiler(spy: subprocess.Popen | None) -> None:
    """Ask py-spy to write what it has (SIGINT) and wait for it."""
    if spy is None:
        return
    spy.send_signal(signal.SIGINT)
    try:
        spy.wait(60)
    except subprocess.TimeoutExpired:
        spy.kill()
        spy.wait()


def permitted_entries(home: Home) -> int:
    """Devices whose permitted anti-spoofed entry the switch holds."""
    out = home.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", "br0", "table=0"], check=False, timeout=120).stdout
    return len(re.findall(r"priority=20000,ip,in_port=", out))


def arrive(home: Home, crowd, first: int) -> dict:
    """CROWD new devices through the crowd's port at RATE a second; their first leases."""
    out = crowd.run([PY, str(LEASER), crowd.ifname, str(first), str(CROWD), str(RATE)], check=False,
                    timeout=900)
    leases = json.loads(out.stdout or "{}")
    seconds = [v[1] for v in leases.values()]
    return {"leased": len(leases), "p50_s": pct(seconds, 50), "p99_s": pct(seconds, 99), "max_s": max(seconds or [0]),
            "resent": sum(v[2] for v in leases.values()), "macs": list(leases)}


def booked(home: Home, leased: int) -> float:
    """Seconds from the crowd's last lease until the controller has booked every device
    (each pending on the Guest Board): homework-dhcpd answers them itself, the controller
    books what it said as fast as it can."""
    t = time.monotonic()
    while time.monotonic() - t < 300:
        if home.control("stats", timeout=120).get("devices", {}).get("pending", 0) >= leased:
            break
        time.sleep(0.2)
    return round(time.monotonic() - t, 2)


def permit_all(home: Home, macs: list[str], grouped: bool) -> dict:
    """Every MAC permitted at once; seconds to the last answer, and to the switch holding
    every one's permitted entry."""
    before = permitted_entries(home)
    t = time.monotonic()
    if grouped:
        limit = 256
        for i in range(0, len(macs), limit):
            home.control("decide-group", decision="permit", macs=macs[i:i + limit], timeout=120)
    elif CALLERS > 1:
        # callers at once (a household's scripts, the board's taps): their commands share
        # dnsd's confirmation and the captive sets' transaction
        with ThreadPoolExecutor(CALLERS) as pool:
            list(pool.map(lambda mac: home.control("permit", mac=mac, timeout=120), macs))
    else:
        for mac in macs:
            home.control("permit", mac=mac, timeout=120)
    answered = time.monotonic() - t
    while permitted_entries(home) < before + len(macs) and time.monotonic() - t < 300:
        time.sleep(0.2)
    return {"calls": "decide-group, 256 a call" if grouped else
            "permit, one a call" + (f", {CALLERS} callers at once" if CALLERS > 1 else ""),
            "answered_s": round(answered, 2), "in_switch_s": round(time.monotonic() - t, 2)}


def one_round(kind: str, grouped: bool, first: int, results: dict) -> None:
    if kind == "image":
        home = Home(config={k: dict(v) for k, v in CROWD_CONFIG.items()}, log=say, stand_ins=False).start()
    else:
        home = Home(config={"controller": {"components": list(BARE)}, **CROWD_CONFIG}, hwdb=False, log=say).start()
    try:
        crowd = home.add_device(name="crowd")
        crowd.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
        ctl = home._controller.pid
        spy = profiler(ctl, "arrive") if PROFILE and kind == "image" else None
        ovs = _read_pid(home.ovs_dir / "run" / "ovs-vswitchd.pid")
        cpu, ovs_cpu = cpu_seconds(ctl), cpu_seconds(ovs)
        lease = arrive(home, crowd, first)
        lease["booked_after_s"] = booked(home, lease["leased"])
        lease["controller_cpu_s"] = round(cpu_seconds(ctl) - cpu, 2)
        lease["ovs_cpu_s"] = round(cpu_seconds(ovs) - ovs_cpu, 2)
        macs = lease.pop("macs")
        lease["dhcp"] = json.loads(home.homework("--json", "stats").stdout or "{}").get("dhcp", {})
        stop_profiler(spy)
        spy = profiler(ctl, "permit") if PROFILE and kind == "image" else None
        cpu, ovs_cpu = cpu_seconds(ctl), cpu_seconds(ovs)
        permit = permit_all(home, macs, grouped)
        permit["permit_controller_cpu_s"] = round(cpu_seconds(ctl) - cpu, 2)
        permit["permit_ovs_cpu_s"] = round(cpu_seconds(ovs) - ovs_cpu, 2)
        stop_profiler(spy)
        row = {"router": kind, **lease, **permit}
        say(json.dumps(row))
        results.setdefault(kind, []).append(row)
        if kind == "image":
            results["image_router"] = describe(home)
    finally:
        home.close()


def main() -> int:
    (REPO / "out").mkdir(exist_ok=True)
    results: dict = {}
    first = 0
    for r in range(ROUNDS):
        order = ROUTERS if r % 2 == 0 else ROUTERS[::-1]
        for kind in order:
            grouped = PERMIT == "list" or (PERMIT == "alternate" and r % 2 == 1)
            one_round(kind, grouped=grouped, first=first, results=results)
            first += CROWD
    print(f"\n{CROWD} devices through one port, a new one every {1000 / RATE:.0f} ms; then all permitted at once "
          f"({ROUNDS} rounds, alternating; medians)")
    print(f"{'router':7} {'leased':>7} {'first lease p50 s':>18} {'p99 s':>7} {'max s':>7} {'booked after s':>15} "
          f"{'controller CPU s':>17} {'OVS CPU s':>10} {'permit: answered s':>19} {'in switch s':>12}")
    for kind in ("image", "light"):
        rows = results.get(kind, [])
        if not rows:
            continue
        med = {k: statistics.median(r[k] for r in rows if r[k] is not None) for k in
               ("leased", "p50_s", "p99_s", "max_s", "booked_after_s", "controller_cpu_s", "ovs_cpu_s", "answered_s",
                "in_switch_s")}
        print(f"{kind:7} {med['leased']:7.0f} {med['p50_s']:18.3f} {med['p99_s']:7.3f} {med['max_s']:7.2f} "
              f"{med['booked_after_s']:15.2f} "
              f"{med['controller_cpu_s']:17.1f} {med['ovs_cpu_s']:10.1f} {med['answered_s']:19.2f} {med['in_switch_s']:12.2f}")
        for r in rows:
            print(f"    round: {r['calls']}: answered {r['answered_s']} s, in the switch {r['in_switch_s']} s; "
                  f"first lease p99 {r['p99_s']} s, {r['resent']} frames re-sent")
    print("image: the image's components on a box without Wi-Fi: " + results.get("image_router", "")
          + "; the crowd's limits lifted: " + json.dumps(CROWD_CONFIG))
    print("light: the controller with dhcp and routing only, IPv4, no hwdb; the same limits lifted")
    print("aims: first lease p99 under 1 s and all permitted within 5 s, with the image's components")
    if PROFILE:
        from bench_scale import flame_summary
        for phase in ("arrive", "permit"):
            collapsed = REPO / "out" / f"bench-crowd-controller-{phase}.pyspy"
            if collapsed.exists():
                flame = flame_summary(collapsed, top=20)
                results[f"flame_{phase}"] = flame
                print(f"\nthe image router's controller, {phase} (py-spy, {flame['samples']} samples): share of samples")
                for (own, own_pct), (total, total_pct) in zip(flame["own"], flame["total"], strict=False):
                    print(f"  own {own_pct:5.1f}% {own[:60]:60}  total {total_pct:5.1f}% {total[:60]}")
    (REPO / "out" / "bench-crowd.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
