"""An application named by its domains gets its class end to end: the device
asks the router's DNS (homework-dnsd) for a name under the app's domain, the dns
component's answer event puts the address in the app's nftables set, and from then on
the device's connections to it are counted in the app's class and in its own byte
counters, both ways. Real OVS, dnsd, dnsmasq, tc, nft and iperf3."""
from __future__ import annotations

import subprocess
import time

import pytest

from homelab.dns import NEW_ADDR, NEW_DOMAIN
from homelab.iperf import transfer as iperf_transfer
from homelab.routing import wait_until
from homelab.web import api

PORT = 5202
# bytes a 2 s transfer surely moves even in the high class's capped share (30% of the
# shaped 4.5 Mbit/s up is ~340 kB in 2 s): upload, download
ENOUGH = {"up": 150_000, "down": 500_000}


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns"),
                           extra={"qos": {"enabled": True, "down_kbit": 19000, "up_kbit": 4750}})


@pytest.fixture(scope="module")
def server(lab):
    home = lab.home
    home.internet(["ip", "addr", "add", f"{NEW_ADDR}/32", "dev", "lo"], check=False)
    home.internet_popen(["iperf3", "-s", "-B", NEW_ADDR, "-p", str(PORT)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: home.internet(["ss", "-Hltn", f"sport = :{PORT}"]).stdout.strip(), 10, "iperf3 listening")
    return NEW_ADDR


def transfer(dev, addr: str) -> None:
    for reverse in (False, True):
        iperf_transfer(dev, addr, PORT, 2, reverse)


def counted(web, mac: str) -> tuple[dict, dict]:
    """(the device's bytes per (direction, class), the app's bytes per direction)."""
    stats = api(web, "GET", "qos/stats", role="read-only").json()
    device = {(r["direction"], r["class"]): r["bytes"] for r in stats["devices"] if r["mac"] == mac}
    app = {r["direction"]: r["bytes"] for r in stats["apps"] if r["name"] == "streaming"}
    return device, app


def test_an_app_by_domain_takes_its_class_once_the_device_resolves_the_name(lab, server):
    web = lab.home.web
    dev = lab.join()
    r = api(web, "POST", "qos/apps", json={"name": "streaming", "class": "high", "domains": [NEW_DOMAIN]})
    assert r.status_code == 200, r.text
    time.sleep(1.5)

    # not resolved through the router yet: the address is no one's, the device stays default
    transfer(dev, server)
    time.sleep(1.5)
    device, app = counted(web, dev.mac)
    for direction in ("up", "down"):
        assert device.get((direction, "default"), 0) > ENOUGH[direction], (direction, device)
    assert device.get(("up", "high"), 0) == 0 and sum(app.values()) == 0, (device, app)

    status, answers = lab.dig(dev, f"video.{NEW_DOMAIN}")
    assert status == "NOERROR" and server in answers, (status, answers)
    wait_until(lambda: server in lab.home.router(["nft", "list", "table", "inet", "homework_qos"]).stdout,
               5, "the answer's address in the app's set")

    transfer(dev, server)
    time.sleep(1.5)
    device, app = counted(web, dev.mac)
    for direction in ("up", "down"):
        assert device.get((direction, "high"), 0) > ENOUGH[direction], (direction, device)
        assert app.get(direction, 0) > ENOUGH[direction], (direction, app)
