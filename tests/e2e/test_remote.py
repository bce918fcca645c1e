"""Remote access over WireGuard end to end: real OVS, the real controller with the dns,
schedules and remote components, homework-dnsd and dnsmasq, lighttpd with the ws.v1 API;
the router's WireGuard is Debian's wireguard-go (this kernel has no module), and the
device away from home is a wireguard-go client in the emulated internet, set up from the
file the router made. It becomes a pending device, shown with where it connects from; it
reaches only its gateway and gets the waiting page's answers until let in; then it
resolves names with its own DNS rules (a blocked name stays blocked through the tunnel),
reaches a device at home over IPv4 and IPv6, is cut off by a pause, and is gone with its
keys once forgotten."""
from __future__ import annotations

import re

import pytest

from homelab import LAN6_SITE, ROUTER_WAN_ADDR
from homelab.dns import BLOCKED_WEB, WEB
from homelab.reach import hello, serve_hello
from homelab.routing import wait_until
from homelab.web import api
from homelab.wgclient import WgClient


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "schedules", "remote"),
                           {"ipv6": {"enabled": True, "prefix": LAN6_SITE}, "remote": {"check_interval": 1}})


def dig(client: WgClient, server: str, name: str, qtype: str = "A") -> tuple[str, list[str]]:
    out = client.run(["dig", f"@{server}", name, qtype, "+noall", "+comments", "+answer", "+time=2", "+tries=2"],
                     check=False).stdout
    m = re.search(r"status: (\w+)", out)
    answers = [line.split()[-1] for line in out.splitlines() if line and not line.startswith(";")
               and len(line.split()) >= 5]
    return (m.group(1) if m else "TIMEOUT"), answers


def test_a_device_away_from_home_is_a_household_device(lab):
    home = lab.home
    nas = lab.join("nas")
    serve_hello(nas.popen, "nas", 8080)
    wait_until(lambda: nas.ipv6_global(), 15, "the nas has its IPv6 address")

    # the household adds it on the board: the router makes its keys and its configuration
    r = api(home.web, "POST", "remote", json={"name": "Dad's phone", "owner": "Dad"}, timeout=60)
    assert r.status_code == 200, r.text
    view = r.json()
    mac, conf = view["mac"], view["config"]
    assert view["state"] == "pending" and view["address"] and view["ipv6_prefix"]
    assert view["qr_svg"].lstrip().startswith("<?xml") and "<svg" in view["qr_svg"]
    assert f"Endpoint = {ROUTER_WAN_ADDR}:51820" in conf and "AllowedIPs = 0.0.0.0/0, ::/0" in conf
    gateway = view["address"].rsplit(".", 1)[0] + "." + str(int(view["address"].rsplit(".", 1)[1]) - 1)
    assert f"DNS = {gateway}, " in conf
    f = api(home.web, "GET", f"remote/{mac}/config")
    assert f.status_code == 200 and f.text == conf
    assert f.headers["Content-Disposition"] == 'attachment; filename="homework-Dad-s-phone.conf"'
    assert api(home.web, "GET", f"remote/{mac}/config", role="read-only").status_code == 403   # holds its key
    qr = api(home.web, "GET", f"remote/{mac}/qr.svg")
    assert qr.status_code == 200 and qr.headers["Content-Type"] == "image/svg+xml"
    devices = {d["mac"]: d for d in api(home.web, "GET", "devices").json()}
    assert devices[mac]["state"] == "pending" and devices[mac]["name"] == "Dad's phone"

    client = WgClient(home.internet_ns, f"{home.run_id}wc", home.dir / "wgclient")
    try:
        client.up(conf, ["10.2.0.0/16", LAN6_SITE])
        wait_until(lambda: client.handshake() > 0, 15, "the tunnel's first handshake")
        # the board shows where it connects from: the emulated internet's address
        wait_until(lambda: api(home.web, "GET", f"devices/{mac}").json()["away"]["connected"], 10,
                   "connected on the board")
        away = api(home.web, "GET", f"devices/{mac}").json()["away"]
        assert away["endpoint"].startswith("198.51.100.1:")

        # pending: its gateway answers (the waiting page's name answers), nothing else
        status, answers = dig(client, gateway, "example.com")
        assert status == "NOERROR" and answers == [gateway]
        assert hello(client.run, nas.ipv4()[0], 8080) == ""

        # let in on the board: real answers, its DNS rules, the home
        assert api(home.web, "POST", f"permit/{mac}").status_code == 200
        wait_until(lambda: dig(client, gateway, "example.com") == ("NOERROR", [WEB]), 15, "real answers")
        wait_until(lambda: hello(client.run, nas.ipv4()[0], 8080) == "nas", 15, "the nas over IPv4")
        assert hello(client.run, nas.ipv6_global()[0], 8080) == "nas"          # and over IPv6
        assert dig(client, gateway, "blocked.test") == ("NOERROR", [BLOCKED_WEB])
        assert api(home.web, "POST", f"deny-dns/{mac}/blocked.test").status_code == 200
        assert dig(client, gateway, "blocked.test")[0] == "NXDOMAIN"            # blocked through the tunnel
        ipv6_dns = view["ipv6_prefix"].split("/")[0] + "1"
        assert dig(client, ipv6_dns, "www.blocked.test")[0] == "NXDOMAIN"       # and over IPv6
        assert dig(client, gateway, "example.com") == ("NOERROR", [WEB])       # the rest still resolves

        # a pause cuts it as any device
        assert api(home.web, "POST", f"pause/{mac}", json={"minutes": 30}).status_code == 200
        wait_until(lambda: hello(client.run, nas.ipv4()[0], 8080) == "", 10, "paused: cut off")
        assert api(home.web, "POST", f"resume/{mac}").status_code == 200
        wait_until(lambda: hello(client.run, nas.ipv4()[0], 8080) == "nas", 10, "resumed")

        # forgotten: gone with its keys; the tunnel no longer carries anything
        assert api(home.web, "POST", f"forget/{mac}").status_code == 200
        wait_until(lambda: api(home.web, "GET", "remote").json()["devices"] == [], 10, "removed")
        wait_until(lambda: hello(client.run, nas.ipv4()[0], 8080) == "", 10, "its tunnel carries nothing")
    finally:
        client.close()


def test_the_wireguard_port_is_the_only_new_opening(lab):
    status = api(lab.home.web, "GET", "remote").json()
    assert status["running"] and status["backend"] == "wireguard-go" and status["listen_port"] == 51820
    chain = lab.home.router(["nft", "list", "chain", "inet", "homework", "remote_input"]).stdout
    assert re.findall(r"udp dport (\d+) accept", chain) == ["51820"]
