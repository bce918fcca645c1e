"""DNSSEC validation end to end: the emulated internet's authoritative server (nsd) serves
zones signed with ldns-signzone, one of them with a record forged after signing; a device
asks the router (homework-dnsd -> unbound -> the internet's resolver -> nsd) with dig, over
IPv4 and IPv6. The real answer comes validated, the forged one is SERVFAIL and the query
log says "bogus"; an unsigned zone still resolves; the household turns validation off for
one domain (API and CLI) or altogether, and on again."""
from __future__ import annotations

import ipaddress
import json
import re
import time

import pytest

from homelab import LAN6_SITE
from homelab.dns import WEB
from homelab.dnssec import FORGED, FORGED_ADDR, INSECURE_WWW, SIGNED, SIGNED_WWW
from homelab.routing import wait_until
from homelab.web import api


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "hwdb_sync"), hwdb=True,
                           extra={"ipv6": {"enabled": True, "prefix": LAN6_SITE}})


@pytest.fixture(autouse=True)
def validation_back_on(lab):
    yield
    lab.homework("dnssec", "on")
    for domain in json.loads(lab.homework("--json", "dnssec"))["insecure"]:
        lab.homework("dnssec", "insecure", "remove", domain)


def ask(lab, dev, name, server=None, qtype="A") -> tuple[str, list[str], set[str]]:
    """(status, answers, header flags) of dig in the device's namespace."""
    server = server or dev.default_gateway()
    out = dev.run(["dig", f"@{server}", name, qtype, "+noall", "+comments", "+answer", "+time=5", "+tries=1"],
                  check=False, timeout=20).stdout
    status = re.search(r"status: (\w+)", out)
    flags = re.search(r";; flags: ([a-z ]+);", out)
    answers = [line.split()[-1] for line in out.splitlines()
               if line and not line.startswith(";") and len(line.split()) >= 5]
    return (status.group(1) if status else "TIMEOUT", answers, set(flags.group(1).split()) if flags else set())


def router6(lab, dev) -> str:
    [view] = [d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == dev.mac]
    wait_until(dev.ipv6_global, 15, f"{dev.name}: a SLAAC address")
    return str(ipaddress.IPv6Network(view["ipv6_prefix"]).network_address + 1)


def logged(lab, dev, verdict):
    """The names the query log shows for `dev` with `verdict` (hwdb, through the API)."""
    rows = api(lab.home.web, "GET", f"dns/queries?mac={dev.mac}&verdict={verdict}", role="read-only").json()["queries"]
    return {r["name"] for r in rows}


def wait_for(check, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return value


def test_real_answers_validate_forged_ones_fail_and_the_log_says_bogus(lab):
    dev = lab.join("laptop")
    status, answers, flags = ask(lab, dev, SIGNED_WWW)
    assert (status, answers) == ("NOERROR", [WEB]) and "ad" in flags, (status, answers, flags, lab.debug())
    status, answers, _ = ask(lab, dev, FORGED)
    assert (status, answers) == ("SERVFAIL", []), "the forged address must never reach the device"
    status, answers, flags = ask(lab, dev, INSECURE_WWW)
    assert (status, answers) == ("NOERROR", [WEB]) and "ad" not in flags, "an unsigned zone still resolves"
    assert wait_for(lambda: FORGED in logged(lab, dev, "bogus")), lab.debug()
    assert SIGNED_WWW in logged(lab, dev, "allowed") and FORGED not in logged(lab, dev, "allowed")
    assert json.loads(lab.homework("--json", "dns-stats"))["dnsd"]["bogus"] >= 1
    cli = lab.home.homework("queries", "--mac", dev.mac, "--verdict", "bogus")
    assert cli.returncode == 0 and FORGED in cli.stdout


def test_over_ipv6_the_same(lab):
    dev = lab.join("phone6")
    server = router6(lab, dev)
    status, answers, flags = ask(lab, dev, SIGNED_WWW, server=server)
    assert (status, answers) == ("NOERROR", [WEB]) and "ad" in flags
    assert ask(lab, dev, FORGED, server=server)[0] == "SERVFAIL"
    assert wait_for(lambda: FORGED in logged(lab, dev, "bogus"))


def test_a_household_turns_validation_off_for_a_broken_domain_and_back_on(lab):
    dev = lab.join("tablet")
    assert ask(lab, dev, FORGED)[0] == "SERVFAIL"
    r = api(lab.home.web, "POST", "dns/dnssec/insecure", json={"domain": SIGNED})
    assert r.status_code == 200 and r.json()["insecure"] == [SIGNED] and r.json()["running"], r.text
    assert ask(lab, dev, FORGED)[:2] == ("NOERROR", [FORGED_ADDR]), "validation is off for that domain only"
    assert ask(lab, dev, SIGNED_WWW)[2].isdisjoint({"ad"})
    bad = api(lab.home.web, "POST", "dns/dnssec/insecure", json={"domain": "not a domain"})
    assert bad.status_code == 400 and "not a domain name" in bad.json()["error"]
    r = api(lab.home.web, "POST", f"dns/dnssec/insecure/{SIGNED}/remove")
    assert r.status_code == 200 and r.json()["insecure"] == []
    assert ask(lab, dev, FORGED)[0] == "SERVFAIL"
    # the CLI, the same command
    lab.homework("dnssec", "insecure", "add", SIGNED)
    assert ask(lab, dev, FORGED)[:2] == ("NOERROR", [FORGED_ADDR])
    assert SIGNED in lab.homework("dnssec")


def test_validation_off_altogether_and_on_again(lab):
    dev = lab.join("tv")
    r = api(lab.home.web, "POST", "dns/dnssec", json={"enabled": False})
    assert r.status_code == 200 and r.json()["enabled"] is False
    assert ask(lab, dev, FORGED)[:2] == ("NOERROR", [FORGED_ADDR])
    assert api(lab.home.web, "POST", "dns/dnssec", json={"enabled": "no"}).status_code == 400
    assert api(lab.home.web, "POST", "dns/dnssec", json={"enabled": True}).json()["enabled"] is True
    assert ask(lab, dev, FORGED)[0] == "SERVFAIL"
    assert api(lab.home.web, "GET", "dns/dnssec", role="read-only").json()["enabled"] is True
