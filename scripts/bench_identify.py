#!/usr/bin/env python3
"""Identification benchmark: what knowing each device costs the controller.

In one process, on the strict fake switch the unit tests use (no OVS, no clients: the
controller's own CPU, not the machine's):

  1. The controller's DHCP path: ROUNDS rounds of DEVICES new devices' DISCOVERs (each
     with a real device's options: Windows, Android, iOS, macOS, Linux, a printer, an
     ESP8266, a console, in turn) handled by a controller with identification off
     (dhcp, routing) and one with it on (dhcp, routing, identify), the rounds alternating
     (off, on, on, off, ...) so a busy spell does not land on one. Per DISCOVER: the
     median of the rounds' means; the ratio on/off is the cost. Two cadences of identify's
     timer (its `drain`, every 0.25 s on the controller): after the burst (a burst of new
     devices is handled well within one period), and after every EVERY (25) devices: the
     timer's period at 100 new devices a second, the crowd bench's rate; the handler
     right after a pass runs with the caches the pass left colder. Each gives the DISCOVER's
     handler alone, the timer's passes per device, and the two together: all the CPU
     the controller spends on a new device. A known device's path is measured the same
     way: the same devices' DISCOVERs again (a fingerprint already heard is not news:
     nothing is classified).
  2. One classification (the whole catalog against a device's evidence): median of many.
     Times are the controller thread's CPU time (time.thread_time): on a shared, busy
     machine the other processes' time does not land in one round's figure.
  3. Bad input: identify's timer reading a hostile DHCP request (every request code four
     times over, a vendor class of control bytes, a garbage user class, an option cut off)
     against an iPhone's, and the announcement listener parsing a large mDNS announcement
     against one whose header declares thousands of records (rejected unparsed); medians.
  4. Memory per device: what the identify component holds (evidence, guess, the marks
     index, the inbox's news keys) once its timer has read a DISCOVER of each of DEVICES
     devices, by tracemalloc, divided by DEVICES.

homework-dhcpd's side is in `make bench`'s DHCP section: its "homework-dhcpd+identify"
column against "homework-dhcpd" in the same run (scripts/bench_dhcp.py).
Environment: BENCH_IDENTIFY_DEVICES (500), BENCH_IDENTIFY_ROUNDS (6), BENCH_IDENTIFY_EVERY (25). JSON in out/bench-identify.json.
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


def one_round(identify: bool, round_no: int, every: int) -> dict[str, float]:
    """Seconds per device of one round on a fresh controller: "discover" (the new device's
    DISCOVER's handler), "timer" (identify's passes), "again" (the same DISCOVER again,
    handler and timer). The timer passes after every `every` devices, and after the burst."""
    with tempfile.TemporaryDirectory(prefix="bench-identify-") as d:
        core = controller(d, identify)
        frames = [(1 + i % 8, dhcp_frame(mac_of(round_no, i), m.DISCOVER, options=KINDS[i % len(KINDS)]))
                  for i in range(DEVICES)]
        component = core.ctx.component("identify")
        if component is not None:
            component.oui.vendor("00:15:5d:00:00:01")     # the registry read, as at the controller's start
        handling = timer = 0.0

        def drain() -> float:
            t0 = time.thread_time()
            while True:                     # every pass the burst needs (at most READ_MAX a pass)
                component.drain()
                if not getattr(component, "inbox", ()):
                    return time.thread_time() - t0

        for n, (port, frame) in enumerate(frames, 1):
            t0 = time.thread_time()
            core.packet_in(PacketIn(in_port=port, data=frame))
            handling += time.thread_time() - t0
            if component is not None and n % every == 0:
                timer += drain()
        if component is not None:
            timer += drain()
        offers = core.switch.take_packet_outs()
        assert offers, "the controller answered nothing"
        if component is not None:
            assert len(component.guesses) == DEVICES, "identify did not classify every new device"
        # the same devices asking again (a DISCOVER after a reboot, a second one before the
        # OFFER came): their options are not news, nothing is classified
        t0 = time.thread_time()
        for port, frame in frames:
            core.packet_in(PacketIn(in_port=port, data=frame))
        if component is not None:
            drain()
        again = time.thread_time() - t0
        core.switch.take_packet_outs()
        core.stop()
        return {"discover": handling / DEVICES, "timer": timer / DEVICES, "again": again / DEVICES}


def memory_per_device() -> float:
    """What identify keeps per device (evidence, guess, the marks index, the inbox's
    news keys) once its timer has read a DISCOVER of each: bytes allocated by its own
    code (components/identify, fingerprint.py) and still held, per device."""
    with tempfile.TemporaryDirectory(prefix="bench-identify-") as d:
        core = controller(d, True)
        identify = core.ctx.component("identify")
        options = [b"".join(bytes([code, len(value)]) + value for code, value in kind) + b"\xff" for kind in KINDS]
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for i in range(DEVICES):
            identify.inbox.dhcp4(mac_of(99, i), options[i % len(options)])
        while len(identify.inbox):
            identify.drain()
        assert len(identify.guesses) == DEVICES
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        grown = sum(s.size_diff for s in after.compare_to(before, "filename")
                    if "components/identify" in s.traceback[0].filename
                    or s.traceback[0].filename.endswith("homework/fingerprint.py"))
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


# identify's timer passes every 0.25 s: at the crowd bench's 100 new devices a second that is
# one pass every 25 devices (BENCH_IDENTIFY_EVERY: another cadence)
EVERY = int(os.environ.get("BENCH_IDENTIFY_EVERY", "25"))
CADENCES = (("after the burst", DEVICES), (f"every {EVERY} devices", EVERY))


def _median_us(fn, times: int = 300) -> float:
    samples = []
    for _ in range(times):
        t0 = time.thread_time()
        fn()
        samples.append(time.thread_time() - t0)
    return statistics.median(samples) * 1e6


def bad_input_us() -> dict[str, float]:
    import dns.message
    import dns.rrset
    from homework.components.identify import announce, inbox

    def tlv(code: int, value: bytes) -> bytes:
        return bytes([code, len(value)]) + value
    iphone = b"".join(tlv(c, v) for c, v in [(53, b"\x01"), *KINDS[2]]) + b"\xff"
    hostile = (tlv(53, b"\x01") + tlv(55, bytes(range(1, 256))) * 4 + tlv(60, bytes(range(32)) * 7)
               + tlv(77, bytes(range(255))) + bytes([12, 200]) + b"cut")

    def read(raw: bytes):
        box = inbox.Inbox()
        box.dhcp4("02:00:00:00:00:01", raw)
        return lambda: (box._last_raw.clear(), box._last4.clear(), box.dhcp4("02:00:00:00:00:01", raw), box.read())
    msg = dns.message.Message(id=0)
    msg.flags = 0x8400
    for i in range(26):         # about 9,000 bytes: the largest datagram the listener reads
        msg.answer.append(dns.rrset.from_text_list(f"{'x' * 60}-{i}._svc{i}._tcp.local.", 120, "IN", "TXT",
                                                   ['"md=' + "M" * 250 + '"']))
    large = msg.to_wire()
    bomb = bytes(4) + (0).to_bytes(2, "big") + (5000).to_bytes(2, "big") + bytes(4) + b"\xc0\x0c" * 4000
    return {"iphone_request_us": _median_us(read(iphone)), "hostile_request_us": _median_us(read(hostile)),
            "mdns_large_us": _median_us(lambda: announce.parse_mdns(large), 50),
            "mdns_large_bytes": len(large),
            "mdns_bomb_us": _median_us(lambda: announce.parse_mdns(bomb))}


def main() -> int:
    order = [False, True, True, False] * (ROUNDS // 2) + [False, True][:ROUNDS % 2 * 2]
    runs: dict[tuple[str, bool], list[dict[str, float]]] = {}
    for n, on in enumerate(order):
        for c, (cadence, every) in enumerate(CADENCES):
            run = one_round(on, n * len(CADENCES) + c, every)
            runs.setdefault((cadence, on), []).append(run)
            print(f"[round {n + 1}/{len(order)}, timer {cadence}] identification {'on' if on else 'off'}: "
                  f"{run['discover'] * 1e6:.0f} us a DISCOVER's handler, {run['timer'] * 1e6:.0f} us the timer, "
                  f"{run['again'] * 1e6:.0f} us the same again", file=sys.stderr, flush=True)

    def median_us(cadence: str, on: bool, *keys: str) -> float:
        return statistics.median(sum(r[k] for k in keys) for r in runs[(cadence, on)]) * 1e6

    result: dict = {"devices": DEVICES, "rounds": len(order)}
    for cadence, _ in CADENCES:
        result[cadence] = {f"{what}_us": {side: median_us(cadence, on, *keys) for side, on in (("off", False),
                                                                                           ("on", True))}
                           for what, keys in (("discover", ("discover",)), ("timer", ("timer",)),
                                              ("total", ("discover", "timer")), ("again", ("again",)))}
    result.update(classify_us=classify_us(), bytes_per_device=memory_per_device(), bad_input=bad_input_us())
    print(f"Identification: the controller's CPU for a new device with it off and on, {DEVICES} new devices a round, "
          f"median of {len(order) // 2} rounds each, alternating (the strict fake switch: the controller's own CPU); "
          f"identify's timer (which reads, classifies and keeps what the device said, after the answer went out) "
          f"after the burst or after every {EVERY} devices")

    def row(name: str, figures: dict[str, float]) -> tuple[str, str, str, str]:
        off, on = figures["off"], figures["on"]
        return (name, f"{off:.0f} us", f"{on:.0f} us", f"{on / off:.2f}x" if off else "")

    rows = []
    for cadence, _ in CADENCES:
        r = result[cadence]
        rows += [row(f"a new device's DISCOVER, the handler (timer {cadence})", r["discover_us"]),
                 (f"identify's timer per new device (timer {cadence})", "", f"{r['timer_us']['on']:.0f} us", ""),
                 row(f"all told: handler and timer per new device (timer {cadence})", r["total_us"])]
    again = result[CADENCES[0][0]]["again_us"]
    rows += [row("the same device's DISCOVER again (nothing new)", again),
             ("one classification (the catalog's index, its candidates tried)", "",
              f"{result['classify_us']:.0f} us", ""),
             ("memory per device (evidence, guess, index, news keys)", "", f"{result['bytes_per_device']:.0f} B", "")]
    bad = result["bad_input"]
    rows += [("the timer reading an iPhone's DISCOVER", "", f"{bad['iphone_request_us']:.0f} us", ""),
             ("... a hostile one (every request code x4, control bytes, garbage 77, cut off)", "",
              f"{bad['hostile_request_us']:.0f} us", ""),
             (f"the listener parsing a {bad['mdns_large_bytes']}-byte mDNS announcement", "",
              f"{bad['mdns_large_us']:.0f} us", ""),
             ("... one declaring 5,000 records (rejected unparsed)", "", f"{bad['mdns_bomb_us']:.1f} us", "")]
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
