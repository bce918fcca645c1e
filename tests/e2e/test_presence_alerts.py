"""End to end on real Open vSwitch: the household turns on "tell me when this device comes
home or leaves" for a device (the `homework` CLI, then the Guest Board's API shows it); the
device's real DHCP client gives its lease back as it leaves and asks for one as it comes
back, and the household is told both, naming the device; a device without the alert gives
no such notification; a LAN device cannot turn its own alert on or off, over IPv4 or IPv6."""
from __future__ import annotations

import ipaddress
import json

import pytest

from homelab import LAN6_SITE, Home
from homelab.routing import permitted_device, wait_until
from homelab.web import Web, api, web_home

LEASE = 60          # seconds: a lease whose RELEASE is lost on a loaded datapath still ends soon


@pytest.fixture(scope="module")
def home():
    config = {"controller": {"components": ["dhcp", "routing", "notify"]},
              "dhcp": {"permitted_lease": LEASE},
              "ipv6": {"enabled": True, "prefix": LAN6_SITE}}
    with web_home(config=config) as h:
        h.web = Web(h).start()
        yield h


def presence_notes(home: Home, mac: str) -> list[tuple[str, str]]:
    r = api(home.web, "GET", "notifications")
    assert r.status_code == 200, r.text
    return [(n["kind"], n["title"]) for n in reversed(r.json()["notifications"])
            if n["mac"] == mac and n["kind"] in ("device-home", "device-left")]


def lease_active(home: Home, mac: str) -> bool:
    r = api(home.web, "GET", f"devices/{mac}")
    assert r.status_code == 200, r.text
    return bool((r.json().get("lease") or {}).get("active"))


def test_the_household_is_told_when_a_device_leaves_and_comes_home(home: Home):
    dev, quiet = permitted_device(home), permitted_device(home)
    assert api(home.web, "POST", f"meta/{dev.mac}", json={"name": "Anna's phone"}).ok
    out = home.homework("--json", "presence-alert", dev.mac, "on")
    assert out.returncode == 0, out.stderr + out.stdout
    assert json.loads(out.stdout) == {"mac": dev.mac, "on": True,
                                      "text": "You are told when Anna's phone comes home or leaves."}
    shown = api(home.web, "GET", f"notifications/presence/{dev.mac}").json()
    assert shown["on"] is True and api(home.web, "GET", f"notifications/presence/{quiet.mac}").json()["on"] is False

    dev.leave(home)             # its client gives the lease back as it stops
    quiet.leave(home)
    # its one DHCPRELEASE may be lost on a loaded userspace datapath: then the lease runs out
    left = ("device-left", "Anna's phone has left.")
    wait_until(lambda: presence_notes(home, dev.mac)[-1:] == [left] and not lease_active(home, dev.mac),
               3 * LEASE, "a notification that Anna's phone left")
    assert presence_notes(home, dev.mac)[0] == left                  # nothing before it left
    wait_until(lambda: not lease_active(home, quiet.mac), 3 * LEASE, "the other device's lease ended")

    told = len(presence_notes(home, dev.mac))
    dev.start_udhcpc()
    dev.wait_for_ipv4(20)
    wait_until(lambda: presence_notes(home, dev.mac)[told:] == [("device-home", "Anna's phone is home.")], 30,
               "a notification that Anna's phone is home")
    assert presence_notes(home, quiet.mac) == []          # its alert is off


def test_a_device_cannot_change_its_own_alert_over_ipv4_or_ipv6(home: Home):
    dev = permitted_device(home)
    dev.stop_dhcp()
    dev.start_dhcpcd(ipv6=True)
    wait_until(dev.ipv6_global, 60, f"{dev.name}: a global IPv6 address")
    view = api(home.web, "GET", f"devices/{dev.mac}").json()
    router6 = str(ipaddress.IPv6Network(view["ipv6_prefix"]).network_address + 1)
    token = home.web.token("admin")            # even with the household's own credentials
    for url in (f"https://{dev.default_gateway()}/ws.v1/notifications/presence/{dev.mac}",
                f"https://[{router6}]/ws.v1/notifications/presence/{dev.mac}"):
        out = dev.run(["curl", "-sk", "-m", "60", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
                       "-H", f"Authorization: Bearer {token}", "-H", "Content-Type: application/json",
                       "-d", json.dumps({"on": True}), url], check=False, timeout=90)
        text, _, code = out.stdout.rpartition("\n")
        assert code == "403" and "own access" in text, (url, out.stdout, out.stderr)
    assert api(home.web, "GET", f"notifications/presence/{dev.mac}").json()["on"] is False
    for body, words in (({"on": "maybe"}, "on"), ({"on": True, "when": "now"}, "when")):
        r = api(home.web, "POST", f"notifications/presence/{dev.mac}", json=body)
        assert r.status_code == 400 and words in r.json()["error"], r.text
