#!/usr/bin/env python3
"""Cost of usage accounting: the same home, the same device, alternating rounds
with the usage component loaded ("on") and not loaded ("off"; there is no config key that
turns its accounting off, so "off" is the controller without it). Routing's per-flow
counters and polling run in both: they exist without usage (flow limits, metrics), and
usage is what sums their `bandwidth` events per hour and writes them to state.db.

Per round and setting: a controller restart with that component list, then bulk TCP
(iperf3 device -> internet) and new connections/s (wrk, Connection: close), measured as
scripts/bench_routing.py does (its helpers, its BENCH_ROUTING_RUNS / _SECONDS), with the
router's default intervals (routing polls every 10 s, usage writes every 60 s), or with
both every second (BENCH_USAGE_STRESS=1). One unrecorded warm-up, then an even number of rounds, each
in the other order (on-off, off-on, ...), so neither setting is always first after a
restart. Medians of the rounds; ratio on / off.

Storage: N devices x one month of hourly rows (31 x 24) written through the usage book's
own code (UsageBook.add / flush and the state store's batched write) into a temporary
state.db; bytes added to the file per device per month.
Environment: BENCH_USAGE_ROUNDS (8, made even), BENCH_USAGE_DEVICES (20), BENCH_USAGE_STRESS
(1: poll and write every second instead of the defaults). JSON in
out/bench-usage.json.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import datetime, UTC
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "nox-modules"))

import bench_routing as br  # noqa: E402
from homelab import Home  # noqa: E402
from homelab.routing import permitted_device, wait_until  # noqa: E402

DEVICES = int(os.environ.get("BENCH_USAGE_DEVICES", "20"))
ROUNDS = max(4, int(os.environ.get("BENCH_USAGE_ROUNDS", "8")) + 1) // 2 * 2
# The router's own settings (routing polls every 10 s, usage writes once a minute) unless
# BENCH_USAGE_STRESS=1: both every second, to see the accounting work at its most often.
STRESS = os.environ.get("BENCH_USAGE_STRESS") == "1"
POLL_S, FLUSH_S = (1, 1) if STRESS else (10, 60)
WITH = ["dhcp", "routing", "usage"]
WITHOUT = ["dhcp", "routing"]


def use_components(home: Home, components: list[str]) -> None:
    home.config_overrides["controller"]["components"] = components
    home._write_config()            # homelab writes its config file from config_overrides
    home.restart_controller()
    wait_until(lambda: "priority=20000" in home.dump_flows(), 30, "the permitted device's flows back")


def throughput() -> dict:
    config = {"controller": {"components": WITH},
              "routing": {"flow_stats_interval": POLL_S},
              "usage": {"flush_interval": FLUSH_S, "timezone": "UTC"}}
    rounds: dict[str, dict[str, list]] = {"on": {"conn": [], "iperf": []}, "off": {"conn": [], "iperf": []}}
    with Home(config=config, hwdb=False) as home:
        br.start_servers(home)
        dev = permitted_device(home)
        br.connection_rates(dev)                     # warm-up: not recorded
        br.iperf(dev, br.WEB_ADDR, 5201)
        for n in range(ROUNDS):
            for label, components in (("on", WITH), ("off", WITHOUT)) if n % 2 == 0 else \
                    (("off", WITHOUT), ("on", WITH)):
                use_components(home, components)
                rates, _lat = br.connection_rates(dev)
                rounds[label]["conn"] += rates
                rounds[label]["iperf"].append(br.iperf(dev, br.WEB_ADDR, 5201))
                br.say(f"round {n + 1} usage {label}: conn/s {rates}, iperf {rounds[label]['iperf'][-1]} Mb/s")
        written = home.homework("--json", "usage", "day", "device").stdout
    return {label: {"conn_per_s": br.median(r["conn"]), "iperf_mbps": br.median(r["iperf"]),
                    "rounds": r} for label, r in rounds.items()} | {"usage_seen": json.loads(written or "{}")}


def storage(devices: int) -> dict:
    from homework.components.usage.book import UsageBook
    from homework.state import StateStore
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        store = StateStore(path)
        store.close()
        empty = path.stat().st_size
        store = StateStore(path)
        book = UsageBook(store, UTC)
        start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
        hours = 31 * 24
        for h in range(hours):
            now = start + h * 3600 + 1800
            for d in range(devices):
                book.add(f"02:00:00:00:{d // 256:02x}:{d % 256:02x}", 1_000_000 + d, 20_000_000 + h, now)
            book.flush(now)
            store.flush(force=True)
        rows = store.execute("SELECT count(*) AS n FROM usage_hours")[0]["n"]
        store.close()
        full = path.stat().st_size
    return {"devices": devices, "rows": rows, "empty_bytes": empty, "bytes": full,
            "bytes_per_device_month": (full - empty) / devices}


def ratio(x, y):
    return round(x / y, 3) if x and y else None


def spread(values) -> str:
    values = [v for v in values if v is not None]
    return f"{min(values):.0f}-{max(values):.0f}" if values else "-"


def print_table(results: dict) -> None:
    on, off = results["throughput"]["on"], results["throughput"]["off"]
    s = results["storage"]
    print(f"\nusage accounting on vs off (medians of {len(on['rounds']['iperf'])} alternating rounds; routing polls "
          f"every {POLL_S} s, usage writes every {FLUSH_S} s{' (stress)' if STRESS else ': the defaults'})")
    print(f"{'':18} {'usage on':>9} {'usage off':>9} {'on / off':>8}   {'on: min-max':>11} {'off: min-max':>12}")
    for name, key, raw in (("new connections/s", "conn_per_s", "conn"), ("iperf3 TCP Mb/s", "iperf_mbps", "iperf")):
        print(f"{name:18} {on[key] or 0:9.0f} {off[key] or 0:9.0f} {ratio(on[key], off[key]) or 0:8.3f}   "
              f"{spread(on['rounds'][raw]):>11} {spread(off['rounds'][raw]):>12}")
    print(f"\nstorage: {s['devices']} devices x 31 days x 24 h = {s['rows']} rows: state.db "
          f"{s['empty_bytes']} -> {s['bytes']} bytes, {s['bytes_per_device_month'] / 1000:.1f} KB per device "
          f"per month ({13 * s['bytes_per_device_month'] / 1e6:.2f} MB for 13 months)")


def main() -> int:
    if sys.argv[1:2] == ["--table"]:        # print the table of an earlier run again
        print_table(json.loads((REPO / "out" / "bench-usage.json").read_text()))
        return 0
    results = {"storage": storage(DEVICES)}
    results["throughput"] = throughput()
    print_table(results)
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-usage.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
