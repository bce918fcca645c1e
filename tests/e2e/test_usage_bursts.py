"""End to end on real Open vSwitch: the household sets a usage alert on a device through the
Guest Board's API ("tell me when it uses more than 2 MB in 2 minutes"), the device downloads
more than that from the emulated internet, and the household gets one notification that
names the device and the amount, over IPv4 and over IPv6; a device under its amount, or
one with no alert, gives none; a LAN device cannot change its own alert."""
from __future__ import annotations

import json

import pytest

from homelab import LAN6_SITE, WEB6_ADDR, WEB_ADDR, Home
from homelab.routing import permitted_device, wait_until
from homelab.web import Web, api, web_home

MIB = 1 << 20            # the emulated internet's /download/<N>M


@pytest.fixture(scope="module")
def home():
    config = {"controller": {"components": ["dhcp", "routing", "usage", "notify"]},
              "routing": {"flow_stats_interval": 1}, "usage": {"flush_interval": 1, "timezone": "UTC"},
              "ipv6": {"enabled": True, "prefix": LAN6_SITE}}
    with web_home(config=config) as h:
        h.web = Web(h).start()
        yield h


def burst_notifications(home: Home, mac: str) -> list[dict]:
    r = api(home.web, "GET", "notifications")
    assert r.status_code == 200, r.text
    return [n for n in r.json()["notifications"] if n["kind"] == "alert-usage-burst" and n["mac"] == mac]


def used(home: Home, mac: str) -> int:
    """The device's bytes today as the usage component counted them."""
    out = home.homework("--json", "usage", "day", "device")
    assert out.returncode == 0, out.stderr + out.stdout
    return sum(r["total"] for r in json.loads(out.stdout)["rows"] if r["who"] == mac)


def download(dev, url: str, size_mb: int) -> None:
    out = dev.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "--max-time", "60",
                   f"{url}/download/{size_mb}M"], check=False)
    assert out.stdout.split() == ["200", str(size_mb * MIB)], out.stdout + out.stderr


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
def test_a_device_over_its_amount_in_its_minutes_is_told_once(home: Home, family):
    dev = permitted_device(home, client="dhcpcd" if family == "ipv6" else "udhcpc")
    if family == "ipv6":
        dev.stop_dhcp()
        dev.start_dhcpcd(ipv6=True)
        wait_until(dev.ipv6_global, 20, f"{dev.name}: a global IPv6 address")
    quiet = permitted_device(home)            # an alert of its own, never reached
    assert api(home.web, "POST", f"meta/{dev.mac}", json={"name": f"Sam's {family} laptop"}).ok
    # two minutes: a download that spans a minute's end is counted whole (the window counts
    # the whole minutes that began inside it)
    r = api(home.web, "POST", "usage/bursts", json={"mac": dev.mac, "size": "2M", "minutes": 2})
    assert r.status_code == 200 and r.json()["text"] == "more than 2 MB in 2 minutes", r.text
    assert api(home.web, "POST", "usage/bursts", json={"mac": quiet.mac, "size": "1G", "minutes": 60}).ok
    view = api(home.web, "GET", f"devices/{dev.mac}").json()
    assert view["usage_burst"]["minutes"] == 2

    url = f"http://[{WEB6_ADDR}]" if family == "ipv6" else f"http://{WEB_ADDR}"
    download(dev, url, 6)
    download(quiet, f"http://{WEB_ADDR}", 3)
    [note] = wait_until(lambda: burst_notifications(home, dev.mac), 30, "a burst notification")
    assert note["detail"].startswith(f"Sam's {family} laptop moved ") and "in the last 2 minutes" in note["detail"]
    # the same burst goes on: once its bytes are counted, still one notification
    download(dev, url, 3)
    wait_until(lambda: used(home, dev.mac) >= 9 * MIB, 30, "the second download counted")
    assert len(burst_notifications(home, dev.mac)) == 1
    assert burst_notifications(home, quiet.mac) == []


def test_a_device_cannot_change_its_own_alert_and_bad_settings_are_refused(home: Home):
    dev = permitted_device(home)
    token = home.web.token("admin")          # even with the household's own credentials
    for path, body in (("usage/bursts", {"mac": dev.mac, "size": "5G", "minutes": 60}),
                       ("usage/bursts/remove", {"mac": dev.mac})):
        out = dev.run(["curl", "-sk", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                       "-H", f"Authorization: Bearer {token}", "-H", "Content-Type: application/json",
                       "-d", json.dumps(body),
                       f"https://{dev.default_gateway()}/ws.v1/{path}"], check=False, timeout=40)
        assert out.stdout == "403", out.stdout + out.stderr
    for body, words in (({"mac": dev.mac, "size": "lots", "minutes": 5}, "a size"),
                        ({"mac": dev.mac, "size": "5M", "minutes": 0}, "from 1 to 60"),
                        ({"mac": dev.mac, "size": "5M", "minutes": 5, "extra": 1}, "unknown field")):
        r = api(home.web, "POST", "usage/bursts", json=body)
        assert r.status_code == 400 and words in r.json()["error"], r.text
    assert api(home.web, "POST", "usage/bursts/remove", json={"mac": dev.mac}).json() == \
        {"mac": dev.mac, "removed": False}
