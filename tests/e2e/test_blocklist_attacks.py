"""End to end: a huge or internal blocklist cannot hurt the router.

A permitted device holding an admin token subscribes, through the API over IPv4 and IPv6:
- a list of three million names served by the emulated internet (the first hostile run
  used 60 MiB, 4.5 million names: the controller peaked at 657 MB and the call took 22.7 s
  with its loop held). Now it is refused with a sentence naming the cap, nothing is
  stored, the controller's peak memory barely moves (the list is compiled in a process
  of its own, streamed, never a Python set), and the board is answered meanwhile;
- lists at the router's own services, loopback, link-local and a LAN device: refused
  unless the household allows local addresses; a list the internet's server does not have
  is refused without the server's own words.
Real OVS, the controller (dns, blocklists), homework-dnsd, lighttpd, the internet's web
server."""
from __future__ import annotations

import ipaddress
import json
import re
import threading

import pytest

from homelab import LAN6_SITE
from homelab.dns import BLOCKED_WEB
from homelab.routing import wait_until
from homelab.web import api

HUGE = 3_000_000


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "blocklists"),
                           extra={"ipv6": {"enabled": True, "prefix": LAN6_SITE}})


def peak_kb(home) -> int:
    status = open(f"/proc/{home._controller.pid}/status").read()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))


def subscribe(dev, base: str, token: str, body: dict) -> tuple[str, dict]:
    out = dev.run(["curl", "-sk", "-m", "300", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
                   "-H", f"Authorization: Bearer {token}", "-H", "Content-Type: application/json",
                   "-d", json.dumps(body), f"{base}/blocklists"], check=False, timeout=330).stdout
    text, _, code = out.rpartition("\n")
    try:
        return code, json.loads(text)
    except ValueError:
        return code, {"raw": text}


def bases(lab, dev) -> list[str]:
    [view] = [d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == dev.mac]
    wait_until(dev.ipv6_global, 20, f"{dev.name}: a SLAAC address")
    router6 = ipaddress.IPv6Network(view["ipv6_prefix"]).network_address + 1
    return [f"https://{dev.default_gateway()}/ws.v1", f"https://[{router6}]/ws.v1"]


def test_a_huge_list_is_refused_without_taking_the_controllers_memory(lab):
    home = lab.home
    dev = lab.join("lists-admin")
    token = home.web.token("admin")
    with open(lab.dir / "blocked-www" / "huge.txt", "w") as f:
        f.write("# a very long list\n")
        f.writelines(f"a{i}.t{i % 97}.io\n" for i in range(HUGE))        # one name a line: about 40 MB
    before = peak_kb(home)
    answered, done = [], threading.Event()

    def board():         # the household's board keeps asking meanwhile
        while not done.is_set():
            answered.append(api(home.web, "GET", "blocklists", role="read-only", timeout=60).status_code)
    watcher = threading.Thread(target=board, daemon=True)
    watcher.start()
    try:
        for base in bases(lab, dev):
            code, body = subscribe(dev, base, token, {"url": f"http://{BLOCKED_WEB}/huge.txt"})
            assert code == "400" and "1,000,000" in body.get("error", "") and "max_names" in body["error"], body
    finally:
        done.set()
        watcher.join(70)
    assert api(home.web, "GET", "blocklists", role="read-only").json()["blocklists"] == []
    assert answered and set(answered) == {200}, answered
    grown_mb = (peak_kb(home) - before) / 1024
    assert grown_mb < 100, f"the controller's peak memory grew by {grown_mb:.0f} MB"
    assert not list((home.dir / "state" / "blocklists").glob("*")) if (home.dir / "state" / "blocklists").exists() \
        else True


def test_internal_list_addresses_are_refused_and_failures_say_nothing_of_them(lab):
    home = lab.home
    dev, other = lab.join("lists-prober"), lab.join("lists-victim")
    token = home.web.token("admin")
    urls = ["http://127.0.0.1:8080/ws.v1/status", f"http://{dev.default_gateway()}:443/",
            "http://169.254.53.53:5300/", f"http://{other.ipv4()[0]}:80/", "http://[::1]/",
            "http://[fe80::1]/"]
    for base in bases(lab, dev):
        for url in urls:
            code, body = subscribe(dev, base, token, {"url": url})
            assert code == "400" and "allow local addresses" in body.get("error", ""), (base, url, code, body)
        code, body = subscribe(dev, base, token, {"url": f"http://{BLOCKED_WEB}/nothing-here.txt"})
        assert code == "400" and "answered with an error" in body["error"] and "404" not in body["error"], body
    # allowed on purpose: the API says 401 there, the household is told only that it failed
    code, body = subscribe(dev, bases(lab, dev)[0], token,
                           {"url": "http://127.0.0.1:8080/ws.v1/status", "allow_local": True})
    assert code == "400" and "answered with an error" in body["error"] and "401" not in body["error"], body
    assert api(home.web, "GET", "blocklists", role="read-only").json()["blocklists"] == []
