"""End to end: a guest cannot take the router's name.

Devices whose DHCP host names (real udhcpc, option 12) are the router's own names, or
names software looks up by itself (wpad, _gateway, localhost) or a satellite's, are let
in. Before, the device called `homework` became homework.lan for everyone, the name the
router's TLS certificate is issued for. Now none of those names resolves to a guest, from
another device, over IPv4 or IPv6; the board marks such a device as one calling itself
so; the household cannot type such a name either. Real OVS, the controller with dns and
localnames, homework-dnsd, the router's dnsmasq reading the controller's hosts file,
lighttpd and its certificate; dig in device namespaces."""
from __future__ import annotations

import ipaddress
import json

import pytest

from homelab import LAN6_SITE, sh
from homelab.routing import wait_until
from homelab.web import api

CLAIMS = ("homework", "router", "wpad", "gateway", "localhost", "satellite1")   # "_gateway": udhcpc refuses to send it


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "localnames"),
                           extra={"ipv6": {"enabled": True, "prefix": LAN6_SITE}})


def certificate_names(lab) -> list[str]:
    """The DNS names of the router's TLS certificate (lighttpd's)."""
    text = sh(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", lab.home.web.ca]).stdout
    return [part.split(":", 1)[1] for part in text.replace(",", " ").split() if part.startswith("DNS:")]


def test_a_guest_claiming_the_routers_names_gets_none_of_them(lab):
    home = lab.home
    squatters = {claim: lab.join(claim) for claim in CLAIMS}
    honest = lab.join("kitchen-tv")
    asker = lab.join("asker")
    # the honest device's name works: the names are being written
    wait_until(lambda: lab.dig(asker, "kitchen-tv.lan") == ("NOERROR", [honest.ipv4()[0]]), 20,
               f"kitchen-tv.lan never resolved: {lab.debug()[-1500:]}")
    guests = {d.ipv4()[0] for d in squatters.values()}
    [view] = [d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == asker.mac]
    wait_until(asker.ipv6_global, 20, "the asker's SLAAC address")
    router6 = str(ipaddress.IPv6Network(view["ipv6_prefix"]).network_address + 1)
    names = {f"{label}.{domain}" for label in ("homework", "router", "wpad", "gateway", "localhost", "satellite1")
             for domain in ("lan", "home.arpa")} | set(certificate_names(lab))
    for name in sorted(names):
        for server in (None, router6):
            for qtype in ("A", "AAAA"):
                _status, answers = lab.dig(asker, name, qtype, server=server)
                assert not guests & set(answers), (name, server, qtype, answers)
    # the board shows them for what they are, never as the router
    views = {v["mac"]: v for v in api(home.web, "GET", "devices", role="read-only").json()}
    for claim, dev in squatters.items():
        assert views[dev.mac]["label_source"] == "hostname-reserved", views[dev.mac]
        assert f"calling itself “{claim}”" in views[dev.mac]["label"], views[dev.mac]
    assert views[honest.mac]["label"] == "kitchen-tv"
    # and the household cannot give one of those names either
    r = api(home.web, "POST", f"meta/{honest.mac}", json={"name": "Homework"})
    assert r.status_code == 400 and "router's own names" in r.json()["error"], r.text
