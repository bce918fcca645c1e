"""End to end: satellite switches under the router's controller.

Two satellite boxes (each its own namespace with its own Open vSwitch, fail_mode=secure,
cabled to a router port by a veth, paired with a certificate and connected over TLS) are
driven by the controller, which gives each port of a satellite its own port on the router's
bridge (a VLAN per satellite port on the cable,
a patch port per VLAN). A device on a satellite then gets what a device on the router
gets, from the same pipeline: its /30, pending isolation, routing. Real OVS, real udhcpc,
real ping."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from conftest import emulated_home
from homelab import REPO, WEB_ADDR, Device, Home
from homelab.routing import gateway, permitted_device, wait_until
from homelab.satellite import RADIO_PORT, Air, Satellite
from homelab.wifi import Supplicant

SATELLITES = ((1, 0xA1), (2, 0xA2))


@pytest.fixture(scope="module")
def home():
    # The satellites' lines in the config are known before they exist (their names); they
    # reach the TLS listener over their management links.
    specs = [Satellite.spec_for(i, dpid) for i, dpid in SATELLITES]
    # radio + satlink: the satellites' agents report what their radios hear (roaming)
    yield from emulated_home({"satellites": {"switches": specs, "tls_listen": "::",
                                             "radio_ports": [RADIO_PORT]},
                              "controller": {"components": ["dhcp", "routing", "radio", "satlink"]}})


@pytest.fixture(scope="module")
def sats(home: Home):
    """Two satellite boxes, each with its own namespace and Open vSwitch, paired (their
    certificates signed by the router) and connected over TLS."""
    started = []
    try:
        for index, dpid in SATELLITES:
            sat = Satellite(home, index, dpid, own_ovs=True).start(controller=None)
            started.append(sat)
            sat.pair()
        for sat in started:
            wait_until(sat.programmed, 30, f"satellite {sat.bridge} got no flows from the controller")
        yield started
    finally:
        for sat in started:
            sat.stop()


def on_satellite(home: Home, sat: Satellite, name: str, permit: bool) -> Device:
    if permit:
        return permitted_device(home, name, switch=sat, lease_timeout=25)
    dev = home.add_device(name=name, switch=sat)
    dev.start_udhcpc()
    dev.wait_for_ipv4(25)
    return dev


def ttl_of_reply(dev: Device, addr: str) -> int | None:
    out = dev.run(["ping", "-n", "-c", "1", "-W", "2", addr], check=False).stdout
    m = re.search(r"ttl=(\d+)", out)
    return int(m.group(1)) if m else None


def test_the_satellites_carry_each_port_alone_to_the_router(home: Home, sats):
    for sat in sats:
        flows = sat.flows()
        # up: a device port's frames only to the uplink (port 250), tagged; down: by tag only;
        # untagged only between its own stack (LOCAL) and the uplink: the management link
        management = [line for line in flows.splitlines() if "cookie=0x901000000000000," in line]
        assert len(management) == 2 and "in_port=LOCAL actions=output:250" in management[0] + management[1]
        assert "in_port=250,vlan_tci=0x0000/0x1fff actions=LOCAL" in management[0] + management[1]
        for line in flows.splitlines():
            if "in_port" not in line or line in management:
                continue
            if "in_port=250" in line:
                assert "dl_vlan=" in line and "pop_vlan" in line, line
            else:
                assert re.search(r"push_vlan:0x8100,set_field:\d+->vlan_vid,output:250$", line.strip()), line
        assert "priority=0 actions=drop" in flows, flows


def test_devices_on_two_satellites_and_the_router_reach_each_other_routed_and_the_internet(home: Home, sats):
    sat1, sat2 = sats
    here = permitted_device(home, "on-router")
    a = on_satellite(home, sat1, "on-sat1", permit=True)
    b = on_satellite(home, sat2, "on-sat2", permit=True)
    addrs = {d.name: d.ipv4()[0] for d in (here, a, b)}
    assert len(set(addrs.values())) == 3, addrs            # a /30 each
    # each satellite port is a port of its own on the router's bridge
    ports = home.vsctl("list-ports", "br0").split()
    assert "hws1p1" in ports and "hws2p1" in ports, ports
    for src, dst in ((a, b), (b, a), (a, here), (here, b)):
        ttl = ttl_of_reply(src, addrs[dst.name])
        # Linux answers with TTL 64; one router hop on the way back
        assert ttl == 63, f"{src.name} -> {dst.name}: reply TTL {ttl} (not routed once, or no reply)"
    assert a.ping(WEB_ADDR) and b.ping(WEB_ADDR), "a satellite device cannot reach the internet"


def test_a_pending_device_on_a_satellite_reaches_no_one_not_even_its_neighbour(home: Home, sats):
    sat1 = sats[0]
    neighbour = on_satellite(home, sat1, "permitted-n", permit=True)
    pending = on_satellite(home, sat1, "pending-p", permit=False)
    n_addr, p_addr = neighbour.ipv4()[0], pending.ipv4()[0]
    assert pending.ping(gateway(pending)), "a pending device may still reach its gateway (the Guest Board)"
    assert not pending.ping(WEB_ADDR), "a pending device on a satellite reached the internet"
    assert not pending.ping(n_addr), "a pending device reached its neighbour on the same satellite"
    assert not neighbour.ping(p_addr), "a permitted device reached a pending one"
    # Even addressed straight to the neighbour's MAC (on-link), nothing crosses the satellite.
    pending.run(["ip", "route", "replace", n_addr, "dev", "eth0"])
    pending.run(["ip", "neigh", "replace", n_addr, "lladdr", neighbour.mac, "dev", "eth0", "nud", "permanent"])
    assert not pending.ping(n_addr), "a frame went from one satellite port to another"


def test_a_satellite_that_loses_the_controller_keeps_its_devices_and_admits_no_new_port(home: Home, sats):
    sat2 = sats[1]
    resident = on_satellite(home, sat2, "resident", permit=True)
    before = sat2.flows().count("cookie=0x9")
    # The controller becomes unreachable (the satellite keeps trying a port nobody serves).
    target = sat2.controller_target()
    sat2.set_controller(f"ssl:{sat2.mgmt(9)}")
    try:
        wait_until(lambda: not sat2.connected(), 10, "the satellite stayed connected")
        assert sat2.flows().count("cookie=0x9") == before, sat2.flows()
        assert resident.ping(WEB_ADDR, count=2), "a permitted device lost its path when the controller link dropped"
        newcomer = home.add_device(name="newcomer", switch=sat2)
        newcomer.start_udhcpc()
        with pytest.raises(TimeoutError):
            newcomer.wait_for_ipv4(6)
    finally:
        sat2.set_controller(target)
    # back under the controller: the new port is planned and its device gets a lease
    wait_until(sat2.connected, 20, "the satellite did not reconnect")
    newcomer.wait_for_ipv4(30)
    assert resident.ping(WEB_ADDR)


def test_a_device_moved_to_another_satellite_keeps_its_address_and_comes_back(home: Home, sats):
    sat1, sat2 = sats
    dev = home.add_device(name="roamer", switch=sat1)
    dev.start_dhcp("dhcpcd")         # asks again for its address when its link comes back
    address = dev.wait_for_ipv4(25)
    out = home.homework("permit", dev.mac)
    assert out.returncode == 0, out.stderr + out.stdout
    gw = gateway(dev)
    wait_until(lambda: dev.ping(WEB_ADDR, timeout=1), 10, "the device cannot reach the internet")
    old_port = dev.ofport
    # pings every 20 ms, stamped, across the move
    pinger = dev.popen(["ping", "-n", "-D", "-i", "0.02", "-W", "1", gw], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    moved = sat2.take(dev)
    wait_until(lambda: dev.ping(gw, timeout=1), 15, "the moved device never reached its gateway again")
    time.sleep(0.2)
    pinger.terminate()
    replies = [float(m.group(1)) for m in re.finditer(r"^\[(\d+\.\d+)\] \d+ bytes from", pinger.communicate()[0], re.M)]
    back = min(t for t in replies if t > moved) - moved
    assert dev.ipv4() == address, "the device lost its /30 when it moved"
    assert dev.ping(WEB_ADDR), "the moved device cannot reach the internet"
    print(f"moved from {sat1.bridge} to {sat2.bridge} at {moved:.3f}: back at its gateway after {back:.2f} s")
    # the old satellite port has gone from the router's bridge
    assert f"hws1p{old_port}" not in home.vsctl("list-ports", "br0").split()


def test_make_run_brings_up_satellites_with_a_device_on_each():
    """`HOMEWORK_SATELLITES=2 make run` (smoke mode): two satellites, a device on each, and
    every device, on the router or a satellite, holds its /30."""
    env = dict(os.environ, HOMEWORK_RUN_SECONDS="10", HOMEWORK_SATELLITES="2", HOMELAB_ARTIFACTS="")
    proc = subprocess.run(["bash", str(REPO / "scripts" / "run-home.sh")], capture_output=True,
                          text=True, timeout=150, env=env, cwd=str(REPO))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    for index in (1, 2):
        assert re.search(rf"satellite sat{index} \(datapath 00000000000000a{index}, namespace hw[0-9a-f]+-s{index}, "
                         rf"its own OVS\) cabled to router port sat{index}cable, paired, OpenFlow over TLS",
                         out), out[-4000:]
        assert re.search(rf"-sat{index} \((dhclient|udhcpc|dhcpcd)\) bound: 10\.2\.\d+\.\d+/30", out), out[-4000:]
    assert "5 of 5 devices hold a /30" in out, out[-4000:]


def test_a_device_view_says_which_switch_and_port_it_is_plugged_into(home: Home, sats):
    sat2 = sats[1]
    there = on_satellite(home, sat2, "where-sat", permit=False)
    here = home.add_device(name="where-router")
    here.start_udhcpc()
    here.wait_for_ipv4(20)
    res = home.homework("--json", "devices")
    assert res.returncode == 0, res.stderr
    views = {v["mac"]: v for v in json.loads(res.stdout)}
    assert views[there.mac]["attached"] == {"switch": "satellite 2", "satellite": 2, "port": str(there.ofport)}
    assert views[here.mac]["attached"] == {"switch": "router", "satellite": None, "port": here.port_name}


def test_a_controller_restart_resynchronises_every_satellite(home: Home, sats):
    """The router's controller restarts: each satellite reconnects over TLS with its
    certificate and gets its table again; a device on a satellite keeps its address and
    path, and a new one is admitted."""
    sat1, sat2 = sats
    resident = on_satellite(home, sat1, "stays", permit=True)
    address = resident.ipv4()
    home.restart_controller()
    for sat in sats:
        wait_until(sat.connected, 30, f"{sat.bridge} did not reconnect after the controller restarted")
        wait_until(sat.programmed, 10, f"{sat.bridge} has no table after the controller restarted")
    wait_until(lambda: resident.ping(WEB_ADDR, timeout=1), 15, "the satellite device lost its path")
    assert resident.ipv4() == address
    newcomer = on_satellite(home, sat2, "after-restart", permit=False)
    assert newcomer.ping(gateway(newcomer)), "a device that joined a satellite after the restart got no gateway"


@pytest.fixture(scope="module")
def air(home: Home, sats):
    """Each satellite gets a radio (its port wlan0), air of its own, and its agent, which
    reports what that radio hears (Satellite.air_report)."""
    air = Air(home).start()
    for sat in sats:
        air.radio(sat)
        sat.start_agent(radios=(RADIO_PORT,))
    for sat in sats:
        wait_until(lambda sat=sat: f"satellite {sat.index}'s agent connected" in home.controller_log(), 20,
                   f"the agent of {sat.bridge} did not connect:\n{sat.agent_log()[-2000:]}")
    return air


def test_a_station_that_roams_to_another_satellites_radio_keeps_its_address_and_path(home: Home, sats, air):
    sat1, sat2 = sats
    neighbour = air.station("stays-on-ap1", sat1)      # keeps the first radio busy (its link stays up)
    station = air.station("roamer-wifi", sat1)
    for dev in (neighbour, station):
        dev.start_udhcpc()
        dev.wait_for_ipv4(25)
        assert home.homework("permit", dev.mac).returncode == 0
    address = station.ipv4()
    wait_until(lambda: station.ping(WEB_ADDR, timeout=1), 15, "the station cannot reach the internet")
    air.roam(station, sat2)
    # its old radio still has link (the neighbour), so only a roam lets its lease move: it
    # asks again (as a client whose check of its gateway failed after reassociating)
    sent = time.time()
    station.renew()
    station.wait_for_lease(timeout=15, pred=lambda ls: ls.reason == "renew", after=sent)
    wait_until(lambda: station.ping(WEB_ADDR, timeout=1), 10, "the roamed station cannot reach the internet")
    assert station.ipv4() == address, "the station lost its address when it roamed"
    views = {v["mac"]: v for v in json.loads(home.homework("--json", "devices").stdout)}
    assert views[station.mac]["attached"] == {"switch": "satellite 2", "satellite": 2, "port": "200"}
    assert views[neighbour.mac]["attached"]["satellite"] == 1
    assert neighbour.ping(WEB_ADDR), "the station's neighbour on the first radio lost its path"


def test_a_station_its_new_access_point_hears_keeps_its_path_without_asking_again(home: Home, sats, air):
    """A client that does not ask for its address again after roaming (it only checks its
    gateway, or not even that): the agents' station dumps say where it is, and its lease
    and flows follow it within the issue's 1 s."""
    sat1, sat2 = sats
    station = air.station("roamer-quiet", sat1)
    station.start_udhcpc()
    station.wait_for_ipv4(25)
    assert home.homework("permit", station.mac).returncode == 0
    address = station.ipv4()
    wait_until(lambda: station.ping(WEB_ADDR, timeout=1), 15, "the station cannot reach the internet")
    sat1.air_report(RADIO_PORT, {station.mac: -48})

    def view():
        return {v["mac"]: v for v in json.loads(home.homework("--json", "devices").stdout)}[station.mac]
    wait_until(lambda: view().get("radio") == "wlan0@sat1", 10, "the first satellite's report never arrived")
    station.stop_dhcp()                  # from here on it never asks again
    air.roam(station, sat2)
    heard = time.time()
    sat2.air_report(RADIO_PORT, {station.mac: -61})
    sat1.air_report(RADIO_PORT, {station.mac: (-48, 4000)})       # the old AP still lists it, idle
    wait_until(lambda: view()["attached"] == {"switch": "satellite 2", "satellite": 2, "port": "200"}, 10,
               "the station's lease did not follow it to the second satellite", interval=0.02)
    moved = time.time() - heard
    wait_until(lambda: station.ping(WEB_ADDR, timeout=1), 10, "the roamed station lost its path")
    back = time.time() - heard
    print(f"roamed without DHCP: lease moved {moved:.2f} s and path back {back:.2f} s after the new access "
          "point's report was written (the agents read their radios every 0.5 s)")
    assert station.ipv4() == address
    assert view()["radio"] == "wlan0@sat2"


def test_hostapds_event_places_a_station_that_authenticates_at_its_new_access_point(home: Home, sats, air, tmp_path):
    """A station that reassociates elsewhere authenticates at the new access point (real
    802.1X at the satellite's real hostapd). hostapd's AP-STA-CONNECTED makes that
    satellite's agent read its radio and report at once. Both agents here read their radios
    only every 60 s, so nothing but the event can move the station's lease and path."""
    sat1, sat2 = sats
    secret = tmp_path / "passphrase"
    secret.write_text("correct horse battery\n")
    assert home.homework("wifi", "--ssid", "Our home", "--passphrase-file", str(secret)).returncode == 0
    for sat in sats:
        wait_until(lambda sat=sat: "ssid[0]=Our home" in sat.hostapd_cli(RADIO_PORT, "status"), 20,
                   f"{sat.bridge}'s hostapd never served the router's SSID:\n{sat.agent_log()[-2000:]}")
    try:
        for sat in sats:
            sat.stop_agent(access_points=False)
            sat.start_agent(radios=(RADIO_PORT,), interval=60)
        station = air.station("roamer-8021x", sat1)
        station.start_udhcpc()
        station.wait_for_ipv4(25)
        assert home.homework("permit", station.mac).returncode == 0
        address = station.ipv4()

        def view():
            return {v["mac"]: v for v in json.loads(home.homework("--json", "devices").stdout)}[station.mac]
        sat1.air_report(RADIO_PORT, {station.mac: -48})          # the kernel lists it once it associates
        supplicant = Supplicant(station).start()
        assert supplicant.wait_state("AUTHENTICATED"), "the station did not authenticate at the first satellite"
        wait_until(lambda: view().get("radio") == "wlan0@sat1", 10,
                   "hostapd's event on the first satellite did not place the station")
        wait_until(lambda: station.ping(WEB_ADDR, timeout=1), 15, "the station cannot reach the internet")

        station.stop_dhcp()                                      # it never asks for its address again
        air.roam(station, sat2)
        sat2.air_report(RADIO_PORT, {station.mac: -61})
        sat1.air_report(RADIO_PORT, {station.mac: (-48, 4000)})   # the old AP still lists it, idle
        time.sleep(1)
        assert view()["attached"]["satellite"] == 1, "moved before the station authenticated: a poll, not the event"
        before = supplicant.eap_successes()
        supplicant.reauthenticate()                              # what reassociating starts
        assert supplicant.wait_success(before), "the station did not authenticate at the second satellite"
        wait_until(lambda: view()["attached"] == {"switch": "satellite 2", "satellite": 2, "port": "200"}, 10,
                   "hostapd's event on the second satellite did not move the station", interval=0.02)
        assert f"station {station.mac} connected; its radio is reported now" in sat2.agent_log()
        wait_until(lambda: station.ping(WEB_ADDR, timeout=1), 10, "the roamed station lost its path")
        assert station.ipv4() == address and view()["radio"] == "wlan0@sat2"
    finally:
        for sat in sats:                                         # the module's agents again: every 0.5 s
            sat.stop_agent(access_points=False)
            sat.start_agent(radios=(RADIO_PORT,))
