"""End to end: a satellite plugged into any LAN port, listed nowhere.

The box is a namespace with its own ovsdb-server and ovs-vswitchd, cabled to an ordinary
port of the router's bridge. Its own stack takes a lease there like a device (pending),
and its own joining code (homework.satellite_agent.join) asks to pair at its gateway
through the captive page's server: the one API path a pending device may use. The board
shows a pending access point with the port the router saw it on; another device asking
under the same datapath id from another port is refused. Nothing changes on
that port until the household permits it: then the controller restarts, the port
becomes the satellite's cable (demux bridge, management link at fe80::1), the same join
steps fetch the certificate there and the switch connects over TLS, and a device behind
it gets a lease and, once permitted, the internet. The cable survives a controller
restart; forgetting the satellite gives the port back to the router's bridge. Real OVS,
lighttpd (the Guest Board's and the captive page's), homework-dnsd, udhcpc, openssl, curl."""
from __future__ import annotations

import json
import subprocess

import pytest

from homelab import WEB_ADDR, CommandError, Home, sh
from homelab.routing import pending_device, wait_until
from homelab.satellite import Satellite
from homelab.web import api

BOX = (1, 0xC1)


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    # no [satellites] switches at all: TLS on every address (fe80::1 on a found cable)
    yield from dns_web_lab(("dhcp", "routing", "dns"), extra={"satellites": {"tls_listen": "::"}})


@pytest.fixture(scope="module")
def home(lab) -> Home:
    return lab.home


@pytest.fixture(scope="module")
def box(home: Home):
    sat = Satellite(home, *BOX, own_ovs=True, lan=True).start(controller=None)
    try:
        yield sat
    finally:
        sat.stop()


def satellites(home: Home) -> dict:
    r = api(home.web, "GET", "satellites", role="read-only")
    assert r.status_code == 200, r.text
    return {s["dpid"]: s for s in r.json()}


def bridge_of(home: Home, port: str) -> str:
    """The bridge the port is on ('' on none: it never is, as it moves in one transaction)."""
    try:
        return home.vsctl("port-to-br", port).strip()
    except CommandError as exc:
        return "" if "no port named" in str(exc) else f"error: {exc}"


def restarted(home: Home, starts: int) -> bool:
    """The controller has started again since `starts` starts and its API answers."""
    if home.controller_log().count("controller listening on") <= starts:
        return False
    try:
        return api(home.web, "GET", "satellites", role="read-only", timeout=3).status_code == 200
    except Exception:       # noqa: BLE001 - not listening yet
        return False


def lease_refused(dev) -> bool:
    res = subprocess.run(["ip", "netns", "exec", dev.ns, "udhcpc", "-f", "-q", "-n", "-i", "eth0",
                          "-s", "/bin/true", "-t", "4", "-T", "1"], capture_output=True, text=True, timeout=30)
    return res.returncode != 0


def test_a_satellite_on_a_lan_port_asks_as_a_pending_device_and_its_port_becomes_its_cable_once_permitted(
        home: Home, box: Satellite):
    dpid = f"{BOX[1]:016x}"
    gateway = box.lease()
    mac = box.run(["cat", f"/sys/class/net/{box.bridge}/address"]).stdout.strip()
    device = {d["mac"]: d for d in api(home.web, "GET", "devices", role="read-only").json()}.get(mac)
    assert device is not None and device["state"] == "pending", device
    # a pending device reaches no other API path through the captive page's server
    other = box.run(["curl", "-s", "-m", "5", f"http://{gateway}/ws.v1/devices"], check=False).stdout
    assert not other.lstrip().startswith(("[", "{")), other[:200]
    # its devices get nothing before it is permitted: its switch forwards nothing
    dev = home.add_device(name="behind-found", switch=box)
    assert lease_refused(dev), "a device behind an unpaired satellite got a lease"

    asked = box.ask()
    assert asked["dpid"] == dpid and len(asked["code"]) == 6
    sat = satellites(home)[dpid]
    assert (sat["state"], sat["found"], sat["router_port"], sat["cabled"]) == (
        "pending", True, box.router_port, False), sat
    board = {v["mac"]: v for v in api(home.web, "GET", "devices", role="read-only").json()}
    assert f"plugged into {box.router_port}" in board[f"ap-{dpid}"]["label"], board[f"ap-{dpid}"]
    assert bridge_of(home, box.router_port) == "br0", "the port changed before the household decided"
    code, body = box.poll()
    assert code == 3 and body["state"] == "pending", body
    # a device on another port asking under the box's datapath id with a key of its own is
    # refused (409, naming the code to compare): the request stays the box's, and so does
    # the code on the board
    intruder = pending_device(home, "intruder-found")
    key, req = home.dir / "intruder-found.key", home.dir / "intruder-found.csr"
    sh(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(key), "-out", str(req), "-subj", "/CN=x"])
    out = intruder.run(["curl", "-s", "-m", "10", "-o", "-", "-w", "\n%{http_code}", "-H",
                        "Content-Type: application/json", "--data-binary",
                        json.dumps({"dpid": dpid, "csr": req.read_text(), "uplink": "eth0"}),
                        f"http://{intruder.default_gateway()}/ws.v1/satellites/pair"], check=False, timeout=30).stdout
    text, _, status = out.rpartition("\n")
    assert status == "409" and asked["code"] in text, (status, text)
    assert satellites(home)[dpid]["code"] == asked["code"] and box.poll()[0] == 3

    # the household permits it: the controller restarts and takes the port for its cable
    starts = home.controller_log().count("controller listening on")
    r = api(home.web, "POST", f"satellites/{dpid}/permit")
    assert r.status_code == 200 and r.json()["state"] == "permitted" and r.json()["restarting"], r.text
    wait_until(lambda: restarted(home, starts), 60, "the controller did not come back after the permit")
    wait_until(lambda: bridge_of(home, box.router_port) == "hwsat1", 20,
               "the permitted satellite's port did not become its cable")

    def permitted() -> bool:
        code, body = box.poll()         # the management link now (fe80::1), or its gateway until then
        return code == 0 and body["state"] == "permitted"
    wait_until(permitted, 30, "the satellite never learned it was permitted")
    wait_until(box.programmed, 30, "the permitted satellite got no flows over TLS")
    assert box.controller_target().startswith("ssl:[fe80::1%"), box.controller_target()
    sat = satellites(home)[dpid]
    assert (sat["index"], sat["cabled"], sat["router_port"]) == (1, True, box.router_port), sat

    dev.start_udhcpc()
    dev.wait_for_ipv4(25)
    assert dev.ipv4()[0].startswith("10."), dev.ipv4()
    assert not dev.ping(WEB_ADDR, timeout=1), "a pending device behind the satellite reached the internet"
    assert home.homework("permit", dev.mac).returncode == 0
    wait_until(lambda: dev.ping(WEB_ADDR, timeout=1), 15, "the device behind the found satellite has no internet")

    # its cable is the household's decision, kept in state.db: it survives a restart
    home.stop_controller()
    home.start_controller()
    wait_until(lambda: box.programmed() and box.connected(), 40, "the satellite did not reconnect after a restart")
    assert bridge_of(home, box.router_port) == "hwsat1"
    wait_until(lambda: dev.ping(WEB_ADDR, timeout=1), 20, "the device lost the internet over a restart")
    # the router's bring-up again (a reboot's), with that port among the LAN's: it stays the cable
    home.router_net("up", LAN_PORTS=box.router_port)
    assert bridge_of(home, box.router_port) == "hwsat1"
    wait_until(lambda: dev.ping(WEB_ADDR, timeout=1), 20, "the device lost the internet over the bring-up")


def test_forgetting_a_found_satellite_gives_its_port_back_to_the_router(home: Home, box: Satellite):
    dpid = f"{BOX[1]:016x}"
    assert satellites(home)[dpid]["cabled"], "needs the permitted satellite of the test before"
    starts = home.controller_log().count("controller listening on")
    r = api(home.web, "POST", f"satellites/{dpid}/forget")
    assert r.status_code == 200 and r.json()["restarting"], r.text
    wait_until(lambda: restarted(home, starts), 60, "the controller did not come back after the forget")
    assert bridge_of(home, box.router_port) == "br0"
    assert "hwsat1" not in home.vsctl("list-br").split(), "the forgotten satellite's demux bridge stayed"
    assert dpid not in satellites(home)
    wait_until(lambda: not box.connected(), 20, "the forgotten satellite is still connected")
    # back on a LAN port its stack is a device again: it may ask once more
    box.udhcpc.terminate()
    box.udhcpc.wait(5)
    box.run(["ip", "-4", "addr", "flush", "dev", box.bridge])
    box.lease(30)
    assert box.ask()["dpid"] == dpid
    sat = satellites(home)[dpid]
    assert (sat["state"], sat["router_port"], sat["cabled"]) == ("pending", box.router_port, False), sat


def test_one_pending_request_per_port_and_none_from_outside_the_lan(home: Home, box: Satellite):
    """A box asking again and again under new datapath ids replaces its own request (the
    board never fills with access points); a request that does not come from a device on
    a LAN port (the router itself) names no port, so an unlisted datapath is refused."""
    before = satellites(home)
    gateway = box.run(["ip", "-4", "route", "show", "default"]).stdout.split()[2]
    csr = box.dir / "satellite-req.pem"
    for fake in ("00000000000000d1", "00000000000000d2"):
        body = json.dumps({"dpid": fake, "csr": csr.read_text(), "uplink": box.uplink})
        out = box.run(["curl", "-s", "-m", "10", "-H", "Content-Type: application/json", "--data-binary", body,
                       f"http://{gateway}/ws.v1/satellites/pair"]).stdout
        assert json.loads(out)["dpid"] == fake, out
    now = satellites(home)
    from_box = [s for s in now.values() if s["router_port"] == box.router_port and s["state"] == "pending"]
    assert [s["dpid"] for s in from_box] == ["00000000000000d2"], now
    assert len(now) == len(before), (before, now)
    r = api(home.web, "POST", "satellites/pair", role=None, json={"dpid": "00000000000000d3", "csr": csr.read_text()})
    assert r.status_code == 404 and "LAN port" in r.json()["error"], r.text
    res = home.homework("--json", "satellite-pair", "00000000000000d3", "--csr", str(csr))
    assert res.returncode != 0 and "not in [satellites] switches" in (res.stderr + res.stdout)
    assert "00000000000000d3" not in satellites(home)
