"""End to end on real Open vSwitch: the household sets a usage alert on a device through the
Guest Board's API ("tell me when it uses more than 2 MB in 1 minute"), the device downloads
more than that from the emulated internet, and the household gets one notification that
names the device and the amount, over IPv4 and over IPv6; a device under its amount, or
one with no alert, gives none; a LAN device cannot change its own alert."""
from __future__ import annotations

import json

import pytest

from homelab import LAN6_SITE, WEB6_ADDR, WEB_ADDR, Home
from homelab.routing import permitted_device, wait_until
from homelab.web import Web, api, have_web, web_home

MB = 1_000_000


@pytest.fixture(scope="module")
def home():
    from conftest import _can_run_home
    why = _can_run_home() or have_web()
    if why:
        pytest.skip(why)
    config = {"controller": {"components": ["dhcp", "routing", "usage", "notify"]},
              "routing": {"flow_stats_interval": 1},
              "ipv6": {"enabled": True, "prefix": LAN6_SITE}}
    with web_home(config=config) as h:
        h.web = Web(h).start()
        yield h


def burst_notifications(home: Home) -> list[dict]:
    r = api(home.web, "GET", "notifications")
    assert r.status_code == 200, r.text
    return [n for n in r.json()["notifications"] if n["kind"] == "alert-usage-burst"]


def download(dev, url: str, size_mb: int) -> None:
    out = dev.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "--max-time", "60",
                   f"{url}/download/{size_mb}M"], check=False)
    assert out.stdout.split() == ["200", str(size_mb * MB)], out.stdout + out.stderr


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
def test_a_device_over_its_amount_in_its_minutes_is_told_once(home: Home, family):
    dev = permitted_device(home, client="dhcpcd" if family == "ipv6" else "udhcpc")
    if family == "ipv6":
        dev.stop_dhcp()
        dev.start_dhcpcd(ipv6=True)
        wait_until(dev.ipv6_global, 20, f"{dev.name}: a global IPv6 address")
    quiet = permitted_device(home)            # an alert of its own, never reached
    assert home.homework("set-meta", dev.mac, "--name", f"Sam's {family} laptop").returncode == 0
    r = api(home.web, "POST", "usage/bursts", json={"mac": dev.mac, "size": "2M", "minutes": 1})
    assert r.status_code == 200 and r.json()["text"] == "more than 2 MB in 1 minute", r.text
    assert api(home.web, "POST", "usage/bursts", json={"mac": quiet.mac, "size": "1G", "minutes": 60}).ok
    view = api(home.web, "GET", f"devices/{dev.mac}").json()
    assert view["usage_burst"]["minutes"] == 1
    before = len(burst_notifications(home))

    url = f"http://[{WEB6_ADDR}]" if family == "ipv6" else f"http://{WEB_ADDR}"
    download(dev, url, 6)
    download(quiet, f"http://{WEB_ADDR}", 3)
    told = wait_until(lambda: burst_notifications(home)[before:], 30, "a burst notification")
    [note] = told
    assert note["mac"] == dev.mac
    assert note["detail"].startswith(f"Sam's {family} laptop moved ") and "in the last 1 minute" in note["detail"]
    download(dev, url, 3)                     # the same burst: not told again
    assert len(burst_notifications(home)) == before + 1
    assert home.homework("--json", "stats").returncode == 0


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
