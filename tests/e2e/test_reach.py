"""Reaching in end to end: real OVS, the real controller with the reach component, nftables
in the router's namespace, Debian's miniupnpd-nftables, and real clients: a server in a
device namespace reached from the emulated internet over IPv4 (the forward's DNAT) and
IPv6 (its pinhole), from another device at home through the router's public address
(hairpin), closed while the device is paused and open again on resume; upnpc (miniupnpc),
natpmpc and a PCP MAP request from a device, refused without the household's tick, a
mapping reachable from the internet with it, gone when the tick is withdrawn."""
from __future__ import annotations

import json
import time

import pytest

from homelab import LAN6_SITE, REPO
from homelab.reach import hello, serve_hello
from homelab.routing import PY, permitted_device, wait_until

PCP = str(REPO / "tests" / "homelab" / "pcp.py")

@pytest.fixture(scope="module")
def home():
    from conftest import emulated_home
    yield from emulated_home({"controller": {"components": ["dhcp", "routing", "schedules", "reach"]},
                              "ipv6": {"enabled": True, "prefix": LAN6_SITE},
                              "reach": {"check_interval": 1}},
                             public_wan=True)


def server(home, name: str, port: int = 8080):
    dev = permitted_device(home, name)
    wait_until(lambda: dev.ipv6_global(), 15, f"{name} has its IPv6 address")
    serve_hello(dev.popen, name, port)
    wait_until(lambda: hello(dev.run, "::1", port) == name, 10, f"{name}'s server is up")
    return dev


def cli(home, *args) -> str:
    out = home.homework(*args)
    assert out.returncode == 0, out.stderr + out.stdout
    return out.stdout


def call(home, cmd, **args):
    return home.control(cmd, **args)


def test_a_forward_is_reached_from_the_internet_over_ipv4_and_ipv6_and_from_home(home):
    dev = server(home, "nas")
    other = permitted_device(home, "laptop")
    print(cli(home, "forward", "add", dev.mac, "9000", "--to", "8080", "--description", "photos"))
    v6 = dev.ipv6_global()[0]
    wait_until(lambda: hello(home.internet, home.wan_addr, 9000) == "nas", 10, "the internet reaches it over IPv4")
    assert hello(home.internet, v6, 8080) == "nas"                      # its pinhole, on its own port
    assert hello(home.internet, home.wan_addr, 9001) == ""              # nothing else is open
    assert hello(home.internet, v6, 8081) == ""
    assert hello(home.internet, other.ipv6_global()[0] if other.ipv6_global() else v6.replace("::", "::9:"), 8080) == ""
    # hairpin: from home, the public address and port reach the same server
    assert hello(other.run, home.wan_addr, 9000) == "nas"
    [f] = [f for f in call(home, "forwards") if f["mac"] == dev.mac]
    assert f["open"] and f["device"] == "nas" and f["address"] == dev.ipv4()[0]
    cli(home, "forward", "remove", str(f["id"]))
    wait_until(lambda: hello(home.internet, home.wan_addr, 9000) == "", 5, "removed: closed")
    assert hello(home.internet, v6, 8080) == ""


def test_a_forward_closes_while_the_device_is_paused_and_opens_on_resume(home):
    dev = server(home, "console")
    cli(home, "forward", "add", dev.mac, "9100-9101", "--protocol", "both")
    wait_until(lambda: hello(home.internet, home.wan_addr, 9100) == "", 10, "nothing listens on 9100 itself")
    v6 = dev.ipv6_global()[0]
    serve_hello(dev.popen, "console", 9100)
    wait_until(lambda: hello(home.internet, home.wan_addr, 9100) == "console", 10, "open from the internet")
    cli(home, "pause", dev.mac)
    wait_until(lambda: hello(home.internet, home.wan_addr, 9100) == "" and hello(home.internet, v6, 9100) == "",
               5, "paused: closed over both families")
    [f] = [f for f in call(home, "forwards") if f["mac"] == dev.mac]
    assert not f["open"] and f["why_closed"] == "it is paused"
    ruleset = home.router(["nft", "list", "table", "inet", "homework_reach"]).stdout
    assert "9100" not in ruleset                                      # closed at the door, not only cut in the switch
    cli(home, "resume", dev.mac)
    wait_until(lambda: hello(home.internet, home.wan_addr, 9100) == "console", 5, "resumed: open again")
    assert hello(home.internet, v6, 9100) == "console"


def natpmp(dev, public: int, private: int) -> str:
    out = dev.run(["natpmpc", "-a", str(public), str(private), "tcp", "600"], check=False, timeout=30)
    return out.stdout + out.stderr


def upnpc(dev, *args) -> str:
    out = dev.run(["upnpc", *args], check=False, timeout=60)
    return out.stdout + out.stderr


def pcp(dev, server_addr: str, internal: str, port: int, external: int | None = None) -> dict:
    args = [PY, PCP, server_addr, internal, "tcp", str(port), "600"] + ([str(external)] if external else [])
    return json.loads(dev.run(args, check=False, timeout=30).stdout.strip().splitlines()[-1])


def test_devices_open_ports_only_with_the_households_tick_and_lose_them_with_it(home):
    dev = server(home, "xbox")
    v6 = dev.ipv6_global()[0]
    # without the tick: every protocol is refused, nothing opens
    assert "Connection refused" in natpmp(dev, 9300, 8080)
    up = upnpc(dev, "-e", "game", "-r", "8080", "9301", "tcp")
    assert "No IGD UPnP Device found" in up, up
    assert pcp(dev, "fe80::1%eth0", v6, 8080)["result"] in ("REFUSED", "TIMEOUT")
    assert hello(home.internet, home.wan_addr, 9300) == hello(home.internet, home.wan_addr, 9301) == ""
    assert hello(home.internet, v6, 8080) == ""
    assert call(home, "upnp-status")["mappings"] == []

    cli(home, "may-open-ports", dev.mac, "on")
    up = upnpc(dev, "-e", "game", "-r", "8080", "9301", "tcp")
    assert "is redirected to internal" in up, up
    assert "Mapped public port 9300 protocol TCP to local port 8080" in natpmp(dev, 9300, 8080)
    assert pcp(dev, "fe80::1%eth0", v6, 8080)["result"] == "SUCCESS"
    pinhole6 = upnpc(dev, "-6", "-A", "", "0", v6, "8080", "6", "600")     # IGDv2, over IPv6
    assert "Pinhole ID" in pinhole6, pinhole6
    for port in (9300, 9301):
        assert hello(home.internet, home.wan_addr, port) == "xbox", port
    assert hello(home.internet, v6, 8080) == "xbox"
    mappings = call(home, "upnp-status")["mappings"]
    assert {(m["family"], m["port"], m["device"]) for m in mappings} >= {(4, 9300, "xbox"), (4, 9301, "xbox"),
                                                                          (6, 8080, "xbox")}
    assert any(m["description"] == "game" and m["expires"] > time.time() for m in mappings)
    # the board's list per device shows them too
    [mine] = call(home, "open-ports", mac=dev.mac)
    assert mine["may_open_ports"] and len(mine["mappings"]) == len(mappings)

    # the household closes one on the board: that one goes, the rest stay
    key = next(m["key"] for m in mappings if m["port"] == 9301)
    cli(home, "upnp", "close", key)
    wait_until(lambda: hello(home.internet, home.wan_addr, 9301) == "", 5, "closed mapping")
    assert hello(home.internet, home.wan_addr, 9300) == "xbox"

    cli(home, "may-open-ports", dev.mac, "off")
    wait_until(lambda: hello(home.internet, home.wan_addr, 9300) == "" and hello(home.internet, v6, 8080) == "",
               5, "withdrawn: every mapping and pinhole gone")
    assert call(home, "upnp-status")["mappings"] == []
    assert "Connection refused" in natpmp(dev, 9302, 8080)


def test_a_device_waiting_for_approval_cannot_be_let_open_ports(home):
    dev = home.add_device(name="stranger")
    dev.start_udhcpc()
    dev.wait_for_ipv4(20)
    out = home.homework("may-open-ports", dev.mac, "on")
    assert out.returncode != 0 and "only a device let into the home may open ports" in out.stderr
