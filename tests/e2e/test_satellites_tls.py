"""End to end: satellites paired with certificates, over OpenFlow with TLS.

Each satellite here is a box of its own: its own namespace with its own ovsdb-server and
ovs-vswitchd, cabled to the router, and reaching the router in band over its cable: its own stack,
untagged, to the router's management port at fe80::1. Pairing is what a satellite does: it
makes its key (openssl; the key never leaves it), the router signs its request for its datapath id (`homework
satellite-pair`, from the household CA the controller made), and it connects with
`ssl:`. Then: its device gets a lease and the internet once permitted. A switch with a
certificate the household CA did not sign never completes the handshake; a listed
satellite over plain tcp, or one announcing another datapath id than its certificate
names, is refused. Pairing through the API as the Guest Board does it: the satellite asks
(public), the household permits it, the satellite fetches its certificate with its ticket;
denied later, it is emptied and cut off. The management link reaches only the router's
satellite services, and no device behind a satellite reaches it. A laptop plugged into a
satellite's cable in its place cannot pose as the satellite's devices. Real OVS (several ovs-vswitchd processes), real
openssl and curl, lighttpd, real udhcpc."""
from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from homelab import BRIDGE, WEB_ADDR, Home, sh
from homelab.routing import gateway, permitted_device, wait_until
from homelab.satellite import Air, Satellite
from homelab.web import Web, api, have_web, web_home
from homelab.wifi import Supplicant

PAIRED, ROGUE, PLAIN, ASKING, CHILD = (1, 0xB1), (2, 0xB2), (3, 0xB3), (4, 0xB4), (5, 0xB5)
CHILD_PORT = 7      # the port of the paired satellite that the child satellite's cable plugs into
PENDING_LEASE = 30  # [dhcp] pending_lease: what a device holds until it is let in and renews


@pytest.fixture(scope="module")
def home():
    why = have_web()
    if why:
        pytest.skip(why)
    specs = [Satellite.spec_for(i, dpid) for i, dpid in (PAIRED, ROGUE, PLAIN, ASKING)]
    specs.append(Satellite.spec_for(*CHILD, parent=(PAIRED[0], CHILD_PORT)))      # a tree
    # TLS on every address of the router: satellites reach it at fe80::1 on their management link.
    # radio + satlink: the satellites' agents (Wi-Fi and deny list out, station dumps in).
    with web_home({"satellites": {"switches": specs, "tls_listen": "::"},
                   "controller": {"components": ["dhcp", "routing", "radio", "satlink"]}}) as h:
        h.web = Web(h).start()
        yield h


def stats(home: Home) -> dict:
    res = home.homework("--json", "stats")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout).get("core", {})


def lease_refused(sat: Satellite, dev) -> bool:
    """The device asks for an address 4 times and gets no answer."""
    res = subprocess.run(["ip", "netns", "exec", dev.ns, "udhcpc", "-f", "-q", "-n", "-i", "eth0",
                          "-s", "/bin/true", "-t", "4", "-T", "1"], capture_output=True, text=True, timeout=30)
    return res.returncode != 0


def reprogrammed_since(sat: Satellite, since: float) -> bool:
    """Every flow of the satellite's table was installed after `since` (a new session's plan)."""
    ages = [float(d) for d in re.findall(r"duration=([0-9.]+)s", sat.flows())]
    return bool(ages) and max(ages) < time.time() - since


@contextlib.contextmanager
def cable_swapped(home: Home, sat: Satellite, dev, locked, controller_away: bool = False):
    """The satellite is unplugged (its switch lets go of its cable, whose link drops) and a
    laptop takes its place on the cable; `locked()` says whether the cable's lock holds.
    Yields how many answers the laptop gets to ARP requests for the device's gateway made
    as the device, tagged as its port. Plugged back afterwards: the satellite reconnects
    with its certificate. `controller_away`: the swap happens while the controller is
    stopped (no one sees the carrier drop); it starts again before the laptop's frames."""
    address, gw = dev.ipv4()[0], gateway(dev)
    locks = stats(home).get("satellite_cable_locked", 0)
    if controller_away:
        home.stop_controller()
    sat.vsctl("del-port", sat.bridge, sat.uplink)
    sat.run(["ip", "link", "set", sat.uplink, "down"])
    try:
        if controller_away:
            home.start_controller()
        else:
            wait_until(lambda: stats(home).get("satellite_cable_locked", 0) > locks, 10,
                       f"satellite {sat.index}'s cable was not locked when its link dropped")
        wait_until(locked, 10, f"satellite {sat.index}'s cable lock does not hold")
        sat.run(["ip", "link", "set", sat.uplink, "up"])       # the laptop's link
        time.sleep(1)
        assert locked(), "the cable opened again for what was plugged in, without the satellite"

        def impostor_answers() -> int:
            res = sat.run(["python3", "-c", ARP_AS, sat.uplink, str(sat.index * 256 + dev.ofport), dev.mac,
                           address, gw], check=False)
            assert res.returncode == 0, res.stderr
            return int(res.stdout.strip())
        yield impostor_answers
    finally:
        sat.vsctl("--may-exist", "add-port", sat.bridge, sat.uplink, "--", "set", "interface", sat.uplink,
                  "ofport_request=250")


@pytest.fixture(scope="module")
def paired(home: Home):
    sat = Satellite(home, *PAIRED, own_ovs=True).start(controller=None)
    try:
        answer = sat.pair()
        wait_until(sat.programmed, 30, "the paired satellite got no flows over TLS")
        sat.answer = answer
        yield sat
    finally:
        sat.stop()


def test_a_paired_satellite_is_driven_over_tls_and_its_device_reaches_the_internet(home: Home, paired):
    # the router answered with a certificate for this dpid and its CA, never with a key
    assert "PRIVATE KEY" not in json.dumps(paired.answer)
    subject = sh(["openssl", "x509", "-noout", "-subject"], input=paired.answer["certificate"]).stdout
    assert f"homework-satellite {PAIRED[1]:016x}" in subject, subject
    target = paired.vsctl("get", "controller", paired.bridge, "target")
    assert target.strip().strip('"').startswith("ssl:"), target
    dev = permitted_device(home, "tls-sat-dev", switch=paired, lease_timeout=25)
    assert dev.ping(WEB_ADDR), "a device on the paired satellite cannot reach the internet"


def test_a_switch_whose_certificate_the_household_did_not_sign_gets_nothing(home: Home, paired):
    rogue = Satellite(home, *ROGUE, own_ovs=True).start(controller=None)
    try:
        # a CA of its own and a certificate that claims to be the listed satellite 2
        d = rogue.dir
        d.mkdir(parents=True, exist_ok=True)
        sh(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-days", "30", "-keyout", str(d / "rogue-ca.key"), "-out", str(d / "rogue-ca.pem"),
            "-subj", "/CN=Homework household CA"])
        sh(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(d / "key.pem"), "-out", str(d / "req.pem"),
            "-subj", f"/CN=homework-satellite {ROGUE[1]:016x}"])
        sh(["openssl", "x509", "-req", "-in", str(d / "req.pem"), "-CA", str(d / "rogue-ca.pem"),
            "-CAkey", str(d / "rogue-ca.key"), "-CAcreateserial", "-days", "30", "-out", str(d / "cert.pem")])
        # it trusts the real household CA (published), so only the router's check can stop it
        before = stats(home).get("tls_refused", 0)
        rogue.install_identity(d / "key.pem", (d / "cert.pem").read_text(), paired.answer["ca"])
        wait_until(lambda: stats(home).get("tls_refused", 0) > before, 20, "the handshake was not refused")
        assert "refused at the handshake" in home.controller_log()
        dev = home.add_device(name="behind-rogue", switch=rogue)
        assert lease_refused(rogue, dev), "a device behind an unpaired switch got a lease"
        assert not rogue.programmed(), "the controller programmed an unpaired switch"
        assert not rogue.connected()
    finally:
        rogue.stop()


def test_the_management_link_reaches_only_the_routers_satellite_services(home: Home, paired):
    # over the cable, untagged, the satellite reaches the Guest Board's HTTPS (pairing) ...
    out = paired.run(["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                      paired.mgmt_url("/")], check=False).stdout
    assert out == "200", f"HTTPS over the management link answered {out!r}"
    # ... but no other service of the router: one listening on every address, reachable on
    # the router itself, is closed to it (the router's satellite_input chain)
    listener = home.router_popen(["python3", "-c", LISTEN_7777], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().strip() == "listening"
        assert home.router(["python3", "-c", CONNECT_7777, "::1"]).returncode == 0
        res = paired.run(["python3", "-c", CONNECT_7777, paired.mgmt_router], check=False)
        assert res.returncode != 0, "a satellite reached a router service other than its own"
    finally:
        listener.kill()
        listener.wait(5)
    # a device behind the satellite that tags its frames with the management VLAN (256)
    # still only reaches its own patch port: the satellite puts its port's tag outside
    dev = home.add_device(name="vlan-hopper", switch=paired)
    sniffer = home.router_popen(["python3", "-c", SNIFF, f"hwsat{paired.index}m", dev.mac, "4"],
                                stdout=subprocess.PIPE, text=True)
    assert sniffer.stdout.readline().strip() == "ready"
    dev.run(["python3", "-c", SEND_TAGGED, dev.mac])
    leaked = int(sniffer.stdout.readline())
    sniffer.wait(10)
    assert leaked == 0, f"{leaked} of a device's frames tagged 256 reached the management link"


def test_a_laptop_plugged_into_a_satellites_cable_cannot_pose_as_its_devices(home: Home, paired):
    """The satellite is unplugged and a laptop plugged into its cable. The laptop tags its
    frames as the satellite's port of a permitted device, with that device's MAC and
    address. The carrier dropped, so the cable carries only the management link until the
    satellite connects again with its certificate: the impostor reaches nothing, not even
    the gateway; plugged back, the satellite brings its device back."""
    dev = permitted_device(home, "swap-victim", switch=paired, lease_timeout=25)
    holds_its_permitted_lease(dev)
    only_management = f"[{PAIRED[0] * 256}]"        # the router's end takes the management VLAN alone
    gw = gateway(dev)
    # swapped while the controller watches, then while it is away (a restart, a reboot:
    # no one saw the carrier drop, so a controller that starts locks every cable)
    for away in (False, True):
        with cable_swapped(home, paired, dev, lambda: home.vsctl("get", "port", paired.router_port, "trunks").strip()
                           == only_management, controller_away=away) as impostor_answers:
            answers = impostor_answers()
            assert answers == 0, f"a laptop on the satellite's cable got {answers} answers as {dev.mac} " \
                                 f"({'swapped while the controller was away' if away else 'swapped'})"
        wait_until(lambda: home.vsctl("get", "port", paired.router_port, "trunks").strip() == "[]", 40,
                   "the satellite came back but its cable stayed locked")
        try:
            wait_until(lambda: dev.ping(gw, timeout=1), 40, "the satellite's device did not come back with it"
                       f"{' (swapped while the controller was away)' if away else ''}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{path_to_device(home, paired, dev)}") from None
    assert dev.ping(WEB_ADDR), "the satellite's device lost the internet"


def holds_its_permitted_lease(dev) -> None:
    """The device renews into the lease a permitted device holds (an hour), as a household's
    device has long done by the time its satellite is swapped. Just let in, it still holds the
    30 s lease it got while pending, renewed at T1 (15 s): a swap that begins before that
    renewal blocks it, the lease may end on both sides (and a restarted controller then has
    none to restore), and the device comes back only with udhcpc's next round of discovery
    (20 s apart), which is DHCP's timing, not what this test is about."""
    def long_lease() -> bool:
        lease = dev.lease()
        if lease is not None and (lease.lease_time or 0) > PENDING_LEASE:
            return True
        dev.renew()
        return False
    wait_until(long_lease, 30, f"{dev.name} did not renew into its permitted lease", interval=2)


def path_to_device(home: Home, sat: Satellite, dev) -> str:
    """What a failure needs to tell where the way from the router to a satellite's device
    broke: the demux bridge's MAC table and ports, the satellite's table, both neighbour
    caches, the device's address and lease on both sides and the router's flows for it (a
    rare failure once left only the router's table to read)."""
    parts, ctl = [], str(Path(home.ovs_env["OVS_RUNDIR"]) / "ovs-vswitchd.ctl")
    for title, run in ((f"router: ovs-appctl fdb/show hwsat{sat.index}",
                        lambda: home.router(["ovs-appctl", "-t", ctl, "fdb/show", f"hwsat{sat.index}"], check=False)),
                       ("router: the ports' VLANs",
                        lambda: home.router(["ovs-vsctl", "--timeout=10", "--columns=name,tag,trunks",
                                             "list", "port"], check=False)),
                       ("router: ip neigh", lambda: home.router(["ip", "neigh"], check=False)),
                       (f"satellite {sat.index}: flows", lambda: sat.run(["ovs-ofctl", "-O", "OpenFlow13",
                                                                           "dump-flows", sat.bridge], check=False)),
                       ("device: ip neigh", lambda: dev.run(["ip", "neigh"], check=False)),
                       ("device: ip addr", lambda: dev.run(["ip", "-4", "addr", "show", "eth0"], check=False)),
                       ("the controller's lease", lambda: home.homework("--json", "status", dev.mac)),
                       ("router: the device's flows", lambda: home.router(
                           ["sh", "-c", f"ovs-ofctl -O OpenFlow13 dump-flows {BRIDGE} | grep -i -e '{dev.mac}' "
                                        f"-e 'in_port={4096 + sat.index * 256 + dev.ofport}' || true"], check=False))):
        try:
            res = run()
            parts.append(f"== {title}\n{res.stdout}{res.stderr}")
        except Exception as exc:        # a diagnostic never hides the failure it explains
            parts.append(f"== {title}: {exc}")
    return "\n".join(parts)


# ARP requests for GATEWAY from MAC/ADDRESS tagged VLAN on IFNAME; prints how many answers came
ARP_AS = """
import socket, sys, time
ifname, vlan, mac, ip, gw = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
me, myip, gwip = bytes.fromhex(mac.replace(":", "")), socket.inet_aton(ip), socket.inet_aton(gw)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((ifname, 0))
s.settimeout(0.2)
arp = bytes.fromhex("0001080006040001") + me + myip + bytes(6) + gwip
frame = b"\\xff" * 6 + me + b"\\x81\\x00" + vlan.to_bytes(2, "big") + b"\\x08\\x06" + arp
answers, end = 0, time.time() + 4
for _ in range(3):
    s.send(frame)
while time.time() < end:
    try:
        got = s.recv(2048)
    except socket.timeout:
        continue
    body = got[12:]
    if body[:2] == b"\\x81\\x00":
        body = body[4:]
    if body[:2] == b"\\x08\\x06" and body[8:10] == b"\\x00\\x02" and body[16:20] == gwip and body[26:30] == myip:
        answers += 1
print(answers)
"""


# the router's own frames on an interface from a MAC, for SECONDS
SNIFF = """
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0))
s.settimeout(0.2)
mac, end, n = bytes.fromhex(sys.argv[2].replace(":", "")), time.time() + float(sys.argv[3]), 0
print("ready", flush=True)
while time.time() < end:
    try:
        n += s.recv(2048)[6:12] == mac
    except socket.timeout:
        pass
print(n, flush=True)
"""
# five broadcast frames tagged with VLAN 256 (the management VLAN of satellite 1)
SEND_TAGGED = """
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
frame = b"\\xff" * 6 + bytes.fromhex(sys.argv[1].replace(":", "")) + b"\\x81\\x00\\x01\\x00\\x86\\xdd" + bytes(60)
for _ in range(5):
    s.send(frame)
"""


LISTEN_7777 = """
import socket
s = socket.create_server(("::", 7777), family=socket.AF_INET6, dualstack_ipv6=True)
print("listening", flush=True)
while True:
    s.accept()[0].close()
"""
CONNECT_7777 = """
import socket, sys
socket.create_connection((sys.argv[1], 7777), timeout=3).close()
"""


def test_a_satellite_behind_a_satellite_is_managed_through_it_and_its_device_reaches_the_internet(
        home: Home, paired):
    # its cable plugs into port 7 of the paired satellite: it reaches the router's fe80::1
    # through it (start() waits for that), pairs, and is driven over TLS
    child = Satellite(home, *CHILD, own_ovs=True, parent=(paired, CHILD_PORT)).start(controller=None)
    try:
        child.pair()
        wait_until(child.programmed, 30, "the satellite behind a satellite got no flows over TLS")
        # the parent's port 7 carries a satellite, not a device: no patch port on the router's bridge
        assert f"hws{PAIRED[0]}p{CHILD_PORT}" not in home.vsctl("list-ports", "br0").split()
        dev = permitted_device(home, "behind-child", switch=child, lease_timeout=25)
        holds_its_permitted_lease(dev)        # its 30 s pending lease would end while the child is away
        gw = gateway(dev)
        assert dev.ping(WEB_ADDR), "a device two satellites deep cannot reach the internet"
        view = json.loads(home.homework("--json", "devices").stdout)
        attached = next(d for d in view if d["mac"] == dev.mac)["attached"]
        assert attached["satellite"] == CHILD[0], attached
        # the device's frames crossed the parent with the child's own tag (VLANs 0x500-0x5ff
        # of satellite 5), untouched: the parent's port 7 is no device port of its own
        passed = [line for line in paired.flows().splitlines()
                  if f"in_port={CHILD_PORT},vlan_tci=0x1500/0x1f00 actions=output:250" in line]
        assert passed and "n_packets=0," not in passed[0], paired.flows()
        assert "set_field:4359->vlan_vid" not in paired.flows()      # no tag of port 7 (VLAN 263)

        # the child's cable is swapped for a laptop (its link drops on the parent's port 7):
        # tagged as the child's port, as its device, the laptop gets no answer
        with cable_swapped(home, child, dev,          # the parent no longer passes the child's VLANs
                           lambda: f"in_port={CHILD_PORT},vlan_tci=0x1500/0x1f00" not in paired.flows()) \
                as impostor_answers:
            answers = impostor_answers()
            assert answers == 0, f"a laptop on the child's cable got {answers} answers as {dev.mac}"
            # a controller restart (the lock is its memory) still does not open the parent
            restarted = time.time()
            home.restart_controller()
            wait_until(lambda: reprogrammed_since(paired, restarted), 40,
                       "the parent was not driven again after the controller restart")
            answers = impostor_answers()
            assert answers == 0, f"after a controller restart the laptop got {answers} answers as {dev.mac}"
        # the child back: it connects with its certificate, and its device's path comes back
        wait_until(lambda: dev.ping(gw, timeout=1), 40, "the child's device did not come back with it")
        assert dev.ping(WEB_ADDR)
    finally:
        child.stop()


def test_a_listed_satellite_without_tls_is_refused(home: Home, paired):
    plain = Satellite(home, *PLAIN).start()       # a bridge on the router's OVS, plain tcp
    try:
        wait_until(lambda: "satellite 3 connected without TLS" in home.controller_log(), 20,
                   "a listed satellite over plain tcp was not refused")
        dev = home.add_device(name="behind-plain", switch=plain)
        assert lease_refused(plain, dev), "a device behind a satellite without TLS got a lease"
        assert "cookie" not in plain.flows()
    finally:
        plain.stop()


def test_a_paired_satellite_that_announces_another_dpid_is_refused(home: Home, paired):
    """Its certificate names satellite 1; as satellite 2 it gets nothing, and as itself
    again it is driven again."""
    paired.vsctl("set", "bridge", paired.bridge, f"other-config:datapath-id={ROGUE[1]:016x}")
    try:
        wait_until(lambda: f"showed a certificate for datapath {PAIRED[1]:016x}, not its own"
                   in home.controller_log(), 20, "a satellite using another's dpid was not refused")
    finally:
        paired.vsctl("set", "bridge", paired.bridge, f"other-config:datapath-id={PAIRED[1]:016x}")
    wait_until(paired.programmed, 20, "the satellite was not driven again under its own dpid")


def test_pairing_refuses_an_unlisted_dpid_and_a_request_that_is_not_one(home: Home, tmp_path):
    req = tmp_path / "req.pem"
    sh(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(tmp_path / "key.pem"), "-out", str(req), "-subj", "/CN=x"])
    res = home.homework("satellite-pair", "00000000000000c9", "--csr", str(req))
    assert res.returncode != 0 and "not in [satellites] switches" in res.stderr + res.stdout
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN CERTIFICATE REQUEST-----\nnot base64\n-----END CERTIFICATE REQUEST-----\n")
    res = home.homework("satellite-pair", f"{PAIRED[1]:016x}", "--csr", str(bad))
    assert res.returncode != 0 and "not a PEM certificate request" in res.stderr + res.stdout


@pytest.fixture
def asking(home: Home):
    sat = Satellite(home, *ASKING, own_ovs=True).start(controller=None)
    yield sat
    sat.stop()
    api(home.web, "POST", f"satellites/{ASKING[1]:016x}/forget")     # if the test did not get there


def test_the_satellites_agent_runs_its_access_point_from_the_router_and_reports_its_stations(home: Home, paired):
    """One Wi-Fi set once on the router reaches the satellite's hostapd; the blacklist
    becomes its deny list; what its radio hears reaches the Guest Board."""
    air = Air(home).start()
    air.radio(paired)
    r = api(home.web, "POST", "wifi", json={"ssid": "Our home", "passphrase": "correct horse battery"})
    assert r.status_code == 200, r.text
    paired.start_agent()
    wait_until(lambda: "ssid[0]=Our home" in paired.hostapd_cli("wlan0", "status"), 60,
               f"the satellite's hostapd never served the router's SSID:\n{paired.agent_log()[-2000:]}")
    # a station of the satellite's access point authenticates there (real 802.1X, EAP-MD5)
    sta = air.station("sat-sta", paired)
    sta.start_udhcpc()
    sta.wait_for_ipv4(25)
    sup = Supplicant(sta).start()
    assert sup.wait_state("AUTHENTICATED"), "the station did not authenticate at the satellite's hostapd"
    # what the radio hears: its signal on the Guest Board, the radio named after the satellite
    assert sta.ping(gateway(sta), timeout=1), "the pending station cannot reach its gateway"
    paired.air_report("wlan0", {sta.mac: -57})

    def board_view():
        views = {v["mac"]: v for v in api(home.web, "GET", "devices", role="read-only").json()}
        return views.get(sta.mac, {})
    wait_until(lambda: (board_view().get("metrics") or {}).get("rssi") == -57.0, 15,
               f"the satellite's station signal never reached the board: {board_view()}")
    view = board_view()
    assert view["radio"] == "wlan0@sat1" and view["band"] == "5 GHz", view
    # renamed on the settings page: the satellite's access point follows
    assert api(home.web, "POST", "wifi", json={"ssid": "Our home 5"}).status_code == 200
    wait_until(lambda: "ssid[0]=Our home 5" in paired.hostapd_cli("wlan0", "status"), 20,
               "the satellite's hostapd kept the old SSID")
    # blacklisted on the board: on the satellite's deny list (file and running hostapd), and off it
    assert home.homework("blacklist", sta.mac).returncode == 0
    wait_until(lambda: sta.mac in paired.hostapd_cli("wlan0", "deny_acl", "SHOW"), 15,
               "the blacklisted station is not on the satellite hostapd's deny list")
    assert sta.mac in (paired.agent_dir / "state" / "hostapd.deny").read_text()
    # hostapd's wired driver applies no deny list to 802.1X (nl80211's refuses the
    # association), but the router's drop flows cut the station off behind any satellite
    assert not sta.ping(gateway(sta), timeout=1), "a blacklisted station still reaches its gateway"
    assert home.homework("whitelist", sta.mac).returncode == 0
    wait_until(lambda: sta.mac not in paired.hostapd_cli("wlan0", "deny_acl", "SHOW"), 15,
               "the whitelisted station stayed on the satellite's deny list")
    # the agent's channel admits nobody else: a client without a certificate is refused
    paired.run(["bash", "-c", f"openssl s_client -connect '{paired.mgmt(6655)}' -brief </dev/null"], check=False)
    wait_until(lambda: f"satellite agent from {paired.local_address()}" in home.controller_log(), 10,
               "a certificate-less agent was not refused")


def test_a_satellite_asks_the_household_permits_it_denying_it_cuts_it_off_and_forgotten_it_pairs_again(  # noqa: E501
        home: Home, asking):
    dpid = f"{ASKING[1]:016x}"
    asked = asking.ask()
    assert asked["dpid"] == dpid and len(asked["code"]) == 6
    # the household sees a pending access point with the same code; the satellite waits
    listed = {s["dpid"]: s for s in api(home.web, "GET", "satellites", role="read-only").json()}
    assert listed[dpid]["state"] == "pending" and listed[dpid]["code"] == asked["code"]
    board = {v["mac"]: v for v in api(home.web, "GET", "devices", role="read-only").json()}
    assert board[f"ap-{dpid}"]["kind"] == "access-point" and board[f"ap-{dpid}"]["zone"] == "asking"
    code, body = asking.poll()          # the satellite's own join step: 3 while pending
    assert code == 3 and body["state"] == "pending" and not (asking.dir / "satellite-cert.pem").exists()
    # nobody without the admin role can permit it
    assert api(home.web, "POST", f"satellites/{dpid}/permit", role=None).status_code == 401
    assert api(home.web, "POST", f"satellites/{dpid}/permit", role="read-only").status_code == 403
    r = api(home.web, "POST", f"satellites/{dpid}/permit")
    assert r.status_code == 200 and r.json()["state"] == "permitted", r.text
    code, body = asking.poll()
    assert code == 0 and body["state"] == "permitted", body
    assert "BEGIN CERTIFICATE" in (asking.dir / "satellite-cert.pem").read_text()
    assert "PRIVATE KEY" in (asking.dir / "satellite-key.pem").read_text()      # made there, kept there
    wait_until(asking.programmed, 30, "the permitted satellite got no flows")
    # its unpaired command records why the router stopped admitting it (the image's asks again)
    told = asking.agent_dir / "unpaired"
    unpaired_command = f"sh -c 'echo \"$HOMEWORK_UNPAIRED\" >> {told}'"
    asking.start_agent(radios=(), unpaired_command=unpaired_command)
    wait_until(lambda: "satellite 4's agent connected" in home.controller_log(), 60, "its agent did not connect")
    dev = home.add_device(name="behind-asking", switch=asking)
    dev.start_udhcpc()
    dev.wait_for_ipv4(25)
    assert home.homework("permit", dev.mac).returncode == 0
    wait_until(lambda: dev.ping(WEB_ADDR, timeout=1), 15, "the device behind the permitted satellite has no internet")
    # denied: its table is emptied, its ports leave the router, and its certificate no longer admits it
    r = api(home.web, "POST", f"satellites/{dpid}/deny")
    assert r.status_code == 200 and r.json()["state"] == "denied"
    wait_until(lambda: not asking.programmed(), 10, "the denied satellite kept its table")
    assert "push_vlan" not in asking.flows(), "the denied satellite still carries its device ports"
    # only its management link is left: it can still reach the router, to be refused or to ask again
    assert asking.flows().count("cookie=0x901000000000000,") == 2, asking.flows()
    wait_until(lambda: not any(p.startswith("hws4p") for p in home.vsctl("list-ports", "br0").split()), 10,
               "the denied satellite's ports stayed on the router")
    assert not dev.ping(WEB_ADDR), "a device behind a denied satellite still reaches the internet"
    wait_until(lambda: "satellite 4 showed a certificate that is no longer its pairing" in home.controller_log(),
               20, "the denied satellite's reconnection was not refused")
    # its agent is told why and stops, instead of knocking with a certificate that no longer admits it
    wait_until(lambda: "satellite 4's agent disconnected" in home.controller_log(), 15,
               "the denied satellite's agent was not cut off")
    wait_until(lambda: told.exists() and told.read_text().split() == ["denied"], 15,
               f"the denied satellite's agent was not told:\n{asking.agent_log()[-1500:]}")
    wait_until(lambda: asking.agent_proc.poll() is not None, 10, "the agent of a denied satellite kept running")
    # the CLI says the same as the API
    listed = json.loads(home.homework("--json", "satellites").stdout)
    assert [(s["dpid"], s["state"]) for s in listed if s["dpid"] == dpid] == [(dpid, "denied")]
    forgotten = home.homework("satellite-forget", dpid)
    assert forgotten.returncode == 0 and json.loads(forgotten.stdout) == {"dpid": dpid, "forgotten": True}
    assert home.homework("satellite-permit", dpid).returncode != 0       # nothing asked any more
    # forgotten, the box comes back with its old certificate: refused, and told so
    asking.start_agent(radios=(), unpaired_command=unpaired_command)
    wait_until(lambda: told.read_text().split() == ["denied", "forgotten"], 15,
               f"the forgotten satellite's agent was not told:\n{asking.agent_log()[-1500:]}")
    assert "satellite 4's certificate is no longer its pairing (forgotten)" in home.controller_log()
    wait_until(lambda: asking.agent_proc.poll() is not None, 10, "the agent of a forgotten satellite kept running")
    # it asks again with the key it kept (the same code on both ends); permitted, it is whole again
    (asking.dir / "satellite-cert.pem").unlink()
    again = asking.ask()
    assert again["code"] == asked["code"], (again, asked)
    assert api(home.web, "POST", f"satellites/{dpid}/permit").json()["state"] == "permitted"
    code, body = asking.poll()
    assert code == 0 and body["state"] == "permitted", body
    wait_until(asking.programmed, 40, "the satellite paired again got no flows")
    wait_until(lambda: dev.ping(WEB_ADDR, timeout=1), 20,
               "the device behind the satellite paired again did not get its internet back")


def test_the_public_pairing_calls_refuse_what_they_should(home: Home):
    web = home.web
    r = api(web, "POST", "satellites/pair", role=None, json={"dpid": "00000000000000c9", "csr": "x"})
    assert r.status_code == 404 and "not in [satellites] switches" in r.json()["error"]
    r = api(web, "POST", "satellites/pair", role=None, json={"dpid": f"{ASKING[1]:016x}", "csr": "not a request"})
    assert r.status_code == 400 and "not a PEM certificate request" in r.json()["error"]
    r = api(web, "POST", "satellites/pair", role=None, json={"dpid": "zz"})
    assert r.status_code == 400
    r = api(web, "GET", f"satellites/pair/{PAIRED[1]:016x}", role=None, headers={"X-Pairing-Ticket": "guess"})
    assert r.status_code == 404
