#!/usr/bin/env python3
"""`make bench` section for the radio monitor ("Measured"):

  (a) CPU cost of monitoring 50 stations: a synthetic 50-station `iw station dump` read by the
      real monitor component through its configurable command (`cat FILE`), per poll:
      parsing only (stationdump.parse), parse + counters + 50 `link` events (monitor.apply),
      and the whole poll with the process start (the controller's CPU plus its child's, from
      getrusage); then the controller's CPU share at 1 poll/s over BENCH_RADIO_SECONDS.
      `cat` stands in for `iw`: on the router iw's netlink dump adds its own cost per poll.
  (b) the delay from a change in signal (the dump file rewritten) to the label's opacity
      changing in Chromium (tests/ui/bench_radio.mjs against an emulated home): median and
      p90 over BENCH_RADIO_CHANGES changes; the monitor polls every second, so about half a
      second of it is the wait for the next poll.
Prints a markdown table."""
from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "nox-modules")]

from homework.components.radio.stationdump import parse  # noqa: E402
from homework.config import Config  # noqa: E402
from homework.core import Core  # noqa: E402

STATIONS = 50
POLLS = int(os.environ.get("BENCH_RADIO_POLLS", 300))
SECONDS = int(os.environ.get("BENCH_RADIO_SECONDS", 20))


def station(i: int, poll: int) -> str:
    mac = f"02:00:00:00:{i // 256:02x}:{i % 256:02x}"
    packets = 1000 + 37 * poll + i
    return "\n".join([
        f"Station {mac} (on wlan0)", f"\tinactive time:\t{40 + i} ms", f"\trx bytes:\t{52000 + 900 * poll}",
        f"\trx packets:\t{400 + 9 * poll}", f"\ttx bytes:\t{88000 + 1500 * poll}", f"\ttx packets:\t{packets}",
        f"\ttx retries:\t{packets // 20}", "\ttx failed:\t1", "\tbeacon loss:\t0", "\tbeacon rx:\t1000",
        "\trx drop misc:\t0", f"\tsignal:  \t-{40 + i % 50} [-{40 + i % 50}, -{42 + i % 50}] dBm",
        f"\tsignal avg:\t-{41 + i % 50} [-{41 + i % 50}, -{43 + i % 50}] dBm", "\tbeacon signal avg:\t-45 dBm",
        "\ttx bitrate:\t144.4 MBit/s MCS 15 short GI", "\ttx duration:\t2000 us",
        "\trx bitrate:\t130.0 MBit/s MCS 15", "\trx duration:\t1500 us", "\tlast ack signal:-44 dBm",
        "\tavg ack signal:\t-44 dBm", "\tairtime weight: 256", "\texpected throughput:\t60.5Mbps",
        "\tauthorized:\tyes", "\tauthenticated:\tyes", "\tassociated:\tyes", "\tpreamble:\tshort",
        "\tWMM/WME:\tyes", "\tMFP:\t\tno", "\tTDLS peer:\tno", "\tDTIM period:\t2", "\tbeacon interval:100",
        "\tshort slot time:yes", "\tconnected time:\t3600 seconds", "\tcurrent time:\t1700000000000 ms", ""])


def dump(poll: int) -> str:
    return "\n".join(station(i, poll) for i in range(STATIONS))


def cpu_ms() -> float:
    """This process's CPU time plus its waited-for children's, in ms."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime) * 1000.0


def monitor_cost() -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-radio-") as tmp:
        live = Path(tmp) / "dump.txt"
        live.write_text(dump(0))
        timers = []
        config = Config(state_dir=Path(tmp), components=("radio",), control_socket=Path(tmp) / "control.sock",
                        radio_interfaces=("wlan0",), radio_station_dump_command=f"cat {live}",
                        radio_info_command="true", radio_hostapd_ctrl_dir="")
        core = Core(config, spawn_periodic=lambda seconds, fn: timers.append(fn))
        core.load_components()
        monitor = core.ctx.component("radio")
        texts = [dump(p) for p in range(1, 11)]
        assert len(parse(texts[0]).stations) == STATIONS

        start = cpu_ms()
        for i in range(POLLS):
            parse(texts[i % 10], "wlan0")
        parse_ms = (cpu_ms() - start) / POLLS

        start = cpu_ms()
        for i in range(POLLS):
            monitor.apply("wlan0", texts[i % 10])
        apply_ms = (cpu_ms() - start) / POLLS

        start = cpu_ms()
        for i in range(POLLS):
            live.write_text(texts[i % 10])
            monitor.tick()
        poll_ms = (cpu_ms() - start) / POLLS
        assert core.counters.get("radio.dump_errors") == 0

        # 1 poll/s, as the controller runs it: CPU share over wall time (sleeping in between).
        start, wall = cpu_ms(), time.monotonic()
        next_at = wall
        while time.monotonic() - wall < SECONDS:
            monitor.tick()
            next_at += 1.0
            time.sleep(max(0.0, next_at - time.monotonic()))
        share = (cpu_ms() - start) / ((time.monotonic() - wall) * 1000.0) * 100.0
        core.stop()
        return {"parse_ms": parse_ms, "apply_ms": apply_ms, "poll_ms": poll_ms, "share_pct": share}


def label_delay() -> dict | None:
    if not (REPO / "tests" / "node_modules" / "playwright-core").exists():
        print("bench_radio: playwright-core missing (make deps): no browser figures", file=sys.stderr)
        return None
    proc = subprocess.run(["node", str(REPO / "tests" / "ui" / "bench_radio.mjs")], cwd=REPO / "tests",
                          capture_output=True, text=True, timeout=900, env=dict(os.environ))
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> int:
    cost = monitor_cost()
    print(f"Radio monitor, {STATIONS} stations, {POLLS} polls (synthetic `iw station dump`, read with `cat`)\n")
    print("| what | value |")
    print("|---|---|")
    print(f"| parse only (stationdump.parse), per poll | {cost['parse_ms']:.2f} ms CPU |")
    print(f"| parse + counters + {STATIONS} link events (monitor.apply), per poll | {cost['apply_ms']:.2f} ms CPU |")
    print(f"| whole poll incl. starting the dump process, per poll | {cost['poll_ms']:.2f} ms CPU |")
    print(f"| controller at 1 poll/s over {SECONDS} s (own + child CPU / wall) | {cost['share_pct']:.2f} % of one core |")
    delay = label_delay()
    if delay is None:
        print("| signal change -> label opacity in Chromium | not measured (see stderr) |")
        return 1
    ms = delay["delay_ms"]
    print(f"| signal change -> label opacity in Chromium ({len(ms)} changes, poll every "
          f"{delay['interval']} s) | median {statistics.median(ms):.0f} ms, p90 {p90(ms):.0f} ms, "
          f"min {min(ms):.0f} ms, max {max(ms):.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
