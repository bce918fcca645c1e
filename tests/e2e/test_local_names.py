"""Local names and the query log end to end: real OVS, the real controller with
the dns, localnames, hwdb_sync and api components, homework-dnsd, the router's dnsmasq
reading the controller's hosts file (hostsdir), hwdbd, lighttpd; dig in device namespaces
and the ws.v1 API over HTTPS."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from homelab.dns import WEB
from homelab.web import api


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "localnames", "hwdb_sync"), hwdb=True, log_queries=True)


def wait_for(check, timeout=5.0, step=0.1):
    """check()'s first true value within `timeout` seconds, else its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def name_it(lab, dev, name):
    r = api(lab.home.web, "POST", f"meta/{dev.mac}", json={"name": name})
    assert r.status_code == 200, r.text


def resolves(lab, asker, name, qtype="A"):
    """What `name` resolves to from `asker`, once it answers (NOERROR), else the last answer."""
    return wait_for(lambda: (lambda got: got if got[0] == "NOERROR" else None)(lab.dig(asker, name, qtype)),
                    timeout=15) or lab.dig(asker, name, qtype)


def ptr(ip: str) -> str:
    return ".".join(reversed(ip.split("."))) + ".in-addr.arpa"


def test_devices_resolve_by_name_conflicts_renames_forget_and_restart(lab):
    home = lab.home
    tv, laptop = lab.join("tv1"), lab.join("laptop1")
    tv_ip, laptop_ip = tv.ipv4()[0], laptop.ipv4()[0]
    name_it(lab, tv, "TV")
    name_it(lab, laptop, "Mum's Laptop")
    assert resolves(lab, laptop, "tv.home.arpa") == ("NOERROR", [tv_ip])
    assert resolves(lab, laptop, "tv.lan") == ("NOERROR", [tv_ip])               # every [dns] local domain
    assert resolves(lab, tv, "mums-laptop.home.arpa") == ("NOERROR", [laptop_ip])
    assert resolves(lab, laptop, ptr(tv_ip), "PTR") == ("NOERROR", ["tv.home.arpa."])
    assert lab.dig(laptop, "example.com") == ("NOERROR", [WEB])                 # the rest as before

    # A second device named "TV" comes later: it is tv-2, the first keeps tv.
    tv2 = lab.join("tv2")
    tv2_ip = tv2.ipv4()[0]
    name_it(lab, tv2, "tv")
    assert resolves(lab, laptop, "tv-2.home.arpa") == ("NOERROR", [tv2_ip])
    assert lab.dig(laptop, "tv.home.arpa") == ("NOERROR", [tv_ip])
    # Asked while the name was being published, it never went to the internet: the router's
    # dnsmasq answers the household's domains itself. (Asked upstream, the upstream's NXDOMAIN
    # came back after dnsmasq had read the new name, and dnsmasq made it NOERROR with no address.)
    assert not lab.upstream_saw("tv-2.home.arpa")
    names = api(home.web, "GET", "local-names", role="read-only").json()
    assert {(n["label"], n["mac"], n["ip"]) for n in names} == {
        ("tv", tv.mac, tv_ip), ("tv-2", tv2.mac, tv2_ip), ("mums-laptop", laptop.mac, laptop_ip)}
    assert api(home.web, "GET", f"devices/{tv2.mac}").json()["dns_name"] == "tv-2.home.arpa"
    assert "tv-2.home.arpa" in home.homework("names").stdout

    # Renamed: the new name answers, and tv passes to the other TV.
    name_it(lab, tv, "Television")
    assert resolves(lab, laptop, "television.home.arpa") == ("NOERROR", [tv_ip])
    assert wait_for(lambda: lab.dig(laptop, "tv.home.arpa") == ("NOERROR", [tv2_ip]), timeout=15)
    assert resolves(lab, laptop, ptr(tv_ip), "PTR") == ("NOERROR", ["television.home.arpa."])

    # A pending device's DHCP hostname is not published (it could squat a name).
    squatter = lab.join("printer", permit=False)
    assert wait_for(lambda: home.control("devices") and any(
        d["mac"] == squatter.mac and d["hostname"] == "printer" for d in home.control("devices")), timeout=15)
    assert lab.dig(laptop, "printer.home.arpa")[0] == "NXDOMAIN"
    assert not lab.upstream_saw("printer.home.arpa")                      # nor is a name nobody has
    assert squatter.mac not in {n["mac"] for n in api(home.web, "GET", "local-names").json()}

    # Forgotten: its name goes.
    r = api(home.web, "POST", f"forget/{tv2.mac}")
    assert r.status_code == 200, r.text
    assert wait_for(lambda: lab.dig(laptop, "tv.home.arpa")[0] == "NXDOMAIN", timeout=15)

    # A restart (on the router /run, where the file lives, is empty after a reboot): the
    # controller writes the names again from its state at start.
    home.stop_controller()
    hosts = Path(home.config_overrides["localnames"]["hosts_dir"]) / "homework"
    hosts.unlink()
    home.start_controller()
    assert wait_for(hosts.exists, timeout=30), home.controller_log()[-2000:]
    assert resolves(lab, laptop, "television.home.arpa") == ("NOERROR", [tv_ip])
    assert resolves(lab, tv, "mums-laptop.lan") == ("NOERROR", [laptop_ip])


def test_query_log_shows_a_devices_queries_with_verdicts_search_and_summary(lab):
    home = lab.home
    kid = lab.join("kid1")
    lab.homework("deny-dns", kid.mac, "blocked.test")
    assert lab.dig(kid, "example.com") == ("NOERROR", [WEB])
    assert lab.dig(kid, "blocked.test")[0] == "NXDOMAIN"
    assert lab.dig(kid, "school.test")[0] == "NOERROR"

    def logged():
        rows = api(home.web, "GET", f"dns/queries?mac={kid.mac}", role="read-only").json()["queries"]
        got = {(r["name"], r["verdict"]) for r in rows}
        return rows if {("example.com", "allowed"), ("blocked.test", "blocked"), ("school.test", "allowed")} <= got \
            else None
    rows = wait_for(logged, timeout=10, step=0.5)
    assert rows, api(home.web, "GET", f"dns/queries?mac={kid.mac}").text
    assert all(r["mac"] == kid.mac and r["device"] == "kid1" for r in rows)       # its DHCP hostname
    assert [r["at"] for r in rows] == sorted((r["at"] for r in rows), reverse=True)   # newest first
    assert rows[0]["name"] == "school.test" and rows[0]["type"] == "A"

    found = api(home.web, "GET", f"dns/queries?mac={kid.mac}&search=BLOCKED").json()["queries"]
    assert {r["name"] for r in found} == {"blocked.test"}
    only_blocked = api(home.web, "GET", f"dns/queries?mac={kid.mac}&verdict=blocked").json()["queries"]
    assert {r["name"] for r in only_blocked} == {"blocked.test"}
    assert len(api(home.web, "GET", f"dns/queries?mac={kid.mac}&limit=1").json()["queries"]) == 1

    summary = api(home.web, "GET", "dns/queries/summary").json()
    mine = next(d for d in summary["devices"] if d["mac"] == kid.mac)
    assert mine["blocked"] == 1 and mine["total"] >= 3
    assert {"name": "blocked.test", "count": 1} in summary["top_blocked"]

    cli = home.homework("queries", "--mac", kid.mac, "--search", "example")
    assert cli.returncode == 0 and "example.com" in cli.stdout and "blocked.test" not in cli.stdout
    bad = api(home.web, "GET", "dns/queries?limit=0")
    assert bad.status_code == 400 and "limit" in bad.json()["error"]
