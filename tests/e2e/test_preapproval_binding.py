"""End to end: a pre-approved MAC is bound to the first port it is seen on.

The household pre-approves a console's MAC on the board (the API, as the form does). The
console joins on its port and is let in without a step. It leaves (unplugged). An
impostor on another port then uses the same MAC: before, it got the console's access at
once; now its pre-approval does not follow it there: it is pending, reaches nothing but
its gateway (over IPv4 or IPv6), and the household is told. Real OVS, the controller,
real udhcpc, SLAAC, curl towards the emulated internet."""
from __future__ import annotations

import pytest

from homelab import LAN6_SITE, WEB6_ADDR, WEB_ADDR, Home
from homelab.routing import curl, wait_until
from homelab.web import Web, api, web_home

CONSOLE = "02:68:77:5e:c0:01"


@pytest.fixture(scope="module")
def home():
    with web_home({"controller": {"components": ["dhcp", "routing"]},
                   "ipv6": {"enabled": True, "prefix": LAN6_SITE}}) as h:
        h.web = Web(h).start()
        yield h


def reaches_internet(dev) -> bool:
    return curl(dev, f"http://{WEB_ADDR}/", timeout=2).stdout == "200"


def test_a_preapproved_mac_from_another_port_asks_again(home: Home):
    r = api(home.web, "POST", f"permit/{CONSOLE}")
    assert r.status_code == 200 and r.json()["state"] == "permitted", r.text
    console = home.add_device(name="console", mac=CONSOLE)
    console.start_udhcpc()
    console.wait_for_ipv4(20)
    wait_until(lambda: reaches_internet(console), 15, "the pre-approved console never got the internet")
    home.remove_device(console)                                 # unplugged: its port is gone
    impostor = home.add_device(name="impostor", mac=CONSOLE)
    impostor.start_udhcpc()
    impostor.wait_for_ipv4(20)
    state = api(home.web, "GET", f"devices/{CONSOLE}", role="read-only").json()
    assert state["state"] == "pending", state
    assert not reaches_internet(impostor), "the impostor got the pre-approved device's access"
    wait_until(impostor.ipv6_global, 20, "the impostor's SLAAC address")
    assert curl(impostor, f"http://[{WEB6_ADDR}]/", timeout=2, extra=("-6",)).stdout != "200"
    assert any(a.get("kind") == "preapproval-moved" for a in state.get("alerts", [])), state.get("alerts")
