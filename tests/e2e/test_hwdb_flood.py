"""a pending device flooding DNS must not erase the household's history in hwdb.

Real stack: OVS, the controller with dns + routing + hwdb_sync, homework-dnsd, hwdbd with
the router schema and a small ring (128 KiB, which the flood would fill several times over),
a permitted device browsing, and a pending device sending DNS queries for distinct names at
full speed from its own namespace to its gateway. Afterwards every Flows and BWStats row the
permitted device had before the flood is still in hwdb, and the flood is in DnsQueries as
count rows whose counts add up to the queries the controller saw."""
from __future__ import annotations

import json
import time

import pytest

from homelab.dns import DnsLab, dns_home
from homelab.routing import PY, hwdb_query, wait_until

RING = "128K"
FLOOD_SECONDS = 20
ROWS_PER_DEVICE = 50        # hwdb_sync's dns_limiter budget per device and interval

# A bounded flood (time and count) of DNS queries for distinct names to the gateway.
FLOOD = r"""
import socket, struct, sys, time
gw, seconds, limit, tag = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
def query(i, name):
    q = b"".join(bytes([len(l)]) + l for l in name.encode().split(b".")) + b"\0"
    return struct.pack("!HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0) + q + b"\0\1\0\1"
sent, end = 0, time.monotonic() + seconds
while sent < limit and time.monotonic() < end:
    try:
        s.sendto(query(sent, f"n{sent}.{tag}.flood.test"), (gw, 53))
        sent += 1
    except BlockingIOError:
        time.sleep(0.0005)
print(sent)
"""


@pytest.fixture(scope="module")
def lab():
    from conftest import _can_run_home
    why = _can_run_home()
    if why:
        pytest.skip(why)
    with dns_home(components=("dhcp", "routing", "dns", "hwdb_sync"), hwdb=True, hwdb_memory=RING,
                  config={"routing": {"flow_stats_interval": 2}}) as home:
        yield DnsLab(home).start()


def controller_queries(lab) -> int:
    """DNS queries the controller received from dnsd (dnsd-merged events counted in full)."""
    return json.loads(lab.homework("--json", "dns-stats"))["controller"]["queries"]


def settled(what: str, read, quiet: float = 3.0):
    """`read()` once it has not moved for `quiet` seconds (a loaded machine may hold the
    controller or the sink still for a second or more, so one unchanged reading is not
    enough)."""
    last, still_since = read(), time.monotonic()
    deadline = still_since + 120
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = read()
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= quiet:
            return now
    raise AssertionError(f"{what} never settled (last {last})")


def settled_queries(lab) -> int:
    """The controller's query count once the flood's tail is processed."""
    return settled("the controller's DNS query count", lambda: controller_queries(lab))


def rows_of(home, table, **match):
    return [r for r in hwdb_query(home, f"select * from {table}") if all(r[k] == v for k, v in match.items())]


def flood(dev, seconds, limit, tag) -> int:
    out = dev.run([PY, "-c", FLOOD, dev.default_gateway(), str(seconds), str(limit), tag], check=False,
                  timeout=seconds + 60)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


def test_a_dns_flood_from_a_pending_device_leaves_the_household_history_intact(lab):
    home = lab.home
    household = lab.join("household")
    ip = household.ipv4()[0]
    for _ in range(3):
        assert lab.http(household, "http://example.com/", timeout=10)[0] == 200
    wait_until(lambda: [r for r in rows_of(home, "Flows") if ip in (r["saddr"], r["daddr"])], 40,
               "Flows rows for the household device")
    wait_until(lambda: rows_of(home, "BWStats", mac=household.mac), 20, "BWStats rows for the household device")
    flows_before = {r["timestamp"] for r in rows_of(home, "Flows") if ip in (r["saddr"], r["daddr"])}
    bw_before = {r["timestamp"] for r in rows_of(home, "BWStats", mac=household.mac)}

    flooder = lab.join("flooder", permit=False)
    sent = flood(flooder, FLOOD_SECONDS, 10_000_000, "big")
    settled_queries(lab)
    # the sink writes count rows per 1 s interval (a loaded machine may write them late)
    settled("the flood's DnsQueries rows", lambda: sum(r["count"] for r in rows_of(home, "DnsQueries",
                                                                                    mac=flooder.mac)))

    # 1. The household's history survived: every row from before the flood is still there.
    flows_after = {r["timestamp"] for r in rows_of(home, "Flows") if ip in (r["saddr"], r["daddr"])}
    bw_after = {r["timestamp"] for r in rows_of(home, "BWStats", mac=household.mac)}
    assert flows_before <= flows_after, f"{len(flows_before - flows_after)} Flows rows evicted by the flood"
    assert bw_before <= bw_after, f"{len(bw_before - bw_after)} BWStats rows evicted by the flood"
    flood_rows = rows_of(home, "DnsQueries", mac=flooder.mac)
    assert flood_rows and max(r["count"] for r in flood_rows) > 1, "the flood was aggregated into count rows"
    assert len(flood_rows) < sent / 10, (len(flood_rows), sent)

    # 2. Honest counts: a burst after the flood is in DnsQueries with counts adding up to
    # exactly the queries the controller received (the newest rows, so none are evicted).
    since = max(r["timestamp"] for r in hwdb_query(home, "select timestamp from DnsQueries [last]"))
    before = settled_queries(lab)
    flood(flooder, 2, 3000, "burst")
    received = settled_queries(lab) - before
    assert received > ROWS_PER_DEVICE, f"only {received} queries reached the controller"

    def burst_rows() -> list[dict]:
        return [r for r in rows_of(home, "DnsQueries", mac=flooder.mac) if r["timestamp"] > since]
    # the sink writes a count row per 1 s interval: within a few of them the rows add up
    # to exactly what the controller received (more or fewer, and this times out)
    wait_until(lambda: sum(r["count"] for r in burst_rows()) == received, 60,
               f"DnsQueries count rows adding up to the {received} queries received")
    burst = burst_rows()
    assert sum(r["count"] for r in burst) == received, (len(burst), received)
    assert len(burst) < received, "the burst was aggregated"
