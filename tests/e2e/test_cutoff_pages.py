"""Every cut-off device is told why, on the real stack (the emulated home runs what the
image runs): a pending, denied, paused, bedtime or over-allowance device gets its own
page from the router, in the household's words, for any web address it tries over IPv4
and IPv6, HTTP and HTTPS; its DNS answers every name with the router and nothing goes
upstream, whether it asks its gateway, its IPv6 router address or an outside resolver
(no DNS tunnel); DHCP option 114 and the Router Advertisement's captive portal option
(RFC 8910) announce the RFC 8908 API, which says whether the caller is captive.

Real udhcpc, dig and curl in device namespaces; homework-dnsd, the router's dnsmasq, the
internet's resolver (which logs the queries it gets), both lighttpds."""
from __future__ import annotations

import ipaddress
import json
import secrets
import time

import pytest

from homelab import REPO, WEB6_ADDR, WEB_ADDR
from homelab.dns import PUBLIC, UPSTREAM6
from homelab.routing import wait_until

RA_PROBE = REPO / "tests" / "homelab" / "ra_probe.py"


@pytest.fixture(scope="module")
def home():
    from conftest import emulated_home
    # names no components: everything the image runs
    yield from emulated_home()


@pytest.fixture
def lab(home):
    return home.dns


def join(home, name, permit=False):
    dev = home.add_device(name)
    dev.start_udhcpc(extra=("-O", "114"))       # asks for the captive portal option too
    dev.wait_for_ipv4(30)
    wait_until(dev.ipv6_global, 30, f"{name}'s IPv6 address (SLAAC in its /64)")
    if permit:
        assert home.homework("permit", dev.mac).returncode == 0
    return dev


def router6(dev) -> str:
    addr = ipaddress.IPv6Address(dev.ipv6_global()[0])
    return str(ipaddress.IPv6Network((int(addr) >> 64 << 64, 64)).network_address + 1)


def curl(dev, url: str, *args: str, timeout: int = 5) -> tuple[int, str]:
    """(HTTP status or 0, body), names resolved through the device's own DNS server."""
    resolv = dev.dir / "resolv.conf"
    inner = (f"mount --bind '{resolv}' /etc/resolv.conf && exec curl -sk -m {timeout} {' '.join(args)} "
             f"-A 'Mozilla/5.0 (homelab)' -o - -w '\\n%{{http_code}}' '{url}'")
    res = dev.run(["unshare", "-m", "sh", "-c", inner], check=False, timeout=timeout + 10)
    body, _, code = res.stdout.rpartition("\n")
    return (int(code) if code.isdigit() else 0), body


def page_says(dev, text: str, url: str = "http://example.com/", *args: str) -> bool:
    code, body = curl(dev, url, *args)
    return code == 200 and text in body


def unique(prefix: str = "t") -> str:
    return f"{prefix}{secrets.token_hex(5)}.new.test"


def dns_stays_home(lab, dev) -> None:
    """Every name is the router over both families, from whatever resolver the device
    asks, and no query leaves the home (the internet's resolver never sees it)."""
    gw, r6 = dev.default_gateway(), router6(dev)
    names = []
    for server in (gw, PUBLIC, r6, UPSTREAM6):
        name = unique()
        names.append(name)
        assert lab.dig(dev, name, "A", server=server) == ("NOERROR", [gw]), server
        assert lab.dig(dev, name, "AAAA", server=server) == ("NOERROR", [r6]), server
        assert lab.dig(dev, name, "TXT", server=server) == ("NOERROR", []), server      # no tunnel
    for name in names:
        assert not lab.upstream_saw(name), f"{name} went upstream"


def the_page(dev, text: str) -> None:
    """Its page, whatever it asks for: any name, both families, HTTP and HTTPS."""
    r6 = router6(dev)
    assert wait_until(lambda: page_says(dev, text), 20, f"the page says {text!r}")
    assert page_says(dev, text, "http://example.com/some/page?x=1", "-6")
    assert page_says(dev, text, f"http://[{r6}]/generate_204")
    assert page_says(dev, text, "https://example.com/", "-4")
    assert page_says(dev, text, "https://www.school.test/", "-6")
    assert page_says(dev, text, f"http://{WEB_ADDR}/") is False        # an address, not a name: nothing


def captive_api(dev, family: str = "-4") -> dict:
    host = dev.default_gateway() if family == "-4" else f"[{router6(dev)}]"
    code, body = curl(dev, f"https://{host}/ws.v1/captive-portal", family)
    assert code == 200, body
    return json.loads(body)


def test_a_pending_device_even_with_a_hard_coded_resolver_is_told_it_waits(home, lab):
    dev = join(home, "guest")
    gw = dev.default_gateway()
    # DHCP told it where the captive portal API is (option 114, RFC 8910)
    lease = dev.lease()
    assert bytes.fromhex(lease.env["opt114"]).decode() == f"https://{gw}/ws.v1/captive-portal"
    # and so does its router advertisement (option 37)
    out = dev.run(["/usr/bin/python3", str(RA_PROBE), "eth0", "10"], timeout=20).stdout
    assert json.loads(out)["37"] == [f"https://[{router6(dev)}]/ws.v1/captive-portal"]
    dns_stays_home(lab, dev)
    the_page(dev, "Waiting for approval on the Guest Board")
    for family in ("-4", "-6"):
        assert captive_api(dev, family) == {"captive": True, "user-portal-url": (
            f"https://{gw}/" if family == "-4" else f"https://[{router6(dev)}]/"), "can-extend-session": False}


def test_a_denied_device_is_told_it_is_not_allowed(home, lab):
    dev = join(home, "stranger")
    assert home.homework("deny", dev.mac).returncode == 0
    the_page(dev, "Not allowed on this network")
    dns_stays_home(lab, dev)


def test_a_paused_device_is_told_until_when_and_has_no_dns_tunnel(home, lab):
    dev = join(home, "tablet", permit=True)
    # let out: real answers, from upstream, over both families
    name = unique("out")
    assert wait_until(lambda: lab.dig(dev, name, "A", server=PUBLIC) == ("NOERROR", ["203.0.113.77"]), 20,
                      "a permitted device's own resolver works")
    assert lab.upstream_saw(name)
    assert wait_until(lambda: curl(dev, f"http://{WEB_ADDR}/")[0] == 200, 20, "it reaches the internet")
    paused = json.loads(home.homework("--json", "pause", dev.mac, "--minutes", "90", check=True).stdout)
    until = time.strftime("%H:%M", time.localtime(paused["paused_until"]))
    the_page(dev, f"Paused by the household until {until}")
    dns_stays_home(lab, dev)
    assert curl(dev, f"http://[{WEB6_ADDR}]/", timeout=3)[0] == 0      # nothing out, by address either
    api = captive_api(dev, "-6")
    assert api["captive"] is True and 90 * 60 - 120 < api["seconds-remaining"] <= 90 * 60
    home.homework("resume", dev.mac, check=True)
    assert wait_until(lambda: curl(dev, f"http://{WEB_ADDR}/")[0] == 200, 20, "back out after resume")
    assert captive_api(dev)["captive"] is False              # the board's server answers it now
    name = unique("back")
    assert lab.dig(dev, name, "A", server=PUBLIC) == ("NOERROR", ["203.0.113.77"]) and lab.upstream_saw(name)


def test_bedtime_is_told_with_its_end(home, lab):
    dev = join(home, "kids-laptop", permit=True)
    now = time.time()
    start = time.strftime("%H:%M", time.localtime(now - 60))
    end_at = now + 3 * 3600
    end = time.strftime("%H:%M", time.localtime(end_at))
    day = time.strftime("%a", time.localtime(now - 60)).lower()
    home.homework("schedule", "add", "--mac", dev.mac, "--days", day, "--from", start, "--to", end, check=True)
    the_page(dev, f"Bedtime: the internet is back at {end}")
    dns_stays_home(lab, dev)


def test_an_allowance_used_up_is_told(home, lab):
    dev = join(home, "console", permit=True)
    home.homework("usage-limit", dev.mac, "3M", "day", "block", check=True)
    assert wait_until(lambda: curl(dev, f"http://{WEB_ADDR}/")[0] == 200, 20, "it reaches the internet")
    dev.run(["curl", "-s", "-o", "/dev/null", "-m", "30", f"http://{WEB_ADDR}/download/8M"], check=False, timeout=40)
    the_page(dev, "Today's allowance is used up")
    code, body = curl(dev, "http://example.com/")
    assert "comes back at midnight" in body
    dns_stays_home(lab, dev)
