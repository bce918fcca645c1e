"""Forget does not strand a device that still holds an hour-long lease: within seconds it
is a pending device again, on its old address (its DNS answers with the router, its web
is the "waiting for approval" page, over IPv4 and IPv6); its renewal gets a pending
device's lease (or a NAK, if it is its first word), and permitting its MAC again lets it
straight back in, with no DHCP of its own. The emulated home runs what the image runs;
real dhclient, udhcpc and dhcpcd."""
from __future__ import annotations

import json

import pytest

from homelab import WEB_ADDR
from homelab.routing import wait_until

CLIENTS = ("dhclient", "udhcpc", "dhcpcd")


@pytest.fixture(scope="module")
def home():
    from conftest import emulated_home
    yield from emulated_home()


def status(home, mac) -> dict:
    res = home.homework("--json", "status", mac)
    return json.loads(res.stdout) if res.returncode == 0 else {}


def curl(dev, url: str, *args: str, timeout: int = 3) -> tuple[int, str]:
    resolv = dev.dir / "resolv.conf"
    inner = (f"mount --bind '{resolv}' /etc/resolv.conf && exec curl -s -m {timeout} {' '.join(args)} "
             f"-o - -w '\\n%{{http_code}}' '{url}'")
    res = dev.run(["unshare", "-m", "sh", "-c", inner], check=False, timeout=timeout + 10)
    body, _, code = res.stdout.rpartition("\n")
    return (int(code) if code.isdigit() else 0), body


def permitted_with_an_hour(home, name, client):
    dev = home.add_device(name)
    getattr(dev, f"start_{client}")()
    dev.wait_for_ipv4(30)
    assert home.homework("permit", dev.mac).returncode == 0
    # the hour-long lease: the next renewal (dhclient and dhcpcd renew at T1 of their 30 s
    # pending lease; udhcpc likewise)
    dev.wait_for_lease(60, pred=lambda lease: lease.lease_time == 3600)
    wait_until(lambda: curl(dev, f"http://{WEB_ADDR}/")[0] == 200, 20, f"{name} reaches the internet")
    return dev


@pytest.mark.parametrize("client", CLIENTS)
def test_a_forgotten_device_is_pending_again_within_seconds(home, client):
    lab = home.dns
    dev = permitted_with_an_hour(home, f"f-{client}", client)
    ip, gw = dev.ipv4()[0], dev.default_gateway()
    assert home.homework("forget", dev.mac).returncode == 0
    # its next look-up is answered as a pending device's, on its old address
    wait_until(lambda: lab.dig(dev, "example.com", timeout=1, tries=1) == ("NOERROR", [gw]), 15,
               f"{client}: the forgotten device's DNS answered with the router")
    assert status(home, dev.mac)["state"] == "pending"
    assert dev.ipv4()[0] == ip and curl(dev, f"http://{WEB_ADDR}/")[0] in (0, 200)
    code, body = curl(dev, "http://example.com/")
    assert code == 200 and "Waiting for approval on the Guest Board" in body
    code, body = curl(dev, "http://example.com/", "-6")
    assert code == 200 and "Waiting for approval on the Guest Board" in body
    assert curl(dev, f"http://{WEB_ADDR}/")[0] == 0                 # no internet: it is pending
    # the household lets it in again by its MAC: online, no DHCP needed
    assert home.homework("permit", dev.mac).returncode == 0
    wait_until(lambda: curl(dev, f"http://{WEB_ADDR}/")[0] == 200, 10, f"{client}: back online")
    assert dev.ipv4()[0] == ip


def test_permitting_the_mac_again_right_away_lets_it_straight_back_in(home):
    dev = permitted_with_an_hour(home, "f-quiet", "udhcpc")
    assert home.homework("forget", dev.mac).returncode == 0
    # by its MAC, at once (whether or not it has spoken since: a device is chatty, and the
    # unit tests cover the MAC that has not)
    assert home.homework("permit", dev.mac).returncode == 0
    assert status(home, dev.mac)["state"] == "permitted"
    wait_until(lambda: curl(dev, f"http://{WEB_ADDR}/")[0] == 200, 10, "back online at once")


def test_its_renewal_gets_a_pending_devices_lease_on_its_old_address(home):
    """A device is chatty: its own traffic made it pending again before it renewed, so its
    renewal is a pending device's (30 s). Had the renewal been its first word, it would have
    been NAKed and its DISCOVER given its old block (tests/unit/test_dhcp_returning.py)."""
    dev = permitted_with_an_hour(home, "f-renew", "udhcpc")
    ip = dev.ipv4()[0]
    before = dev.leases()[-1].time
    assert home.homework("forget", dev.mac).returncode == 0
    dev.renew()          # udhcpc's renew-now (SIGUSR1): the REQUEST a client sends at T1
    lease = dev.wait_for_lease(30, pred=lambda lease: lease.lease_time == 30, after=before)
    assert lease.ip == ip and status(home, dev.mac)["state"] == "pending"
