#!/usr/bin/env python3
"""Identification benchmark: what knowing each device costs the controller.

In one process, on the strict fake switch the unit tests use (no OVS, no clients: the
controller's own CPU, not the machine's):

  1. The controller's DHCP path: ROUNDS rounds of DEVICES new devices' DISCOVERs (each
     with a real device's options: Windows, Android, iOS, macOS, Linux, a printer, an
     ESP8266, a console, in turn) handled by a controller with identification off
     (dhcp, routing) and one with it on (dhcp, routing, identify), the rounds alternating
     (off, on, on, off, ...) so a busy spell does not land on one. Per DISCOVER: the
     median of the rounds' means; the ratio on/off is the cost. A known device's path is
     measured the same way: the same devices' DISCOVERs again (a fingerprint already
     heard is not news: nothing is classified).
  2. One classification (the whole catalog against a device's evidence): median of many.
     Times are the controller thread's CPU time (time.thread_time): on a shared, busy
     machine the other processes' time does not land in one round's figure.
  3. Memory per device: what the identify component holds (evidence and guess) for
     DEVICES devices, by tracemalloc, divided by DEVICES.

homework-dhcpd's side is in `make bench`'s DHCP section: its "homework-dhcpd+identify"
column against "homework-dhcpd" in the same run (scripts/bench_dhcp.py).
Environment: BENCH_IDENTIFY_DEVICES (500), BENCH_IDENTIFY_ROUNDS (6). JSON in out/bench-identify.json.
"""
from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "unit"))

from conftest import Clock, make_core  # noqa: E402
from dhcpframes import dhcp_frame  # noqa: E402
from homework.components.dhcp import message as m  # noqa: E402
from homework.components.identify.catalog import load  # noqa: E402
from homework.components.identify.classify import classify  # noqa: E402
from homework.flows import Datapath, PacketIn  # noqa: E402

DEVICES = int(os.environ.get("BENCH_IDENTIFY_DEVICES", "500"))
SETTLED: list[float] = []      # identify's timer: seconds per new device, each round with it on
ROUNDS = int(os.environ.get("BENCH_IDENTIFY_ROUNDS", "6"))

# What real devices send (tests/e2e/test_identify.py has their sources).
KINDS = [
    [(61, bytes([1, 0, 21, 93, 1, 2, 3])), (57, b"\x05\xdc"), (12, b"DESKTOP-4K2J7QF"), (60, b"MSFT 5.0"),
     (55, bytes([1, 3, 6, 15, 31, 33, 43, 44, 46, 47, 119, 121, 249, 252]))],
    [(57, b"\x05\xdc"), (60, b"android-dhcp-14"), (55, bytes([1, 3, 6, 15, 26, 28, 51, 58, 59, 43, 114, 108]))],
    [(55, bytes([1, 121, 3, 6, 15, 108, 114, 119, 252])), (57, b"\x05\xdc"), (12, b"Toms-iPhone")],
    [(55, bytes([1, 121, 3, 6, 15, 108, 114, 119, 252, 95, 44, 46])), (12, b"Annas-MacBook-Air")],
    [(12, b"thinkpad"), (55, bytes([1, 28, 2, 3, 15, 6, 119, 12, 44, 47, 26, 121, 42]))],
    [(12, b"BRW3C2AF4E1B7D9"), (55, bytes([6, 3, 1, 15, 66, 67, 13, 44, 2, 42, 12]))],
    [(55, bytes([1, 3, 28, 6])), (12, b"ESP_3A4F1C")],
    [(12, b"PS5-7C2E9A"), (55, bytes([1, 3, 15, 6]))],
]


def mac_of(round_no: int, i: int) -> str:
    return f"02:{round_no:02x}:00:00:{i >> 8:02x}:{i & 0xff:02x}"


def controller(directory: str, identify: bool):
    components = ("dhcp", "routing", "identify") if identify else ("dhcp", "routing")
    core = make_core(Path(directory), components=components, clock=Clock(),
                     new_macs_burst=10**6, new_macs_per_minute=10**7, max_pending=10**6)
    ports = {"br0": 0xFFFFFFFE, **{f"d{p}": p for p in range(1, 9)}}
    core.datapath_up(Datapath(dpid=1, ports=ports))
    gc.collect()
    gc.freeze()          # as the controller does once it is up (gcwatch.py)
    return core


def one_round(identify: bool, round_no: int) -> tuple[float, float]:
    """(mean seconds per new device's DISCOVER, per known device's DISCOVER again) of one
    round on a fresh controller."""
    with tempfile.TemporaryDirectory(prefix="bench-identify-") as d:
        core = controller(d, identify)
        frames = [(1 + i % 8, dhcp_frame(mac_of(round_no, i), m.DISCOVER, options=KINDS[i % len(KINDS)]))
                  for i in range(DEVICES)]
        identify = core.ctx.component("identify")
        handling = settling = 0.0
        for port, frame in frames:
            t0 = time.thread_time()
            core.packet_in(PacketIn(in_port=port, data=frame))
            t1 = time.thread_time()
            handling += t1 - t0
            if identify is not None and port == 8:
                identify.drain()            # its timer's pass (every 8 devices here)
                settling += time.thread_time() - t1
        if identify is not None:
            t1 = time.thread_time()
            identify.drain()
            settling += time.thread_time() - t1
        discover, settled = handling / DEVICES, settling / DEVICES
        offers = core.switch.take_packet_outs()
        # the same devices asking again (a DISCOVER after a reboot, a second one before the
        # OFFER came): their options are not news, nothing is classified
        t0 = time.thread_time()
        for port, frame in frames:
            core.packet_in(PacketIn(in_port=port, data=frame))
        if identify is not None:
            identify.drain()
        request = (time.thread_time() - t0) / DEVICES
        core.switch.take_packet_outs()
        if identify is not None:
            SETTLED.append(settled)
        assert offers, "the controller answered nothing"
        core.stop()
        return discover, request


def memory_per_device() -> float:
    with tempfile.TemporaryDirectory(prefix="bench-identify-") as d:
        core = controller(d, True)
        identify = core.ctx.component("identify")
        evidence = [{"prl": ",".join(str(b) for b in dict(k)[55]), "hostname": (dict(k).get(12) or b"").decode()}
                    for k in KINDS]
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for i in range(DEVICES):
            identify.add(mac_of(99, i), {k: v for k, v in evidence[i % len(evidence)].items() if v})
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        grown = sum(s.size_diff for s in after.compare_to(before, "filename")
                    if "components/identify" in s.traceback[0].filename)
        core.stop()
        return grown / DEVICES


def classify_us() -> float:
    rules, _ = load()
    samples = [{"prl": "1,121,3,6,15,108,114,119,252", "hostname": "Toms-iPhone"},
               {"prl": "1,3,6,15,31,33,43,44,46,47,119,121,249,252", "vendor": "MSFT 5.0"},
               {"prl": "9,9,9", "hostname": "dhcpcd3"}]
    times = []
    for _ in range(300):
        for ev in samples:
            t0 = time.thread_time()
            classify(ev, rules)
            times.append(time.thread_time() - t0)
    return statistics.median(times) * 1e6


def main() -> int:
    rounds: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    order = [False, True, True, False] * (ROUNDS // 2) + [False, True][:ROUNDS % 2 * 2]
    for n, on in enumerate(order):
        rounds[on].append(one_round(on, n))
        print(f"[round {n + 1}/{len(order)}] identification {'on' if on else 'off'}: "
              f"{rounds[on][-1][0] * 1e6:.0f} us a DISCOVER, {rounds[on][-1][1] * 1e6:.0f} us the same again",
              file=sys.stderr, flush=True)
    result = {
        "discover_us": {k: statistics.median(r[0] for r in v) * 1e6 for k, v in (("off", rounds[False]),
                                                                                ("on", rounds[True]))},
        "again_us": {k: statistics.median(r[1] for r in v) * 1e6 for k, v in (("off", rounds[False]),
                                                                               ("on", rounds[True]))},
        "classify_us": classify_us(),
        "settle_us": statistics.median(SETTLED) * 1e6,
        "bytes_per_device": memory_per_device(),
        "devices": DEVICES, "rounds": len(order),
    }
    d, r = result["discover_us"], result["again_us"]
    print(f"Identification: the controller's DHCP handling with it off and on (the handler alone; identify's "
          f"timer, which classifies after the answer went out, on its own line), {DEVICES} new devices a round, "
          f"median of {len(order) // 2} rounds each, alternating (the strict fake switch: the controller's own CPU)")
    rows = [("a new device's DISCOVER (controller)", f"{d['off']:.0f} us", f"{d['on']:.0f} us",
             f"{d['on'] / d['off']:.2f}x"),
            ("the same device's DISCOVER again (controller)", f"{r['off']:.0f} us", f"{r['on']:.0f} us",
             f"{r['on'] / r['off']:.2f}x"),
            ("identify's timer per new device (classify, keep)", "", f"{result['settle_us']:.0f} us", ""),
            ("one classification (the whole catalog)", "", f"{result['classify_us']:.0f} us", ""),
            ("memory per device (evidence and guess)", "", f"{result['bytes_per_device']:.0f} B", "")]
    head = ("metric", "identify off", "identify on", "on/off")
    widths = [max(len(row[i]) for row in [*rows, head]) for i in range(4)]
    for row in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-identify.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
