"""The household's rules hold between devices, not only towards the internet: device-to-
device traffic is switched by the learned per-pair entries (a new connection between two
devices that talked before never leaves the switch's flow cache), and a pause, a bedtime
window, a deny and a DNS-derived rule each still cut it at once, both ways, over real OVS
with the real controller, homework-dnsd and dnsmasq."""
from __future__ import annotations

import subprocess

import pytest

from homelab.routing import PY, TCP_SERVER, can_connect, wait_until
from homelab.web import api
from test_schedules import window_around_now

PORT = 7100


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "localnames", "schedules"),
                           {"router": {"timezone": "Europe/London"}, "schedules": {"check_interval": 1}})


@pytest.fixture(autouse=True)
def fresh(lab):
    yield
    if not lab.home.controller_running():
        lab.home.start_controller()
    for schedule in api(lab.home.web, "GET", "schedules").json():
        api(lab.home.web, "POST", f"schedules/{schedule['id']}/remove")
    lab.home.remove_devices()


def listening(dev) -> None:
    ip = dev.ipv4()[0]
    dev.popen([PY, "-c", TCP_SERVER, ip, str(PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: dev.run(["ss", "-Hltn", f"sport = :{PORT}"]).stdout.strip(), 10, f"{dev.name} listening")


def reaches(a, b) -> bool:
    return can_connect(a, b.ipv4()[0], PORT, timeout=0.5)


def pair(lab, names=("d2d-a", "d2d-b")):
    a, b = (lab.join(n) for n in names)
    for dev in (a, b):
        listening(dev)
    wait_until(lambda: reaches(a, b) and reaches(b, a), 10, "the two devices reach each other")
    return a, b


def test_a_pause_and_a_bedtime_window_cut_device_to_device_both_ways(lab):
    a, b = pair(lab)
    assert api(lab.home.web, "POST", f"pause/{a.mac}", json={"minutes": 60}).status_code == 200
    wait_until(lambda: not reaches(a, b) and not reaches(b, a), 15, "a paused: cut from b, both ways")
    assert api(lab.home.web, "POST", f"resume/{a.mac}").status_code == 200
    wait_until(lambda: reaches(a, b) and reaches(b, a), 15, "resumed: back")
    r = api(lab.home.web, "POST", "schedules", json={"mac": b.mac, **window_around_now(30, 30)})
    assert r.status_code == 200, r.text
    wait_until(lambda: not reaches(a, b) and not reaches(b, a), 15, "b inside its window: cut, both ways")


def test_a_denied_device_is_nobodys_destination_and_reaches_no_one(lab):
    a, b = pair(lab)
    lab.homework("deny", b.mac)
    wait_until(lambda: not reaches(a, b) and not reaches(b, a), 15, "b denied: cut, both ways")
    lab.homework("permit", b.mac)
    wait_until(lambda: reaches(a, b) and reaches(b, a), 10, "b permitted again: back")


def test_a_dns_rule_keeps_a_device_from_another_ones_address_learned_by_name(lab):
    a, b = pair(lab, ("d2d-kid", "d2d-nas"))
    c = lab.join("d2d-parent")
    name = f"{b.name}.home.arpa"        # the local name the router gives b (localnames)
    wait_until(lambda: lab.dig(c, name)[0] == "NOERROR", 15, f"{name} resolves")
    lab.homework("deny-dns", a.mac, name)
    assert lab.dig(a, name)[0] == "NXDOMAIN"
    assert lab.dig(c, name) == ("NOERROR", [b.ipv4()[0]])       # someone else looks it up
    wait_until(lambda: not reaches(a, b), 5, "a may not reach the name: nor its address")
    assert reaches(c, b)                                        # the rule is a's alone
    lab.homework("remove-dns-rule", name, a.mac)
    wait_until(lambda: reaches(a, b), 5, "the rule removed: a reaches b again")
