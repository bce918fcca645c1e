"""End to end: a device is one caller whichever address it uses (homework/callers.py).

Attacks from device namespaces on the real stack (OVS, the controller, lighttpd's HTTPS
and the API, homework-dnsd, SLAAC in the kernel), over IPv4 and IPv6:
- the self-change: a permitted device holding an admin token tries to deny itself, pause
  itself and add allow rules for itself, from its IPv4 address and from several
  addresses of its /64 (before: 403 over IPv4, 200 over IPv6);
- login guessing from twenty addresses of one /64 (before: 100 guesses, no 429), and the
  same device carrying on over IPv4;
- twelve devices guessing in parallel while the household's CLI and board keep asking
  for the status (hashing off the event loop; the time it takes is in `make bench`)."""
from __future__ import annotations

import ipaddress
import json
import time
import threading

import pytest

from homelab import LAN6_SITE
from homelab.routing import wait_until
from homelab.web import api

N_ADDRESSES = 20


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "schedules"),
                           extra={"ipv6": {"enabled": True, "prefix": LAN6_SITE}})


@pytest.fixture(scope="module")
def home(lab):
    return lab.home


def prefix_of(lab, dev) -> ipaddress.IPv6Network:
    [view] = [d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == dev.mac]
    return ipaddress.IPv6Network(view["ipv6_prefix"])


def v6_addresses(lab, dev, n: int) -> tuple[str, list[str]]:
    """(the router's ::1 in the device's /64, n addresses of that /64 on the device): its
    SLAAC address first, then more, as privacy addresses would be."""
    prefix = prefix_of(lab, dev)
    slaac = wait_until(dev.ipv6_global, 60, f"{dev.name}: a SLAAC address")
    extra = [str(prefix.network_address + 0x5EC0000 + i) for i in range(n - 1)]
    for addr in extra:
        dev.run(["ip", "-6", "addr", "add", f"{addr}/64", "dev", "eth0", "nodad"])
    return str(prefix.network_address + 1), [slaac[0], *extra]


def https(dev, method: str, host: str, path: str, source: str | None = None, token: str | None = None,
          body: dict | None = None) -> tuple[str, str]:
    """(HTTP status, body) of one API call from the device to the router, from `source`."""
    url = f"https://[{host}]/ws.v1/{path}" if ":" in host else f"https://{host}/ws.v1/{path}"
    # generous: on a loaded machine a login's TLS handshake and password hash take seconds
    cmd = ["curl", "-sk", "-m", "60", "-o", "-", "-w", "\n%{http_code}", "-X", method,
           "-H", "Content-Type: application/json", "-d", json.dumps(body) if body is not None else ""]
    if source:
        cmd += ["--interface", source]
    if token:
        cmd += ["-H", f"Authorization: Bearer {token}"]
    out = dev.run([*cmd, url], check=False, timeout=90).stdout
    text, _, code = out.rpartition("\n")
    return code, text


def state(lab, mac: str) -> dict:
    return json.loads(lab.homework("--json", "status", mac))


def test_a_device_cannot_change_its_own_access_or_rules_from_any_of_its_addresses(lab, home):
    me, other = lab.join("selfish"), lab.join("sibling")
    router6, mine = v6_addresses(lab, me, 4)
    token = home.web.token("admin")
    v4 = me.default_gateway()
    attempts = [("POST", f"deny/{me.mac}", None), ("POST", f"pause/{me.mac}", {"minutes": 30}),
                ("POST", f"permit-dns/{me.mac}/games.test", None), ("POST", f"resume/{me.mac}", None),
                ("POST", "schedules", {"mac": me.mac, "days": "mon-sun", "from": "00:00", "to": "23:59",
                                       "action": "pause"})]
    for host, sources in ((v4, [None]), (router6, mine)):
        for source in sources:
            for method, path, body in attempts:
                code, text = https(me, method, host, path, source, token, body)
                assert code == "403" and "own access" in text, (host, source, path, code, text)
    view = state(lab, me.mac)
    assert view["state"] == "permitted" and not view.get("paused"), view
    rules = json.loads(lab.homework("--json", "dns-rules", me.mac))
    assert not any(r.get("domain") == "games.test" for r in (rules if isinstance(rules, list) else
                                                               rules.get("rules", []))), rules
    # the doors themselves are open: from its /64 it may pause its sibling (the household's word)
    code, text = https(me, "POST", router6, f"pause/{other.mac}", mine[-1], token, {"minutes": 5})
    assert code == "200", text
    assert state(lab, other.mac).get("paused"), state(lab, other.mac)
    lab.homework("resume", other.mac)


def test_guessing_the_password_from_twenty_addresses_of_one_64_is_one_guesser(lab, home):
    guesser = lab.join("guesser")
    router6, mine = v6_addresses(lab, guesser, N_ADDRESSES)
    codes = [https(guesser, "POST", router6, "login", source, body={"password": f"guess {i}"})[0]
             for i, source in enumerate(mine)]
    assert codes[:5] == ["401"] * 5 and set(codes[5:]) == {"429"}, codes
    # the same device over IPv4: still the same guesser
    code, text = https(guesser, "POST", guesser.default_gateway(), "login", body={"password": "guess v4"})
    assert code == "429" and "this device" in text, (code, text)
    # and the household, from another device, logs in as ever
    household = lab.join("household")
    # just permitted: until the dns component's batched nftables change takes it out of the
    # captive set, its HTTPS still reaches the captive server (405 to a POST); not a guess
    deadline = time.monotonic() + 60
    while True:
        code, text = https(household, "POST", household.default_gateway(), "login",
                           body={"password": home.admin_password})
        if code != "405" or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert code == "200", text


def test_twelve_parallel_guessers_leave_the_cli_and_the_board_answering(lab, home):
    guessers = [lab.join(f"par{i}") for i in range(12)]
    codes, lock = [], threading.Lock()

    def guess(dev):
        gw = dev.default_gateway()
        for i in range(6):
            code, _ = https(dev, "POST", gw, "login", body={"password": f"guess {i}"})
            with lock:
                codes.append(code)

    threads = [threading.Thread(target=guess, args=(d,)) for d in guessers]
    for t in threads:
        t.start()
    answered = {"cli": 0, "board": 0}
    while any(t.is_alive() for t in threads):
        if lab.home.homework("--json", "status").returncode == 0:
            answered["cli"] += 1
        if api(home.web, "GET", "status", role="read-only", timeout=30).status_code == 200:
            answered["board"] += 1
    for t in threads:
        t.join()
    # each device had its five guesses and then 429; the household was answered throughout
    assert codes.count("401") == 5 * 12 and codes.count("429") == 12, codes
    assert answered["cli"] > 0 and answered["board"] > 0, answered
