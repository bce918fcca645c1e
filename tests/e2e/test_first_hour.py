"""The first hour end to end: a household lets its first device in from the LAN alone.

A new router (its admin password still the one it made itself) with the whole DNS path,
the captive page's server and the Guest Board's lighttpd. A wired device plugged in by
the household is pending; its waiting page offers "This is my router: set it up"; it
chooses the password through the waiting page's server and is let in; the one-time
ticket opens its board session over HTTPS; the offer is gone for the next device, which
the first one lets in from the board. After a factory reset from that board (the devices
keep their addresses, as pending strangers) the router offers the set-up again, the same
way, to the device that reset it, without a new DHCP exchange. Real OVS, lighttpd (both), homework-dnsd, dnsmasq,
udhcpc and curl in device namespaces."""
from __future__ import annotations

import json

import pytest

from homelab import WEB_ADDR
from homelab.routing import can_connect, wait_until
from homelab.web import curl_from

NEW_PASSWORD = "our very own router"


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns"))


def call(dev, url: str, body: dict | None = None, jar=None, csrf: str = "") -> tuple[int, dict]:
    """One JSON call from the device's namespace (its own gateway; HTTPS unverified: the
    device has no copy of the router's certificate yet)."""
    args = []
    if body is not None:
        args += ["-X", "POST", "-H", "Content-Type: application/json", "-d", json.dumps(body)]
    if jar is not None:
        args += ["-b", str(jar), "-c", str(jar)]
    if csrf:
        args += ["-H", f"X-CSRF-Token: {csrf}"]
    res = curl_from(dev, url, *args, timeout=15)
    text, _, code = res.stdout.rpartition("\n")
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        data = {"text": text[:300]}
    return (int(code) if code.isdigit() else 0), data


def state(lab, mac) -> str:
    res = lab.home.homework("--json", "status", mac)
    return json.loads(res.stdout)["state"] if res.returncode == 0 else "unseen"


def set_up_from(lab, dev, password=NEW_PASSWORD, proof=None) -> dict:
    gateway = dev.default_gateway()
    body = {"password": password, **({"proof": proof} if proof else {})}
    code, answer = call(dev, f"http://{gateway}/ws.v1/setup", body)
    assert code == 200, answer
    return answer


def board_session(dev, answer: dict, jar) -> str:
    """The board's first call after the set-up: the ticket -> a session (its CSRF token)."""
    code, s = call(dev, f"{answer['board']}ws.v1/setup/session", {"ticket": answer["ticket"]}, jar=jar)
    assert code == 200 and s["role"] == "admin", s
    return s["csrf"]


def test_the_first_wired_device_sets_the_router_up_and_lets_the_next_one_in(lab, tmp_path):
    laptop = lab.join("laptop", permit=False)
    gateway = laptop.default_gateway()
    # its browser lands on the waiting page, which offers the set-up
    code, page = lab.http(laptop, "http://example.com/")
    assert code == 200 and "This is my router: set it up" in page and 'src="/setup.js"' in page, page[:300]
    code, script = lab.http(laptop, "http://example.com/setup.js")
    assert code == 200 and "/ws.v1/setup" in script
    code, offer = call(laptop, f"http://{gateway}/ws.v1/setup")
    assert code == 200 and offer["open"] and offer["wired"] and offer["needs"] == "nothing", offer
    # nothing else of the API, and not the board: it is pending
    assert call(laptop, f"http://{gateway}/ws.v1/devices")[1].get("text", "").lstrip().startswith("<")
    # its HTTPS reaches the captive pages' server, not the board: the same page, the same paths
    assert call(laptop, f"https://{gateway}/ws.v1/devices")[1].get("text", "").lstrip().startswith("<")
    code, offer = call(laptop, f"https://{gateway}/ws.v1/setup")
    assert code == 200 and offer["open"] and offer["device"]

    answer = set_up_from(lab, laptop)
    assert answer["permitted"] == laptop.mac and answer["board"] == f"https://{gateway}/"
    assert state(lab, laptop.mac) == "permitted"
    wait_until(lambda: can_connect(laptop, WEB_ADDR, 80, timeout=0.5), 15, "the set-up device reaches the internet")
    jar = tmp_path / "laptop.cookies"
    csrf = board_session(laptop, answer, jar)
    code, devices = call(laptop, f"{answer['board']}ws.v1/devices", jar=jar)
    assert code == 200 and {d["mac"]: d["state"] for d in devices}[laptop.mac] == "permitted"
    # the ticket was for one session only; the new password logs in, the router's own does not
    assert call(laptop, f"{answer['board']}ws.v1/setup/session", {"ticket": answer["ticket"]})[0] == 401
    assert call(laptop, f"{answer['board']}ws.v1/login", {"password": NEW_PASSWORD})[0] == 200
    assert call(laptop, f"{answer['board']}ws.v1/login", {"password": lab.home.admin_password})[0] == 401

    # the next device finds the router set up: it waits for the household
    phone = lab.join("phone", permit=False)
    code, offer = call(phone, f"http://{phone.default_gateway()}/ws.v1/setup")
    assert code == 200 and offer["open"] is False
    code, refused = call(phone, f"http://{phone.default_gateway()}/ws.v1/setup", {"password": "a phone's own one"})
    assert code == 409 and state(lab, phone.mac) == "pending", refused
    code, page = lab.http(phone, "http://example.com/")
    assert "Waiting for approval" in page
    # the household lets it in from the first device's board; nobody changes their own access
    code, _ = call(laptop, f"{answer['board']}ws.v1/permit/{phone.mac}", {}, jar=jar, csrf=csrf)
    assert code == 200 and state(lab, phone.mac) == "permitted"
    code, own = call(laptop, f"{answer['board']}ws.v1/deny/{laptop.mac}", {}, jar=jar, csrf=csrf)
    assert code == 403 and state(lab, laptop.mac) == "permitted", own


def test_after_a_factory_reset_the_router_offers_its_set_up_again(lab, tmp_path):
    home = lab.home
    laptop = next(d for d in home.devices if d.name == "laptop")
    jar = tmp_path / "laptop.cookies"
    gateway = laptop.default_gateway()
    code, s = call(laptop, f"https://{gateway}/ws.v1/login", {"password": NEW_PASSWORD}, jar=jar)
    assert code == 200
    # the image keeps the first-boot password file (the reset brings it back); the emulated
    # home removed it once the controller had read it
    home.admin_password_file.write_text(home.admin_password + "\n")
    starts = home.controller_log().count("components loaded")
    code, reset = call(laptop, f"https://{gateway}/ws.v1/factory-reset", {"confirm": "erase everything"},
                       jar=jar, csrf=s["csrf"])
    assert code == 200 and reset["restarting"] and len(reset["setup_code"]) == 9, reset
    wait_until(lambda: home.controller_log().count("components loaded") > starts, 60, "the controller restarts")
    home.wait_connected()
    # its address is kept (no DHCP needed: it could be half an hour away), the device a stranger
    assert state(lab, laptop.mac) == "pending"
    assert not can_connect(laptop, WEB_ADDR, 80, timeout=1)
    wait_until(lambda: "This is my router: set it up" in lab.http(laptop, "http://example.com/")[1], 20,
               "the reset laptop's browser lands on the waiting page and its set-up offer")
    code, offer = call(laptop, f"http://{gateway}/ws.v1/setup")
    assert offer["open"] and offer["setup_code_issued"] and offer["needs"] == "nothing", offer
    answer = set_up_from(lab, laptop, password="our second password")
    assert state(lab, laptop.mac) == "permitted"
    board_session(laptop, answer, tmp_path / "again.cookies")
    assert call(laptop, f"{answer['board']}ws.v1/login", {"password": NEW_PASSWORD})[0] == 401
