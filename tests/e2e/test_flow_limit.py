"""The per-host flow limit as shipped, on real Open vSwitch and the kernel's conntrack: what
a household does in a burst (a browser opening a page's 2,000 connections in 2 s, a game
launcher's 5,000 in 10 s) raises no alert and keeps every connection's record, while a
flood (tens of thousands of new flows at once) is still collapsed to per-host counting and
the household is told. Over IPv4 (NATed connections) and IPv6 (routed from the device's
/64, tracked by the router's firewall) alike: both are counted from the same conntrack dump."""
from __future__ import annotations

import ipaddress
import json

import pytest

from homelab import LAN6_SITE, WEB6_ADDR, WEB_ADDR, Home
from homelab.routing import PY, hwdb_query, permitted_device, routing_status, wait_until

SERVER_PORT = 7300
REQUEST, ANSWER = 200, 3000          # bytes each way per connection

# Reads the request, answers ANSWER bytes, closes: a web server's short exchange.
SERVER = r"""
import socket, sys, threading
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1024)
answer = b"y" * int(sys.argv[3])
while True:
    c, _ = s.accept()
    try:
        c.settimeout(2); c.recv(4096); c.sendall(answer)
    except OSError:
        pass
    c.close()
"""

# `n` connections, at most `rate` a second, each a request and its answer read to the end;
# each from a local port of its own (FIRST_PORT + i: the kernel would reuse the ports of
# closed ones, and two connections would look like one) and from the address `src`, which
# it prints.
FIRST_PORT = 12000
BURST = r"""
import json, socket, sys, time
addr, n, rate, size = (sys.argv[1], int(sys.argv[2])), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
first, src = int(sys.argv[6]), sys.argv[7]
ports, start = [], time.monotonic()
for i in range(n):
    ahead = start + i / rate - time.monotonic()
    if ahead > 0:
        time.sleep(ahead)
    s = socket.create_connection(addr, timeout=10, source_address=(src, first + i))
    ports.append(s.getsockname()[1])
    s.sendall(b"x" * size)
    while s.recv(65536):
        pass
    s.close()
print(json.dumps(ports))
"""

# New UDP flows, one per destination port, at most `rate` a second (sent blind as fast as
# the socket went, most of a burst was lost on a loaded machine's userspace datapath before
# the router's conntrack saw it: four bursts of 40,000 once left fewer than 16,000 entries).
FLOOD = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM)
first, last, rate = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
start = time.monotonic()
for port in range(first, last):
    if (port - first) % 200 == 0:
        ahead = start + (port - first) / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    try:
        s.sendto(b"x", (sys.argv[1], 1024 + port % 60000))
    except OSError:
        pass
"""
FLOOD_RATE = 8000        # new flows a second: 40,000 in 5 s, all alive together (UDP waits 30 s)


@pytest.fixture(scope="module")
def home():
    from conftest import emulated_home
    # routing and its flow limit exactly as shipped, IPv6 on; hwdb for the connections' records
    for h in emulated_home({"controller": {"components": ["dhcp", "routing", "hwdb_sync"]},
                            "ipv6": {"enabled": True, "prefix": LAN6_SITE}}, hwdb=True):
        for web in (WEB_ADDR, WEB6_ADDR):
            h.internet_popen([PY, "-c", SERVER, web, str(SERVER_PORT), str(ANSWER)])
        wait_until(lambda h=h: len(h.internet(["ss", "-Hltn", f"sport = :{SERVER_PORT}"]).stdout.splitlines()) >= 2,
                   10, "the internet's servers listening")
        yield h


def device(home: Home, family: str) -> tuple:
    """A permitted device, with its address of `family` and the internet server's."""
    dev = permitted_device(home)
    if family == "ipv4":
        return dev, dev.ipv4()[0], WEB_ADDR
    return dev, wait_until(dev.ipv6_global, 20, f"{dev.name}: a SLAAC address")[0], WEB6_ADDR


def same(a: str, b: str) -> bool:
    """One address however it is written (hwdb's IPv6 text may differ from the device's)."""
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a == b


def flow_limit_alerts(home: Home, mac: str) -> list[dict]:
    return [r for r in hwdb_query(home, "select * from Alerts") if r["mac"] == mac and r["kind"] == "flow-limit"]


def limited(home: Home, mac: str) -> bool:
    out = home.homework("--json", "status", mac)
    return out.returncode == 0 and json.loads(out.stdout)["flow_limited"] is True


@pytest.mark.parametrize("family, connections, seconds",
                         [("ipv4", 2000, 2), ("ipv4", 5000, 10), ("ipv6", 2000, 2)],
                         ids=["browser", "game-launcher", "browser-ipv6"])
def test_an_ordinary_burst_raises_no_alert_and_every_connection_is_recorded(home: Home, family, connections,
                                                                            seconds):
    dev, ip, web = device(home, family)
    out = dev.run([PY, "-c", BURST, web, str(SERVER_PORT), str(connections), str(connections / seconds),
                   str(REQUEST), str(FIRST_PORT), ip], timeout=300)
    ports = set(json.loads(out.stdout))
    assert len(ports) == connections

    def recorded() -> tuple[set, int, int]:
        rows = hwdb_query(home, f"select * from Flows where dport = {SERVER_PORT} or sport = {SERVER_PORT}")
        up = [r for r in rows if same(r["saddr"], ip) and same(r["daddr"], web) and r["sport"] in ports]
        down = [r for r in rows if same(r["saddr"], web) and same(r["daddr"], ip) and r["dport"] in ports]
        return {r["sport"] for r in up} & {r["dport"] for r in down}, sum(r["nbytes"] for r in up), \
            sum(r["nbytes"] for r in down)
    # every connection has its record each way (from conntrack: within a poll or two)
    both, up, down = wait_until(lambda: (r := recorded()) and len(r[0]) == connections and r, 60,
                                f"Flows rows for all {connections} connections")
    assert up >= connections * REQUEST and down >= connections * ANSWER
    # two polls later still: no alert, not collapsed, counted per flow as before
    polls = routing_status(home)["stats"].get("polls", 0)
    wait_until(lambda: routing_status(home)["stats"].get("polls", 0) >= polls + 2, 60, "two more polls")
    assert flow_limit_alerts(home, dev.mac) == []
    assert not limited(home, dev.mac)
    assert routing_status(home)["stats"]["flow_limit"] == 0


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
def test_a_flood_is_still_collapsed_and_the_household_told(home: Home, family):
    dev, ip, web = device(home, family)
    before = routing_status(home)["stats"]["flow_limit"]
    # Well over the limit of 16,000 at once (UDP entries wait 30 s for an answer); a
    # loaded machine may drop part of a burst, so more come until the device is collapsed.
    for burst in range(4):
        dev.run([PY, "-c", FLOOD, web, str(burst * 40000), str((burst + 1) * 40000), str(FLOOD_RATE)], timeout=120)
        try:
            wait_until(lambda: limited(home, dev.mac), 25, "the flooding device collapsed to per-host counting")
            break
        except AssertionError:
            continue
    wait_until(lambda: limited(home, dev.mac), 25, "the flooding device collapsed to per-host counting")
    assert routing_status(home)["stats"]["flow_limit"] == before + 1
    [alert] = wait_until(lambda: flow_limit_alerts(home, dev.mac), 20, "the flow-limit alert in hwdb")
    # in the household's words: the device by name, what it did, what the router does now
    assert f"{dev.name.lower()} opened " in alert["detail"].lower(), alert
    assert "the router now counts its traffic per address it talks to" in alert["detail"], alert
    # and the device still works
    out = dev.run([PY, "-c", BURST, web, str(SERVER_PORT), "1", "10", str(REQUEST), "0", ip], timeout=30)
    assert len(json.loads(out.stdout)) == 1
