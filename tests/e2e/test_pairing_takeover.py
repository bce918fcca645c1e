"""End to end: a pending device cannot take over a satellite's pairing.

A satellite listed in [satellites] switches asks to pair over its own cable (its joining
code, homework.satellite_agent.join, as the image runs it). A pending device on a LAN port
then asks under the same datapath id with a key of its own, through the captive page's
server (the one API path a pending device may call), over IPv4 and over IPv6. Before, the
device's request replaced the satellite's: a new code on the board, the satellite's
ticket answered 404, and the household's permit signed the device's key. Now the device
gets 409, the board keeps the satellite's code, the satellite's ticket still works, a
permit naming another code signs nothing, and the certificate the household's permit
makes is for the satellite's own key. Real OVS (the satellite in its own namespace with
its own ovs-vswitchd), lighttpd (the board's and the captive page's), homework-dnsd,
openssl, curl."""
from __future__ import annotations

import ipaddress
import json

import pytest

from homelab import LAN6_SITE, Home, sh
from homelab.routing import pending_device, wait_until
from homelab.satellite import Satellite
from homelab.web import api

LISTED = (3, 0xA3)


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns"), extra={
        "satellites": {"switches": [Satellite.spec_for(*LISTED)], "tls_listen": "::"},
        "ipv6": {"enabled": True, "prefix": LAN6_SITE}})


@pytest.fixture(scope="module")
def home(lab) -> Home:
    return lab.home


@pytest.fixture
def satellite(home: Home):
    sat = Satellite(home, *LISTED, own_ovs=True).start(controller=None)
    yield sat
    sat.stop()
    api(home.web, "POST", f"satellites/{LISTED[1]:016x}/forget")


def public_key(pem: str, kind: str) -> str:
    """The public key of a certificate or a certificate request (openssl), as PEM."""
    return sh(["openssl", kind, "-noout", "-pubkey"], input=pem).stdout


def ask_as(dev, url: str, dpid: str, csr: str) -> tuple[str, str]:
    """(HTTP status, body) of a pairing request from the device, plain HTTP to `url`."""
    out = dev.run(["curl", "-s", "-m", "10", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
                   "-H", "Content-Type: application/json", "-d", json.dumps({"dpid": dpid, "csr": csr}),
                   f"{url}/ws.v1/satellites/pair"], check=False, timeout=30).stdout
    text, _, code = out.rpartition("\n")
    return code, text


def test_a_pending_device_cannot_take_over_a_satellites_pairing(lab, home: Home, satellite: Satellite, tmp_path):
    dpid = f"{LISTED[1]:016x}"
    asked = satellite.ask()                     # over its cable, as the image does
    code_shown = asked["code"]
    intruder = pending_device(home, "intruder")
    sh(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(tmp_path / "intruder.key"), "-out", str(tmp_path / "intruder.csr"), "-subj", "/CN=x"])
    csr = (tmp_path / "intruder.csr").read_text()
    # over IPv4, through the captive page's server at its gateway
    status, body = ask_as(intruder, f"http://{intruder.default_gateway()}", dpid, csr)
    assert status == "409" and code_shown in body, (status, body)
    # over IPv6, at the router's ::1 in its /64
    [view] = [d for d in json.loads(home.homework("--json", "devices").stdout) if d["mac"] == intruder.mac]
    wait_until(intruder.ipv6_global, 20, "the intruder's SLAAC address")
    router6 = ipaddress.IPv6Network(view["ipv6_prefix"]).network_address + 1
    status, body = ask_as(intruder, f"http://[{router6}]", dpid, csr)
    assert status == "409" and code_shown in body, (status, body)

    # the board still shows the satellite's code, and its ticket still works
    listed = {s["dpid"]: s for s in api(home.web, "GET", "satellites", role="read-only").json()}
    assert listed[dpid]["code"] == code_shown and listed[dpid]["state"] == "pending", listed[dpid]
    rc, polled = satellite.poll()
    assert rc == 3 and polled["state"] == "pending" and polled["code"] == code_shown, (rc, polled)

    # a permit naming a code the household did not see signs nothing
    r = api(home.web, "POST", f"satellites/{dpid}/permit", json={"code": "000000"})
    assert r.status_code == 409, r.text
    assert satellite.poll()[0] == 3
    # the code it compared: the certificate is for the satellite's own key, never the intruder's
    r = api(home.web, "POST", f"satellites/{dpid}/permit", json={"code": code_shown})
    assert r.status_code == 200 and r.json()["state"] == "permitted", r.text
    rc, polled = satellite.poll()
    assert rc == 0 and polled["state"] == "permitted", polled
    cert = (satellite.dir / "satellite-cert.pem").read_text()
    mine = sh(["openssl", "pkey", "-pubout", "-in", str(satellite.dir / "satellite-key.pem")]).stdout
    assert public_key(cert, "x509") == mine
    assert public_key(cert, "x509") != public_key(csr, "req")
    wait_until(satellite.programmed, 30, "the permitted satellite got no flows over TLS")
    # the router knew the first request for its cable's (homework/callers.py: the neighbour table)
    assert f"pairing request for datapath {dpid} from satellite 1's link" in home.controller_log()
