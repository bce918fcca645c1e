"""End to end on real Open vSwitch: two permitted devices download known
amounts from the emulated internet; the durable usage per device and per owner matches
the bytes on their wire within 2 %, and is read back from state.db after a restart. A
daily limit blocks a device (its gateway's services stay), a household member lifts it,
and the next period (PERIOD seconds long in this run, usage.test_period_seconds) ends it.
A daily `slow` limit puts a device behind an OpenFlow meter: its download rate drops far
below what it was before the limit, and a lift makes it fast again."""
from __future__ import annotations

import json
import os
import time

import pytest

from homelab import BRIDGE, WEB_ADDR, Home
from homelab.routing import can_connect, curl, gateway, permitted_device, router_tcp_server, wait_until

MB = 1_000_000
PERIOD = 40


@pytest.fixture(scope="module")
def home():
    config = {"controller": {"components": ["dhcp", "routing", "usage"]},
              "routing": {"flow_stats_interval": 1},
              "usage": {"flush_interval": 1, "timezone": "UTC", "test_period_seconds": PERIOD}}
    with Home(config=config) as h:
        router_tcp_server(h, 80)
        yield h


def usage(home: Home, by: str) -> dict[str, int]:
    out = home.homework("--json", "usage", "day", by)
    assert out.returncode == 0, out.stderr + out.stdout
    return {row["who"]: row["total"] for row in json.loads(out.stdout)["rows"]}


def wire_bytes(dev) -> int:
    """Bytes the device's interface sent and received (Ethernet frames, as OVS counts)."""
    stats = dev.run(["cat", "/sys/class/net/eth0/statistics/rx_bytes", "/sys/class/net/eth0/statistics/tx_bytes"])
    return sum(int(n) for n in stats.stdout.split())


def settled(home: Home, by: str = "device") -> dict[str, int]:
    """Usage once no learned flow is left and two polls went by without a change."""
    wait_until(lambda: not home.learned_flows(80), 40, "the transfers' learned flows removed")
    last = None
    while True:
        time.sleep(2.5)
        now = usage(home, by)
        if now == last:
            return now
        last = now


def test_downloads_are_counted_per_device_and_per_owner_within_2_percent(home: Home):
    a, b = permitted_device(home), permitted_device(home)
    for dev, owner in ((a, "Lodger"), (b, "Mary")):
        assert home.homework("name", dev.mac, "--owner", owner).returncode == 0
    (home.dir / "www" / "five.bin").write_bytes(os.urandom(5 * MB))
    (home.dir / "www" / "twenty.bin").write_bytes(os.urandom(20 * MB))
    before, wire_before = settled(home), {d.mac: wire_bytes(d) for d in (a, b)}
    owners_before = usage(home, "owner")

    assert curl(a, f"http://{WEB_ADDR}/five.bin", timeout=30).stdout == "200"
    assert curl(b, f"http://{WEB_ADDR}/twenty.bin", timeout=60).stdout == "200"

    after = settled(home)
    wire = {d.mac: wire_bytes(d) - wire_before[d.mac] for d in (a, b)}
    counted = {mac: after.get(mac, 0) - before.get(mac, 0) for mac in (a.mac, b.mac)}
    print("usage counted", counted, "on the wire", wire)
    assert wire[a.mac] > 5 * MB and wire[b.mac] > 20 * MB
    for mac in (a.mac, b.mac):
        assert abs(counted[mac] - wire[mac]) <= 0.02 * wire[mac], (mac, counted[mac], wire[mac])
    owners = usage(home, "owner")
    assert abs(owners["Lodger"] - owners_before.get("Lodger", 0) - wire[a.mac]) <= 0.02 * wire[a.mac]
    assert abs(owners["Mary"] - owners_before.get("Mary", 0) - wire[b.mac]) <= 0.02 * wire[b.mac]

    # durable: the rows are in state.db, and a restarted controller reads them back
    home.restart_controller()
    assert usage(home, "device")[b.mac] >= after[b.mac] * 0.98


def web_ok(dev) -> bool:
    return can_connect(dev, WEB_ADDR, 80, timeout=0.5)


def blocked_to_gateway_only(dev) -> bool:
    return not web_ok(dev) and can_connect(dev, gateway(dev), 80, timeout=0.5)


def test_a_daily_limit_blocks_a_lift_and_the_next_period_end_it(home: Home):
    c = permitted_device(home)
    (home.dir / "www" / "three.bin").write_bytes(os.urandom(3 * MB))
    assert home.homework("usage-limit", c.mac, "1M", "day", "block").returncode == 0
    # start at the beginning of a period, so the block and the checks fall inside it
    time.sleep(PERIOD - time.time() % PERIOD + 0.5)
    curl(c, f"http://{WEB_ADDR}/three.bin", timeout=10)      # cut off once the limit is reached
    wait_until(lambda: blocked_to_gateway_only(c), 10, "the device blocked to its gateway's services")
    status = json.loads(home.homework("--json", "status", c.mac).stdout)
    assert status["usage_blocked"] is True and status["usage_limit"]["allowance"] == MB

    assert home.homework("usage-lift", c.mac).returncode == 0            # a household member lifts it
    wait_until(lambda: web_ok(c), 5, "the lift restores the internet")
    assert curl(c, f"http://{WEB_ADDR}/three.bin", timeout=10).stdout == "200"   # lifted: not again this period

    time.sleep(PERIOD - time.time() % PERIOD + 0.5)                     # a new period: the limit holds again
    curl(c, f"http://{WEB_ADDR}/three.bin", timeout=10)
    wait_until(lambda: blocked_to_gateway_only(c), 10, "blocked again in the next period")
    wait_until(lambda: web_ok(c), PERIOD + 5, "the next period ends the block", interval=0.5)


def download_rate(dev, url: str, seconds: float) -> float:
    """Bytes per second of one download (cut off after `seconds`: a slowed one would take long)."""
    out = dev.run(["curl", "-s", "-o", "/dev/null", "-w", "%{size_download} %{time_total}", "-m", str(seconds), url],
                  check=False, timeout=seconds + 10)
    size, took = out.stdout.split()
    assert int(size) > 0, out
    return int(size) / float(took)


def slowed(home: Home, dev) -> bool:
    status = json.loads(home.homework("--json", "status", dev.mac).stdout)
    return status["usage_slowed"] is True


def test_a_daily_slow_limit_meters_the_device_until_a_lift(home: Home):
    d = permitted_device(home)
    (home.dir / "www" / "four.bin").write_bytes(os.urandom(4 * MB))
    url = f"http://{WEB_ADDR}/four.bin"
    out = home.homework("usage-limit", d.mac, "2M", "day", "slow", "1mbit")
    assert out.returncode == 0, out.stderr + out.stdout
    # start at the beginning of a period, so the slow-down and the checks fall inside it
    time.sleep(PERIOD - time.time() % PERIOD + 0.5)
    before = download_rate(d, url, 10)                 # done before the limit is noticed
    wait_until(lambda: slowed(home, d), 10, "the device slowed down")
    meters = home.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-meters", BRIDGE]).stdout
    print("meters while slowed:", meters)
    assert "kbps" in meters and "rate=1000" in meters
    during = download_rate(d, url, 5)
    print(f"download rate before the limit {before / MB:.2f} MB/s, slowed {during / MB:.3f} MB/s")
    assert during * 3 < before
    assert during < 2 * 1_000_000 / 8                    # about the meter's 1 Mbit/s (with its burst)

    assert home.homework("usage-lift", d.mac).returncode == 0            # a household member lifts it
    wait_until(lambda: not slowed(home, d), 5, "the lift ends the slow-down")
    after = download_rate(d, url, 10)
    print(f"after the lift {after / MB:.2f} MB/s")
    assert after > 3 * during
    assert "rate=1000" not in home.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-meters", BRIDGE]).stdout
