#!/usr/bin/env python3
"""Latency under load: a home behind a slow ISP link with a cable modem's deep
buffer (homelab isp_link: 20/5 Mbit/s, 500 ms of queue each way). A "bulk" device saturates
the link down and up with iperf3 (8 streams each way) while a "prio" device pings the
internet's web address every 50 ms. Variants, alternating within each round:

  homework   Homework's qos on with its defaults (upload shaped at 95% of the link, download
             at 90%, byte-limited leaves), the prio device in "high"
  off        no shaping: the queue builds in the modem
  by hand    Homework's qos off and a plain Linux router's textbook HTB made with tc in the
             router namespace: HTB on wan0 (upload) and br0 (download) at 95% of the link,
             100-packet pfifo leaves, a high
             class for the prio device (download: u32 on its address; upload: nftables sets
             the packet's priority to the class, as the NAT has rewritten the source by the
             time wan0 sees it and this kernel's u32 cannot match marks), default for the rest

Per variant, after WARM_S of load: p50 and p99 RTT increase over the idle median, and the
bulk device's throughput as % of the link (iperf3's 1 s intervals while the pings run). Medians of
the rounds. Then the cost of classification: on a fast link (no isp_link), the bulk
device's iperf3 throughput with Homework's shaper on at a huge rate vs off.
Environment: BENCH_QOS_ROUNDS (3), BENCH_QOS_PING_SECONDS (6). JSON in out/bench-qos.json;
`--table` prints the table of the last run again.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from homelab import BRIDGE, WAN_IF, WEB_ADDR, Home  # noqa: E402
from homelab.latency import BulkLoad, percentile, ping_rtts  # noqa: E402
from homelab.routing import permitted_device  # noqa: E402

LINK = {"down_kbit": 20000, "up_kbit": 5000, "buffer_ms": 500}
SHAPE_PERCENT = 95
ROUNDS = int(os.environ.get("BENCH_QOS_ROUNDS", "3"))
PING_S = float(os.environ.get("BENCH_QOS_PING_SECONDS", "6"))
PING_INTERVAL = 0.05
# The pings start once the load is steady: the streams' slow start overshoots into the
# modem's buffer, which drains only at the few % of the line the shaper leaves spare.
WARM_S = 8
HUGE_KBIT = 10_000_000
COST_SECONDS = 4
AIM_P99_MS = 10
AIM_BULK_PCT = 85
# The controller homelab runs (HOMELAB_NOX_MODULES: another checkout) has the qos component?
NOX = Path(os.environ.get("HOMELAB_NOX_MODULES") or REPO / "nox-modules")
HAVE_QOS = (NOX / "homework" / "components" / "qos").is_dir()
T0 = time.monotonic()

# The plain Linux router's shaper, by hand. The prio device's upload packets get their
# class as skb priority from nftables (the NAT rewrites their source before wan0's qdisc).
HAND_TABLE = "bench_qos_hand"
HIGH_SHARE = 0.3      # the high class's assured share of the link (qos.high_share)
LEAF_LIMIT = 100      # packets per leaf queue (pfifo: no fq_codel on this kernel)


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# -- switching variants ------------------------------------------------------------------------
def homework_qos(home: Home, on: bool) -> None:
    if not HAVE_QOS:
        return
    r = home.homework("qos", "link", "--on" if on else "--off")
    if r.returncode != 0:
        raise RuntimeError(f"homework qos link: {r.stderr}{r.stdout}")


def hand_shaper(home: Home, prio_ip: str, on: bool) -> None:
    for dev in (WAN_IF, BRIDGE):
        home.router(["tc", "qdisc", "del", "dev", dev, "root"], check=False)
    home.router(["nft", "delete", "table", "ip", HAND_TABLE], check=False)
    if not on:
        return
    home.router(["nft", "-f", "-"], input=(
        f"table ip {HAND_TABLE} {{\n chain forward {{\n  type filter hook forward priority mangle; policy accept;\n"
        f"  oifname {WAN_IF} ip saddr {prio_ip} meta priority set 1:10\n }}\n}}\n"))
    for dev, kbit in ((WAN_IF, LINK["up_kbit"]), (BRIDGE, LINK["down_kbit"])):
        rate = kbit * SHAPE_PERCENT // 100
        tc = ["tc"]
        home.router(tc + ["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "20"])
        home.router(tc + ["class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                          "rate", f"{rate}kbit", "ceil", f"{rate}kbit"])
        # As Homework's classes: high sure of its share and served first, both borrowing up
        # to the link; but both ways at 95% with packet-limited leaves (Homework: 90% down, bytes).
        high = int(rate * HIGH_SHARE)
        for cls, cls_rate, ceil, prio in (("1:10", high, rate, "0"), ("1:20", rate - high, rate, "1")):
            home.router(tc + ["class", "add", "dev", dev, "parent", "1:1", "classid", cls, "htb",
                              "rate", f"{cls_rate}kbit", "ceil", f"{ceil}kbit", "prio", prio, "quantum", "1514"])
            home.router(tc + ["qdisc", "add", "dev", dev, "parent", cls, "pfifo", "limit", str(LEAF_LIMIT)])
    home.router(["tc", "filter", "add", "dev", BRIDGE, "parent", "1:", "protocol", "ip", "prio", "1",
                 "u32", "match", "ip", "dst", f"{prio_ip}/32", "flowid", "1:10"])


def use_variant(home: Home, variant: str, prio_ip: str) -> None:
    hand_shaper(home, prio_ip, variant == "by hand")
    homework_qos(home, variant == "homework")


# -- latency under load --------------------------------------------------------------------------
def measure_loaded(home: Home, bulk, prio) -> dict:
    with BulkLoad(home, bulk, WARM_S + PING_S + 2) as load:
        time.sleep(WARM_S)
        t = load.elapsed()
        rtts = ping_rtts(prio, WEB_ADDR, PING_S, PING_INTERVAL)
        t_end = load.elapsed()
        load.wait()
        rates = load.window(int(t), int(t_end) + 1)
    sent = int(PING_S / PING_INTERVAL)
    return {"p50_ms": percentile(rtts, 50), "p99_ms": percentile(rtts, 99), "lost": sent - len(rtts),
            "down_pct": pct_of(rates.get("down"), LINK["down_kbit"]),
            "up_pct": pct_of(rates.get("up"), LINK["up_kbit"])}


def pct_of(kbit, link_kbit):
    return round(100 * kbit / link_kbit, 1) if kbit else None


def latency_under_load() -> dict:
    variants = ["homework", "off", "by hand"] if HAVE_QOS else ["off", "by hand"]
    config = {"controller": {"components": ["dhcp", "routing", "qos"] if HAVE_QOS else ["dhcp", "routing"]}}
    if HAVE_QOS:
        config["qos"] = {"enabled": False, "down_kbit": LINK["down_kbit"], "up_kbit": LINK["up_kbit"]}
    rounds: dict[str, list[dict]] = {v: [] for v in variants}
    idle: list[float] = []
    with Home(config=config, hwdb=False, isp_link=LINK) as home:
        bulk, prio = permitted_device(home, "bulk"), permitted_device(home, "prio")
        prio_ip = prio.ipv4()[0]
        if HAVE_QOS:
            r = home.homework("qos", "device", prio.mac, "high")
            if r.returncode != 0:
                raise RuntimeError(f"homework qos device: {r.stderr}{r.stdout}")
        for n in range(ROUNDS):
            use_variant(home, "off", prio_ip)
            idle += ping_rtts(prio, WEB_ADDR, 2, PING_INTERVAL)
            order = variants[n % len(variants):] + variants[:n % len(variants)]
            for variant in order:
                use_variant(home, variant, prio_ip)
                m = measure_loaded(home, bulk, prio)
                rounds[variant].append(m)
                say(f"round {n + 1} {variant}: {m}")
                time.sleep(1)        # the modem's queue drains
        alone = idle_line(home, prio) if HAVE_QOS else {}
        use_variant(home, "off", prio_ip)
    idle_ms = median(idle)
    out = {"idle_ms": idle_ms, "variants": {}, "alone": alone}
    for v, ms in rounds.items():
        out["variants"][v] = {
            "p50_increase_ms": median([m["p50_ms"] - idle_ms for m in ms if m["p50_ms"] is not None]),
            "p99_increase_ms": median([m["p99_ms"] - idle_ms for m in ms if m["p99_ms"] is not None]),
            "down_pct": median([m["down_pct"] for m in ms]), "up_pct": median([m["up_pct"] for m in ms]),
            "lost": sum(m["lost"] for m in ms), "rounds": ms}
    return out


def idle_line(home: Home, prio) -> dict:
    """The prio device alone on the line (Homework's qos on), downloading in high and in
    default by turns: High must never be capped below Normal when nobody else wants the line."""
    use_variant(home, "homework", prio.ipv4()[0])
    got: dict[str, list] = {"high": [], "default": []}
    for n in range(ROUNDS):
        for cls in (("high", "default") if n % 2 == 0 else ("default", "high")):
            r = home.homework("qos", "device", prio.mac, cls)
            if r.returncode != 0:
                raise RuntimeError(f"homework qos device: {r.stderr}{r.stdout}")
            with BulkLoad(home, prio, COST_SECONDS, streams=2) as load:
                load.wait()
                rate = load.total().get("down")
            got[cls].append(rate and rate / 1000)
            say(f"alone round {n + 1} {cls}: {rate} kbit/s down")
            time.sleep(1)
    home.homework("qos", "device", prio.mac, "high")
    return {cls: median(v) for cls, v in got.items()} | {"rounds": got}


# -- cost of classification ------------------------------------------------------------------
def classification_cost() -> dict:
    """Bulk throughput on a fast link with the shaper on at a huge rate vs off."""
    config = {"controller": {"components": ["dhcp", "routing", "qos"]},
              "qos": {"enabled": False, "down_kbit": HUGE_KBIT, "up_kbit": HUGE_KBIT}}
    res: dict[str, dict[str, list]] = {s: {"up": [], "down": []} for s in ("on", "off")}
    with Home(config=config, hwdb=False) as home:
        dev = permitted_device(home, "bulk")
        for n in range(ROUNDS + 1):
            for setting in (("on", "off") if n % 2 == 0 else ("off", "on")):
                homework_qos(home, setting == "on")
                with BulkLoad(home, dev, COST_SECONDS, streams=1) as load:
                    load.wait()
                    rates = load.total()
                if n == 0:
                    continue          # warm-up
                for d in ("up", "down"):
                    res[setting][d].append(rates.get(d) and rates[d] / 1000)
                say(f"cost round {n} qos {setting}: {rates}")
    return {s: {d: median(v) for d, v in r.items()} | {"rounds": r} for s, r in res.items()}


# -- report -----------------------------------------------------------------------------------
def fmt(v, spec=".0f", unit=""):
    return "n/a" if v is None else f"{v:{spec}}{unit}"


def print_table(results: dict) -> None:
    lat = results["latency"]
    prm = results.get("params", {"rounds": ROUNDS, "warm_s": WARM_S, "ping_s": PING_S})
    print(f"\nLatency under load, prio device pinging the internet every {PING_INTERVAL * 1000:.0f} ms while a bulk "
          f"device saturates a {LINK['down_kbit'] // 1000}/{LINK['up_kbit'] // 1000} Mbit/s link with a "
          f"{LINK['buffer_ms']} ms modem buffer, after {prm['warm_s']} s of load (idle RTT {fmt(lat['idle_ms'], '.2f')} ms; "
          f"medians of {prm['rounds']} alternating rounds of {prm['ping_s']:.0f} s)\n")
    print("| variant | p50 increase | p99 increase | bulk down, % of link | bulk up, % of link | pings lost |")
    print("|---|---|---|---|---|---|")
    names = {"homework": "Homework qos on, prio device high", "off": "no shaping (modem buffer)",
             "by hand": "plain Linux router, HTB by hand"}
    for v in ("homework", "off", "by hand"):
        r = lat["variants"].get(v)
        if r is None:
            print(f"| {names[v]} | not measured (components/qos not in this tree) | | | | |")
            continue
        print(f"| {names[v]} | {fmt(r['p50_increase_ms'], '.1f', ' ms')} | {fmt(r['p99_increase_ms'], '.1f', ' ms')} "
              f"| {fmt(r['down_pct'], '.0f', ' %')} | {fmt(r['up_pct'], '.0f', ' %')} | {r['lost']} |")
    print(f"| aim | | <= {AIM_P99_MS} ms with shaping on | >= {AIM_BULK_PCT} % | >= {AIM_BULK_PCT} % | |")
    alone = lat.get("alone")
    if alone and alone.get("high") and alone.get("default"):
        print(f"\nOne device alone on the {LINK['down_kbit'] // 1000} Mbit/s line, Homework's qos on: its download "
              f"(iperf3, 2 streams, {COST_SECONDS} s) as High and as Normal (medians of {prm['rounds']} "
              "alternating rounds). High must never be held below Normal on an idle line\n")
        print("| priority | download Mb/s | high / normal |")
        print("|---|---|---|")
        print(f"| high | {fmt(alone['high'], '.1f')} | {fmt(alone['high'] / alone['default'], '.2f')} |")
        print(f"| normal | {fmt(alone['default'], '.1f')} | |")
    cost = results.get("cost")
    if cost:
        on, off = cost["on"], cost["off"]
        print(f"\nCost of classification: one device's iperf3 (1 stream, {COST_SECONDS} s) on a fast link, "
              f"shaper on at {HUGE_KBIT // 1000} Mbit/s vs off (medians of {prm['rounds']} alternating rounds)\n")
        print("| direction | qos on Mb/s | qos off Mb/s | on / off |")
        print("|---|---|---|---|")
        for d in ("up", "down"):
            ratio = on[d] / off[d] if on[d] and off[d] else None
            print(f"| {d} | {fmt(on[d])} | {fmt(off[d])} | {fmt(ratio, '.2f')} |")
    elif not HAVE_QOS:
        print("\nCost of classification: not measured (components/qos not in this tree)")


def main() -> int:
    out = REPO / "out" / "bench-qos.json"
    if sys.argv[1:2] == ["--table"]:
        print_table(json.loads(out.read_text()))
        return 0
    results = {"params": {"rounds": ROUNDS, "warm_s": WARM_S, "ping_s": PING_S},
               "latency": latency_under_load()}
    if HAVE_QOS:
        results["cost"] = classification_cost()
    print_table(results)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
