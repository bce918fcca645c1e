"""End to end: DHCP off the OpenFlow packet-in path, on a real Open vSwitch.

The switch hands DHCP requests to the router's LOCAL interface with their port in the
destination MAC; the controller reads them from a raw socket and answers on it. So an
exchange costs no packet-in, and a thousand clients behind a relay lose no lease when the
controller restarts right after their ACKs (write-behind flushed on the way down)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from conftest import emulated_home
from homelab import BARE, Home

LOAD = Path(__file__).with_name("dhcp_relay_load.py")
CLIENTS = 1000
# The relay device gets one of the first blocks' .2 (depending on which test ran first).
RELAYS = ["10.2.0.2", "10.2.0.6", "10.2.0.10"]


def stats(home: Home) -> dict:
    res = home.homework("--json", "stats")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def dhcp_flow_packets(home: Home) -> int:
    """Packets the table-0 DHCP request flow (priority 60000, udp_dst 67) has matched."""
    for line in home.dump_flows().splitlines():
        if "priority=60000" in line and "tp_dst=67" in line:
            return int(re.search(r"n_packets=(\d+)", line).group(1))
    raise AssertionError(f"no DHCP flow:\n{home.dump_flows()}")


def join_one(home: Home, name: str):
    dev = home.add_device(name=name)
    dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    dev.start_udhcpc()
    addr, prefix = dev.wait_for_ipv4(20)
    assert prefix == 30
    assert dev.ping(dev.wait_for_gateway(5), count=1)
    return dev, addr


@pytest.fixture(scope="module")
def relay_home():
    # The relay agent is a configured one, and a thousand new MACs from its port are
    # neither rate-limited nor forgotten as too many pending devices.
    yield from emulated_home({"controller": {"components": list(BARE)},
                              "dhcp": {"relays": RELAYS, "new_macs_burst": 5000},
                              "devices": {"max_pending": 5000}}, internet=False, hwdb=False)


def test_exchange_costs_no_packet_in(relay_home: Home):
    home = relay_home
    before = dhcp_flow_packets(home)
    dev, addr = join_one(home, "fast1")
    counters = stats(home)
    assert dhcp_flow_packets(home) - before >= 2                     # DISCOVER and REQUEST matched
    # ... a never-seen device: the DISCOVER answered by homework-dhcpd (the default answerer)
    # from a block the controller reserved, and the REQUEST that takes the offer too
    assert counters.get("dhcp", {}).get("dhcpd_new_offers", 0) >= 1
    assert counters.get("dhcp", {}).get("dhcpd_offers_taken", 0) >= 1
    assert counters.get("core", {}).get("packet_in", 0) == 0         # no OpenFlow packet-in at all
    # a device decided before it came (pre-approved) is the controller's: its DISCOVER is
    # read from the socket by the controller and answered on it, still without a packet-in
    known = home.add_device(name="fast2")
    assert home.homework("permit", known.mac).returncode == 0
    known.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    known.start_udhcpc()
    known.wait_for_ipv4(20)
    counters = stats(home)
    assert counters.get("dhcp", {}).get("fast_path_in", 0) >= 1
    assert counters.get("dhcp", {}).get("fast_path_out", 0) >= 1
    assert counters.get("core", {}).get("packet_in", 0) == 0
    assert "fast path: requests read from br0" in home.controller_log()
    lease = next(x for x in json.loads(home.homework("--json", "leases").stdout) if x["mac"] == dev.mac)
    assert lease["ip"] == addr
    # The reply left as the router: the device learnt the bridge's MAC for its gateway.
    router_mac = home.router(["cat", "/sys/class/net/br0/address"]).stdout.strip()
    neigh = dev.run(["ip", "neigh", "show", dev.wait_for_gateway(5)]).stdout
    assert router_mac in neigh, neigh


def test_a_thousand_relayed_leases_survive_a_controller_restart(relay_home: Home):
    home = relay_home
    relay = home.add_device(name="relay")
    relay.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    relay.start_udhcpc()
    agent, _ = relay.wait_for_ipv4(20)
    assert agent in RELAYS, f"the relay device got {agent}, the config trusts {RELAYS}"
    relay.stop_dhcp()
    joined = relay.run([sys.executable, str(LOAD), agent, "10.2.0.1", str(CLIENTS), "join"], timeout=90)
    first = json.loads(joined.stdout)
    assert len(first["acks"]) == CLIENTS, {k: v[:5] for k, v in first.items() if k != "acks"}
    assert len(set(first["acks"].values())) == CLIENTS                # one /30 each
    # Restart at once: the last ACKs are younger than the write-behind interval.
    home.restart_controller()
    leases = {x["mac"]: x for x in json.loads(home.homework("--json", "leases").stdout)}
    kept = {mac: leases[mac]["ip"] for mac in first["acks"] if mac in leases}
    assert kept == first["acks"]
    assert all(leases[mac]["relay"] == agent for mac in first["acks"])
    # Every client renews through the relay and keeps its address.
    saved = relay.dir / "joined.json"
    saved.write_text(joined.stdout)
    renewed = json.loads(relay.run([sys.executable, str(LOAD), agent, "10.2.0.1", "0", "renew", str(saved)],
                                   timeout=90).stdout)
    assert not renewed["naks"] and not renewed["missing"]
    assert renewed["acks"] == first["acks"]
    assert stats(home).get("core", {}).get("packet_in", 0) == 0


def test_fast_path_off_falls_back_to_packet_in():
    home_gen = emulated_home({"controller": {"components": list(BARE)}, "dhcp": {"fast_path": False}},
                             internet=False, hwdb=False)
    home = next(home_gen)
    try:
        dev, addr = join_one(home, "slow1")
        counters = stats(home)
        assert counters.get("core", {}).get("packet_in", 0) >= 2
        assert not counters.get("dhcp", {}).get("fast_path_in")
        assert "CONTROLLER" in next(line for line in home.dump_flows().splitlines()
                                           if "priority=60000" in line)
    finally:
        home_gen.close()
