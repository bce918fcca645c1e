"""Encrypted DNS to the router, end to end: from device namespaces, real kdig asks the
router over TLS (853, homework-dnsd's own TLS) and over HTTPS (the Guest Board's lighttpd,
/dns-query, SCGI to dnsd), over IPv4 and IPv6, and gets the answers port 53 gives: the
device's own rules (a denied name stays denied), the waiting page's address for a pending
device, the query log. `_dns.resolver.arpa SVCB` (DDR) names both endpoints with the
device's own gateway; the router's name is that gateway; a restricted device reaches the
router's DoT while its DoT to the internet stays dropped."""
from __future__ import annotations

import ipaddress
import json
import re

import pytest

from homelab.dns import PUBLIC, ROUTER_NAME, WEB
from homelab.routing import wait_until


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    from homelab import LAN6_SITE
    yield from dns_web_lab(("dhcp", "routing", "dns"), extra={"ipv6": {"enabled": True, "prefix": LAN6_SITE}})


def kdig(dev, server: str, name: str, how: str, qtype: str = "A", extra=()) -> tuple[str, list[str]]:
    """(status, answers) as kdig in the device's namespace sees them: how = tls | https | udp."""
    opts = {"tls": ["+tls"], "https": ["+https"], "udp": []}[how]
    out = dev.run(["kdig", f"@{server}", name, qtype, *opts, *extra, "+time=5", "+retry=1"], check=False,
                  timeout=30)
    status = re.search(r"opcode: \w+; status: (\w+)", out.stdout)
    answers = [line.split()[-1] for line in out.stdout.split(";; ANSWER SECTION:")[-1].splitlines()
               if line and not line.startswith(";") and len(line.split()) >= 5] if status else []
    return (status.group(1) if status else f"FAILED {out.stdout[-300:]} {out.stderr[-300:]}"), answers


def router6(lab, dev) -> str:
    [view] = [d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == dev.mac]
    wait_until(dev.ipv6_global, 15, f"{dev.name}: a SLAAC address")
    return str(ipaddress.IPv6Network(view["ipv6_prefix"]).network_address + 1)


def dnsd(lab) -> dict:
    return json.loads(lab.homework("--json", "dns-stats"))["dnsd"]


@pytest.mark.parametrize("how", ["tls", "https"])
def test_a_device_gets_its_own_rules_over_tls_and_https(lab, how):
    kid, other = lab.join(f"kid-{how}"), lab.join(f"other-{how}")
    lab.homework("deny-dns", kid.mac, "example.com")
    before = dnsd(lab)
    for family in (4, 6):
        gw, gw_other = ((kid.default_gateway(), other.default_gateway()) if family == 4 else
                        (router6(lab, kid), router6(lab, other)))
        assert kdig(kid, gw, "example.com", how)[0] == "NXDOMAIN", lab.debug()      # denied stays denied
        assert kdig(kid, gw, "www.example.com", how, "AAAA")[0] == "NXDOMAIN"
        assert kdig(kid, gw, "school.test", how)[0] == "NOERROR"
        assert kdig(other, gw_other, "example.com", how) == ("NOERROR", [WEB])     # no rule for this one
    after = dnsd(lab)
    counter = "dot_queries" if how == "tls" else "doh_queries"
    assert after[counter] - before[counter] >= 8, after
    assert after["blocked"] - before["blocked"] >= 4


def test_a_pending_device_gets_the_waiting_page_over_tls_too(lab):
    dev = lab.join("pending", permit=False)
    gw = dev.default_gateway()
    assert kdig(dev, gw, "example.com", "tls") == ("NOERROR", [gw])
    assert kdig(dev, router6(lab, dev), "example.com", "tls") == ("NOERROR", [gw])


def test_ddr_names_the_routers_encrypted_dns_with_the_devices_gateway(lab):
    dev = lab.join("phone")
    gw, gw6 = dev.default_gateway(), router6(lab, dev)
    out = dev.run(["dig", f"@{gw}", "_dns.resolver.arpa", "SVCB", "+short"], check=False, timeout=20).stdout
    lines = sorted(out.strip().splitlines())
    assert len(lines) == 2, out
    assert lines[0].startswith(f'1 {ROUTER_NAME}. alpn="dot" port=853 ipv4hint={gw} ipv6hint={gw6}'), out
    assert lines[1].startswith(f'2 {ROUTER_NAME}. alpn="h2" port=443 ipv4hint={gw} ipv6hint={gw6}'), out
    assert 'dohpath="/dns-query{?dns}"' in lines[1] or "key7=" in lines[1], out
    # the same over IPv6, and the router's name is the device's own gateway
    out6 = dev.run(["dig", f"@{gw6}", "_dns.resolver.arpa", "SVCB", "+short"], check=False, timeout=20).stdout
    assert sorted(out6.strip().splitlines()) == lines
    assert lab.dig(dev, ROUTER_NAME) == ("NOERROR", [gw])
    assert lab.dig(dev, ROUTER_NAME, "AAAA") == ("NOERROR", [gw6])


def test_the_routers_certificate_is_checked_by_name_where_a_device_trusts_its_authority(lab):
    dev = lab.join("strict")
    ca = lab.ca.path
    gw = dev.default_gateway()
    strict = (f"+tls-ca={ca}", f"+tls-hostname={ROUTER_NAME}")
    assert kdig(dev, gw, "example.com", "tls", extra=strict) == ("NOERROR", [WEB])
    assert kdig(dev, gw, "example.com", "tls", extra=(f"+tls-ca={ca}", "+tls-hostname=someone.else"))[0] \
        .startswith("FAILED"), "a name the certificate does not carry is refused"


def tcp_open(dev, addr, port, timeout=2):
    res = dev.run(["/usr/bin/python3", "-c", "import socket; socket.create_connection"
                   f"(('{addr}', {port}), timeout={timeout}); print('open')"], check=False, timeout=timeout + 5)
    return "open" in res.stdout


def test_a_restricted_device_reaches_the_routers_dot_but_not_the_internets(lab):
    dev = lab.join("restricted")
    lab.homework("deny-dns", dev.mac, "games.test")
    wait_until(lambda: not tcp_open(dev, PUBLIC, 853, timeout=1), 5, "its DoT to the internet is dropped")
    assert kdig(dev, dev.default_gateway(), "school.test", "tls")[0] == "NOERROR"
    assert kdig(dev, dev.default_gateway(), "games.test", "tls")[0] == "NXDOMAIN"
