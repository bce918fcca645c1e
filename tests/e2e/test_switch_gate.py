"""End to end: a second switch pointed at the controller cannot take the router's place.

The controller drives the router's bridge only. Before, any datapath that connected
became "the" switch: the controller moved its whole pipeline there and stopped serving
the bridge. Here a second bridge on the router's Open vSwitch (fail_mode=secure, its own
datapath id) connects to the controller with a device on it: the device gets nothing
(no DHCP answer, no flow on its switch), the controller says so once (counter, log,
alert), and a device on the bridge goes on renewing its lease. A first step towards
satellite switches, which must be admitted, never taken on trust. Real OVS,
real udhcpc."""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from conftest import emulated_home
from homelab import BARE, Home, ns_cmd, sh

ROGUE = "rogue0"


@pytest.fixture(scope="module")
def home():
    yield from emulated_home({"controller": {"components": list(BARE)}}, internet=False, hwdb=False)


@pytest.fixture
def rogue(home: Home):
    """A second bridge on the router's OVS, connected to the controller, with one device
    namespace on it; all of it removed afterwards."""
    ns, port = f"{home.run_id}-rg", f"{home.run_id}-rg"
    try:
        home.vsctl("--may-exist", "add-br", ROGUE, "--", "set", "bridge", ROGUE, "datapath_type=netdev",
                   "fail_mode=secure", "other-config:datapath-id=00000000000000aa", "--",
                   "set-controller", ROGUE, "tcp:127.0.0.1:6653")
        sh(["ip", "netns", "add", ns])
        home._namespaces.append(ns)
        sh(["ip", "-n", home.router_ns, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns])
        sh(["ip", "-n", ns, "link", "set", "eth0", "address", "02:68:77:aa:00:01"])
        sh(ns_cmd(ns, ["ethtool", "-K", "eth0", "tx", "off"]))
        home.vsctl("add-port", ROGUE, port)
        sh(["ip", "-n", home.router_ns, "link", "set", port, "up"])
        sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
        yield ns
    finally:
        home.vsctl("--if-exists", "del-br", ROGUE)
        sh(["ip", "netns", "del", ns], check=False)
        if ns in home._namespaces:
            home._namespaces.remove(ns)


def refused(home: Home) -> int:
    res = home.homework("--json", "stats")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout).get("core", {}).get("switch_refused", 0)


def test_a_second_switch_is_refused_and_the_bridge_keeps_working(home: Home, rogue: str):
    dev = home.add_device(name="resident")
    dev.start_udhcpc()
    address, _ = dev.wait_for_ipv4(20)
    deadline = time.monotonic() + 15
    while refused(home) == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert refused(home) >= 1, "the second switch connected but was not refused"
    assert "datapath 00000000000000aa refused" in home.controller_log()
    # the device on the second switch asks for a lease and gets no answer
    res = subprocess.run(ns_cmd(rogue, ["udhcpc", "-f", "-q", "-n", "-i", "eth0", "-s", "/bin/true",
                                        "-t", "4", "-T", "1"]), capture_output=True, text=True, timeout=30)
    assert res.returncode != 0, f"a device behind the refused switch got a lease: {res.stdout}{res.stderr}"
    flows = home.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", ROGUE]).stdout
    assert "cookie" not in flows, f"the controller programmed the refused switch:\n{flows}"
    # the router's own bridge is still driven: the resident renews its lease
    sent = time.time()
    dev.renew()
    lease = dev.wait_for_lease(timeout=10, pred=lambda ls: ls.reason == "renew", after=sent)
    assert lease.ip == address
    assert dev.ping(dev.wait_for_gateway(5), count=1)
    # it is told once, not on every reconnection attempt
    assert home.controller_log().count("datapath 00000000000000aa refused") == 1
