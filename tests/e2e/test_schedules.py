"""Schedules and pauses end to end: real OVS, the real controller with the
dns and schedules components, homework-dnsd, the router's dnsmasq, lighttpd with the
ws.v1 API over HTTPS; curl, TCP connects and dig in device namespaces. A paused device
loses the emulated internet within about 2 s while DNS with its router still answers
(with the router: nothing goes upstream);
resume gives it back; a window holding "now" (in the configured zone) cuts it; a DNS deny
rule with a schedule blocks only while its window is open; a pause outlives a restart."""
from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from homelab import WEB_ADDR
from homelab.dns import BLOCKED_WEB, WEB
from homelab.routing import can_connect, gateway, wait_until
from homelab.web import api

ZONE = "Europe/London"
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "schedules"),
                           {"router": {"timezone": ZONE},
                            "schedules": {"check_interval": 1}})    # a window's end is seen within a second


@pytest.fixture(autouse=True)
def fresh(lab):
    yield
    if not lab.home.controller_running():
        lab.home.start_controller()
    for schedule in api(lab.home.web, "GET", "schedules").json():
        api(lab.home.web, "POST", f"schedules/{schedule['id']}/remove")
    lab.home.remove_devices()


def web_ok(dev) -> bool:
    return can_connect(dev, WEB_ADDR, 80, timeout=0.5)


def window_around_now(before: int, after: int) -> dict:
    """days/from/to of a window from `before` minutes ago to `after` minutes ahead, in the
    router's zone (a window crossing midnight belongs to the day it starts)."""
    now = datetime.now(ZoneInfo(ZONE))
    start, end = now - timedelta(minutes=before), now + timedelta(minutes=after)
    return {"days": DAYS[start.weekday()], "from": start.strftime("%H:%M"), "to": end.strftime("%H:%M")}


def view(lab, dev) -> dict:
    r = api(lab.home.web, "GET", f"devices/{dev.mac}")
    assert r.status_code == 200, r.text
    return r.json()


def test_pause_cuts_the_internet_keeps_dns_and_resume_gives_it_back(lab):
    dev = lab.join("kid1")
    wait_until(lambda: web_ok(dev), 10, "the permitted device reaches the internet")
    r = api(lab.home.web, "POST", f"pause/{dev.mac}", json={"minutes": 60})
    assert r.status_code == 200 and r.json()["paused"], r.text
    wait_until(lambda: not web_ok(dev), 15, "paused: the internet cut")
    # its router still answers DNS, with itself (the page saying why): nothing goes upstream
    assert lab.dig(dev, "example.com") == ("NOERROR", [gateway(dev)])
    assert dev.ping(gateway(dev), timeout=1)                         # and ping
    until = view(lab, dev)["paused_until"]
    assert 3500 < until - time.time() <= 3600
    r = api(lab.home.web, "POST", f"resume/{dev.mac}")
    assert r.status_code == 200 and not r.json()["paused"], r.text
    wait_until(lambda: web_ok(dev), 15, "resumed: the internet back")
    assert view(lab, dev)["paused_until"] == 0


def test_a_schedule_whose_window_holds_now_cuts_the_device(lab):
    dev, other = lab.join("kid2"), lab.join("parent2")
    wait_until(lambda: web_ok(dev) and web_ok(other), 10, "both devices reach the internet")
    r = api(lab.home.web, "POST", "schedules", json={"mac": dev.mac, **window_around_now(30, 30)})
    assert r.status_code == 200, r.text
    wait_until(lambda: not web_ok(dev), 15, "inside its window: cut")
    assert web_ok(other)                                              # the other device is not touched
    assert view(lab, dev)["in_schedule"] == "pause" and view(lab, dev)["paused_by"] == "schedule"
    # an overlapping window of the same device and action: 400, nothing stored
    r = api(lab.home.web, "POST", "schedules", json={"mac": dev.mac, **window_around_now(10, 10)})
    assert r.status_code == 400 and "overlaps" in r.json()["error"]
    assert len(api(lab.home.web, "GET", f"schedules?mac={dev.mac}").json()) == 1
    # a window later today (not holding now) does not cut; removing the open one opens it
    assert api(lab.home.web, "POST", f"schedules/{r_id(lab, dev)}/remove").status_code == 200
    wait_until(lambda: web_ok(dev), 15, "the window removed: open again")


def r_id(lab, dev) -> int:
    return api(lab.home.web, "GET", f"schedules?mac={dev.mac}").json()[0]["id"]


def test_a_scheduled_dns_rule_blocks_the_name_only_while_its_window_is_open(lab):
    dev = lab.join("kid3")
    now_window = window_around_now(30, 30)
    later = window_around_now(-120, 180)                              # opens in 2 h
    spec_now = f"{now_window['days']} {now_window['from']}-{now_window['to']}"
    spec_later = f"{later['days']} {later['from']}-{later['to']}"
    r = api(lab.home.web, "POST", f"deny-dns/{dev.mac}/blocked.test", json={"schedule": spec_now})
    assert r.status_code == 200 and r.json()["active"] is True, r.text
    r = api(lab.home.web, "POST", f"deny-dns/{dev.mac}/kids.test", json={"schedule": spec_later})
    assert r.status_code == 200 and r.json()["active"] is False, r.text
    assert lab.dig(dev, "blocked.test")[0] == "NXDOMAIN"
    assert lab.dig(dev, "kids.test")[0] == "NOERROR"                  # its window is not open
    # the windows swap: each rule follows its own
    api(lab.home.web, "POST", f"deny-dns/{dev.mac}/blocked.test", json={"schedule": spec_later})
    api(lab.home.web, "POST", f"deny-dns/{dev.mac}/kids.test", json={"schedule": spec_now})
    assert lab.dig(dev, "blocked.test") == ("NOERROR", [BLOCKED_WEB])
    assert lab.dig(dev, "kids.test")[0] == "NXDOMAIN"
    rules = {r["domain"]: r for r in json.loads(lab.homework("--json", "dns-rules", dev.mac))["rules"]}
    assert rules["kids.test"]["active"] and not rules["blocked.test"]["active"]
    r = api(lab.home.web, "POST", f"deny-dns/{dev.mac}/games.test", json={"schedule": "mon-fri 25:00-07:00"})
    assert r.status_code == 400 and "HH:MM" in r.json()["error"]


def test_windows_closing_by_the_clock_end_the_cut_and_the_scheduled_rule(lab):
    """No command in between: the next look at the clock after the window's end opens the
    device again and takes the rule out of dnsd."""
    dev, other = lab.join("kid5"), lab.join("kid6")
    wait_until(lambda: web_ok(dev), 10, "the permitted device reaches the internet")
    now = datetime.now(ZoneInfo(ZONE))
    end = (now + timedelta(minutes=1)).replace(second=0, microsecond=0)
    if (end - now).total_seconds() < 10:                 # too close to add both in time
        end += timedelta(minutes=1)
    start = now - timedelta(minutes=30)
    window = {"days": DAYS[start.weekday()], "from": start.strftime("%H:%M"), "to": end.strftime("%H:%M")}
    assert api(lab.home.web, "POST", "schedules", json={"mac": dev.mac, **window}).status_code == 200
    spec = f"{window['days']} {window['from']}-{window['to']}"
    r = api(lab.home.web, "POST", f"deny-dns/{other.mac}/school.test", json={"schedule": spec})
    assert r.status_code == 200 and r.json()["active"] is True, r.text
    wait_until(lambda: not web_ok(dev), 8, "inside the window: cut")      # before its end (>= 10 s away)
    assert lab.dig(other, "school.test")[0] == "NXDOMAIN"
    left = (end - datetime.now(ZoneInfo(ZONE))).total_seconds()
    wait_until(lambda: web_ok(dev), left + 5, "the window ended: open again", interval=0.5)
    wait_until(lambda: lab.dig(other, "school.test")[0] == "NOERROR", 5, "the rule's window ended: allowed")
    assert view(lab, dev)["in_schedule"] == "" and not view(lab, dev)["paused"]


def test_a_pause_survives_a_controller_restart(lab):
    dev = lab.join("kid4")
    wait_until(lambda: web_ok(dev), 10, "the permitted device reaches the internet")
    assert lab.home.homework("pause", dev.mac, "--minutes", "30").returncode == 0
    wait_until(lambda: not web_ok(dev), 15, "paused from the CLI")
    lab.home.restart_controller()
    wait_until(lambda: lab.home.homework("status", dev.mac).returncode == 0, 15, "the controller back")
    wait_until(lambda: "paused" in lab.home.homework("--json", "status", dev.mac).stdout, 10, "status")
    status = json.loads(lab.home.homework("--json", "status", dev.mac).stdout)
    assert status["paused"] is True and status["paused_by"] == "pause"
    time.sleep(2)                                # datapath_up has replaced the flows by now
    assert not web_ok(dev)
    assert lab.dig(dev, "example.com") == ("NOERROR", [gateway(dev)])     # still cut off after the restart
    assert lab.home.homework("resume", dev.mac).returncode == 0
    wait_until(lambda: web_ok(dev), 15, "resumed after the restart")
    assert wait_until(lambda: lab.dig(dev, "example.com") == ("NOERROR", [WEB]), 5, "real answers again")
