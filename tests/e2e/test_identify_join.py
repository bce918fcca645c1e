"""A phone back with a new private address, let in as the device it was, keeps what the
household set for it: end to end on real OVS with homework-dnsd and the shaper (HTB,
nftables). Tom's phone (a real udhcpc in a device namespace) is let in, gets a website
rule and the High priority; it comes back with a new private address (the same client,
the same host name), and the household lets it in as Tom's phone: its website rule holds
for the new address over IPv4 and IPv6, and the shaper counts it in the High class."""
from __future__ import annotations

import ipaddress
import json
import re

import pytest

from homelab import LAN6_SITE
from homelab.dns import WEB
from homelab.web import api
from homelab.routing import wait_until


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "identify"),
                           extra={"ipv6": {"enabled": True, "prefix": LAN6_SITE},
                                  "qos": {"enabled": True, "down_kbit": 19000, "up_kbit": 4750}})


def view(lab, mac) -> dict:
    return next(d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == mac)


def router6(lab, dev) -> str:
    net = ipaddress.IPv6Network(wait_until(lambda: view(lab, dev.mac).get("ipv6_prefix"), 30, f"{dev.name}'s /64"))
    wait_until(dev.ipv6_global, 30, f"{dev.name}: a SLAAC address")
    return str(net.network_address + 1)


def high_leaf_mapped(lab, dev) -> bool:
    """The device's /30 maps to a leaf of the High class (class 1 in the leaf's top bits)."""
    ip = ipaddress.IPv4Address(dev.ipv4()[0])
    network = ipaddress.IPv4Address(int(ip) & ~3)
    out = lab.home.router(["nft", "list", "map", "inet", "homework_qos", "dev_up4"], check=False).stdout
    found = re.search(re.escape(str(network)) + r"/30 : 1:([0-9a-f]+)", out)
    return bool(found) and int(found.group(1), 16) >> 14 == 1


def test_a_phone_let_in_as_the_device_it_was_keeps_its_website_rule_and_priority(lab):
    home = lab.home
    first = home.add_device("tomsphone")
    first.start_udhcpc()
    first.wait_for_ipv4(30)
    for method, path, body in (("POST", f"permit/{first.mac}", None),
                               ("POST", f"meta/{first.mac}", {"name": "Tom's phone"}),
                               ("POST", f"deny-dns/{first.mac}/example.com", None),
                               ("POST", f"qos/devices/{first.mac}", {"class": "high"})):
        r = api(home.web, method, path, json=body)
        assert r.status_code == 200, (path, r.text)
    wait_until(lambda: lab.dig(first, "example.com")[0] == "NXDOMAIN", 30, "the rule on the first address")

    # the same phone another day: gone from its old address, back with a new private one
    home.remove_device(first)
    back = home.add_device("tomsphone")          # the same client, the same host name
    assert back.mac != first.mac
    back.start_udhcpc()
    back.wait_for_ipv4(30)
    looks = wait_until(lambda: (home.control("identity", mac=back.mac).get("looks_like") or {}).get("mac"), 30,
                     "the new address looking like Tom's phone")
    assert looks == first.mac
    assert view(lab, back.mac)["state"] == "pending"           # nothing by itself
    r = api(home.web, "POST", f"identity/{back.mac}/join", json={"as": first.mac})
    assert r.status_code == 200, r.text
    assert {"website rules", "priority"} <= set(r.json()["carried"]), r.json()

    # the website rule holds for the new address, over IPv4 and over IPv6
    wait_until(lambda: lab.dig(back, "example.com")[0] == "NXDOMAIN", 30, "the carried rule over IPv4")
    assert lab.dig(back, "www.example.com")[0] == "NXDOMAIN"      # a rule covers subdomains
    r6 = router6(lab, back)
    wait_until(lambda: lab.dig(back, "example.com", "AAAA", server=r6)[0] == "NXDOMAIN", 30,
             "the carried rule over IPv6")
    other = lab.join("otherphone")
    assert wait_until(lambda: lab.dig(other, "example.com") == ("NOERROR", [WEB]), 30, "another device unruled")
    # the shaper counts the new address in the High class
    assert view(lab, back.mac)["priority"] == "high"
    wait_until(lambda: high_leaf_mapped(lab, back), 30, "the new address mapped to a High leaf")
    rules = api(home.web, "GET", f"dns-rules/{back.mac}", role="read-only").json()
    assert [(r["domain"], r["action"]) for r in rules["rules"]] == [("example.com", "deny")]
