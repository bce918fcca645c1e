"""Encrypted upstreams end to end: the emulated internet's resolver also speaks DNS over
TLS with a certificate from the lab's test CA (unbound); the household chooses it on the
router (API, CLI), and a device's names are then looked up over TLS: the router's WAN
carries no port-53 packet (tcpdump on wan0), DNSSEC is still validated, and the status
says so. A certificate for another name is refused with the reason, and the household's
fallback decides what happens meanwhile: nothing (SERVFAIL) or plain DNS. IPv4 and IPv6."""
from __future__ import annotations

import json

import pytest

from homelab import WAN_IF
from homelab.dns import DOT_NAME, DOT_UPSTREAM, DOT_UPSTREAM6, NEW_ADDR, NEW_DOMAIN, UPSTREAM
from homelab.dnssec import FORGED, SIGNED_WWW
from homelab.sniff import Sniffer
from homelab.web import api


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    for lab in dns_web_lab(("dhcp", "routing", "dns")):
        lab.start_dot_upstream()
        yield lab


@pytest.fixture(autouse=True)
def back_to_the_isp(lab):
    yield
    lab.homework("dns-upstream", "isp")


def choose(lab, servers, fallback="none"):
    r = api(lab.home.web, "POST", "dns/upstream", json={"provider": "custom", "servers": servers, "fallback": fallback})
    assert r.status_code == 200, r.text
    return r.json()


_names = iter(range(10**9))


def new_name(tag: str) -> str:
    return f"{tag}{next(_names)}.{NEW_DOMAIN}"


def test_names_go_over_tls_and_no_plain_dns_leaves_the_wan(lab):
    dev = lab.join("laptop")
    assert choose(lab, [f"{DOT_UPSTREAM}#{DOT_NAME}"])["state"] == "checking"
    view = lab.upstream_status("encrypted")
    assert view["state"] == "encrypted" and view["servers_status"][0]["reachable"], view
    assert "nobody on the way can read" in view["message"]
    with Sniffer(lab.home.router_ns, WAN_IF, "port 53 or port 853") as cap:
        for _i in range(5):
            assert lab.dig(dev, new_name("tls")) == ("NOERROR", [NEW_ADDR]), lab.debug()
        assert lab.dig(dev, SIGNED_WWW)[0] == "NOERROR"
        assert lab.dig(dev, FORGED)[0] == "SERVFAIL", "validated as before, over TLS"
    assert cap.port(853), f"the lookups went to the upstream's port 853: {cap.lines[:5]}"
    assert not cap.port(53), f"plain DNS left the WAN: {cap.port(53)[:5]}"
    opened = [line for line in cap.port(853) if "Flags [S]," in line]
    assert len(opened) <= 2, f"7 lookups, {len(opened)} new TLS connections: they are reused"
    # the CLI shows the same status
    assert "nobody on the way can read" in lab.homework("dns-upstream")


def test_over_ipv6_to_the_upstream_too(lab):
    dev = lab.join("phone")
    choose(lab, [f"[{DOT_UPSTREAM6}]#{DOT_NAME}"])
    assert lab.upstream_status("encrypted")["state"] == "encrypted"
    with Sniffer(lab.home.router_ns, WAN_IF, "port 53 or port 853") as cap:
        assert lab.dig(dev, new_name("six")) == ("NOERROR", [NEW_ADDR]), lab.debug()
    assert any(DOT_UPSTREAM6 in line for line in cap.port(853)) and not cap.port(53)


def test_a_certificate_for_another_name_is_refused_and_the_fallback_decides(lab):
    dev = lab.join("tablet")
    choose(lab, [f"{DOT_UPSTREAM}#wrong.{DOT_NAME}"], fallback="none")
    view = lab.upstream_status("unreachable")
    assert view["state"] == "unreachable", view
    assert f"not for wrong.{DOT_NAME}" in view["message"] and "Names do not resolve" in view["message"]
    with Sniffer(lab.home.router_ns, WAN_IF, "port 53") as cap:
        assert lab.dig(dev, new_name("none"), timeout=5, tries=1)[0] in ("SERVFAIL", "TIMEOUT")
    assert not cap.lines, "with no fallback, nothing goes out in plain DNS"

    choose(lab, [f"{DOT_UPSTREAM}#wrong.{DOT_NAME}"], fallback="plain")
    view = lab.upstream_status("fallback")
    assert view["state"] == "fallback" and "in plain DNS until it can" in view["message"], view
    with Sniffer(lab.home.router_ns, WAN_IF, "port 53") as cap:
        assert lab.dig(dev, new_name("plain")) == ("NOERROR", [NEW_ADDR])
    assert any(f"{UPSTREAM}.53" in line for line in cap.lines), "the WAN lease's resolver, in plain DNS"


def test_mending_a_mistyped_name_works_at_once(lab):
    """unbound backs off an upstream whose handshakes failed and keeps that across a
    reload; the household's corrected choice must not wait it out."""
    dev = lab.join("desktop")
    choose(lab, [f"{DOT_UPSTREAM}#wrong.{DOT_NAME}"], fallback="none")
    assert lab.upstream_status("unreachable")["state"] == "unreachable"
    for _i in range(6):      # enough failed handshakes for unbound to put the address on hold
        assert lab.dig(dev, new_name("typo"), timeout=5, tries=1)[0] in ("SERVFAIL", "TIMEOUT")
    choose(lab, [f"{DOT_UPSTREAM}#{DOT_NAME}"], fallback="none")
    assert lab.upstream_status("encrypted")["state"] == "encrypted"
    assert lab.dig(dev, new_name("mended")) == ("NOERROR", [NEW_ADDR]), lab.debug()


def test_a_bad_choice_is_a_400_and_changes_nothing(lab):
    before = json.loads(lab.homework("--json", "dns-upstream"))
    for body, why in (({"provider": "custom", "servers": ["203.0.113.54"]}, "ADDRESS#NAME"),
                      ({"provider": "opendns"}, "provider must be"), ({"fallback": "plain"}, "missing field")):
        r = api(lab.home.web, "POST", "dns/upstream", json=body)
        assert r.status_code == 400 and why in r.json()["error"], r.text
    assert json.loads(lab.homework("--json", "dns-upstream"))["provider"] == before["provider"]
    assert api(lab.home.web, "POST", "dns/upstream", json={"provider": "quad9"}, role="read-only").status_code == 403
