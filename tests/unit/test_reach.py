"""Reaching in (components/reach): the forward validator, the nftables plan, miniupnpd's
config and what the controller reads back from it, and the component on the strict fake
switch with nft and miniupnpd replaced by recorders (the real ones run in
tests/e2e/test_reach.py): what is open follows the device's decisions, pauses, address and
forgetting; only permitted devices may open ports; losing that ends their mappings."""
from __future__ import annotations

import json

import pytest

from homework.commands import CommandError
from homework.components.reach import component as reach_component
from homework.components.reach import plan, upnp
from homework.components.reach.forwards import Forward, ForwardError, parse_forward
from homework.components.reach.upnp import Mapping
from routingkit import join, routing_core

A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
SITE = "2001:db8:100::/48"


class Tools:
    """Stands in for nft (and ip, sysctl): records every call, answers 0."""

    def __init__(self):
        self.calls = []

    def __call__(self, argv, text=None):
        self.calls.append((argv, text or ""))
        return 0, ""

    def fills(self) -> list[str]:
        return [t for a, t in self.calls if a[:2] == ["nft", "-f"] and "flush chain inet homework_reach forwards" in t]

    def last_fill(self) -> str:
        fills = self.fills()
        return fills[-1] if fills else ""


class FakeDaemon:
    """miniupnpd as the component sees it: mappings, and remove() that ends some."""

    made: list[FakeDaemon] = []

    def __init__(self, *args, **kw):
        self.maps: list[Mapping] = []
        self.removed: list[Mapping] = []
        self.starts = 0
        self.error = ""
        self.up = False
        FakeDaemon.made.append(self)

    @staticmethod
    def available(binary=None):
        return True

    def running(self):
        return self.up

    def stop(self):
        self.up = False

    def mappings(self, now=None, fresh=False):
        return list(self.maps)

    def remove(self, drop):
        gone = [m for m in self.maps if drop(m)]
        self.maps = [m for m in self.maps if not drop(m)]
        self.removed += gone
        self.up = True
        self.starts += 1
        return gone


@pytest.fixture
def tools(monkeypatch):
    found = Tools()
    monkeypatch.setattr(upnp, "run", found)
    monkeypatch.setattr(reach_component, "Miniupnpd", FakeDaemon)
    FakeDaemon.made.clear()
    return found


def new_home(tmp_path, clock, upnp_on=False, components=("dhcp", "routing", "schedules", "reach")):
    return routing_core(tmp_path, clock, components=components, ipv6_enabled=True, ipv6_prefix=SITE,
                        reach_upnp=upnp_on, reach_upnp_run_dir=str(tmp_path / "upnp"), timezone="UTC")


@pytest.fixture
def home(tmp_path, clock, tools):
    core = new_home(tmp_path, clock)
    for mac, port in ((A, 1), (B, 2)):
        join(core, mac, port)
    core.commands.call("permit", mac=A)
    return core


def reach(core):
    comp = core.ctx.component("reach")
    comp.settle()
    return comp


# -- the one validator ---------------------------------------------------------------------------
def test_a_forward_is_parsed_from_what_a_person_types():
    assert parse_forward("8080") == ("tcp", 8080, 8080, 8080, "")
    assert parse_forward(" 9000 ", "UDP", "80", " game ") == ("udp", 9000, 9000, 80, "game")
    assert parse_forward("27015-27030", "both") == ("both", 27015, 27030, 27015, "")
    assert parse_forward(3074, "udp") == ("udp", 3074, 3074, 3074, "")


@pytest.mark.parametrize("ports, protocol, to_port, description, says", [
    ("", None, None, None, "Give the external port"),
    ("0", None, None, None, "from 1 to 65535"),
    ("65536", None, None, None, "from 1 to 65535"),
    ("http", None, None, None, "from 1 to 65535"),
    ("9000-8000", None, None, None, "ends before it starts"),
    ("1-2000", None, None, None, "at most 1024 ports"),
    ("8080", "icmp", None, None, "tcp, udp or both"),
    ("8080", None, "0", None, "The device's port"),
    ("8000-8010", None, "9000", None, "same ports on the device"),
    ("8080", None, None, "x" * 65, "at most 64"),
    ("8080", None, None, "bad\nline", "printable"),
    (True, None, None, None, "Give the external port"),
])
def test_bad_forwards_are_refused_with_a_sentence(ports, protocol, to_port, description, says):
    with pytest.raises(ForwardError, match=says):
        parse_forward(ports, protocol, to_port, description)


# -- the nftables plan ---------------------------------------------------------------------------
def test_the_plan_dnats_to_the_device_and_opens_its_64():
    one = plan.OpenForward(Forward(3, A, "tcp", 9000, 9000, 8080), "10.2.0.6", "2001:db8:100:1::/64")
    both = plan.OpenForward(Forward(4, A, "both", 27015, 27030, 27015), "10.2.0.6", None)
    text = plan.fill([one, both], ["198.51.100.2"], None)
    assert 'add rule inet homework_reach forwards meta nfproto ipv4 tcp dport 9000 dnat ip to 10.2.0.6:8080' in text
    assert 'add rule inet homework_reach hairpin meta nfproto ipv4 tcp dport 9000 dnat ip to 10.2.0.6:8080' in text
    assert ("meta nfproto ipv4 meta l4proto { tcp, udp } th dport 27015-27030 dnat ip to 10.2.0.6 " in text)
    # IPv6 has no NAT: the device's own port in its /64
    assert "add rule inet homework reach_forward ip6 daddr 2001:db8:100:1::/64 tcp dport 8080 accept" in text
    assert "add element inet homework_reach wan4 { 198.51.100.2 }" in text
    assert text.startswith("flush chain inet homework_reach forwards\n")


def test_the_gate_lets_only_allowed_devices_ask_miniupnpd():
    u = plan.Upnp("10.3.255.254", 5000, ("10.2.0.6",), ("2001:db8:100:1::/64",))
    setup = plan.setup("br0", "wan0", u)
    assert 'udp dport { 1900, 5351 } ip saddr != @upnp4 reject' in setup
    assert 'tcp dport 5000 ip6 saddr != @upnp6 reject with tcp reset' in setup
    assert "udp dport 5351 fib daddr type local dnat ip to 10.3.255.254:5351" in setup
    assert "flush chain inet homework_reach upnp_prerouting" not in setup     # miniupnpd's rules stay
    fill = plan.fill([], [], u)
    assert "add element inet homework_reach upnp4 { 10.2.0.6 }" in fill
    assert "add element inet homework_reach upnp6 { 2001:db8:100:1::/64 }" in fill


def test_miniupnpd_listens_outside_the_pool_in_a_prefix_that_covers_it():
    assert plan.upnp_address("10.2.0.0/16") == ("10.3.255.254", 15)
    assert plan.upnp_address("192.168.128.0/17") == ("192.168.127.254", 16)


# -- miniupnpd -----------------------------------------------------------------------------------
def test_its_config_keeps_it_off_the_households_ports_and_the_well_known_ones(tmp_path):
    text = upnp.config_text(wan="wan0", bridge="br0", http_port=5000, lease4=tmp_path / "4", lease6=tmp_path / "6",
                            uuid_text="u", keep_off=[("udp", 51820, 51820), ("tcp", 27015, 27030)],
                            pool="10.2.0.0/16", min_lifetime=120, max_lifetime=86400)
    lines = text.splitlines()
    rules = [line for line in lines if line.startswith(("allow", "deny"))]
    assert rules == ["deny 27015-27030 0.0.0.0/0 1-65535", "deny 51820 0.0.0.0/0 1-65535",
                     "allow 1024-65535 10.2.0.0/16 1-65535", "deny 0-65535 0.0.0.0/0 0-65535"]
    assert "secure_mode=yes" in lines and "upnp_table_name=homework" in lines
    assert lines.index("listening_ip=br0") < lines.index(f"listening_ip={upnp.LISTEN_IF}")


def test_its_lease_files_are_read_back():
    m4 = upnp.parse_leases("TCP:9100:10.2.0.2:8080:1795816912:game\nbroken line\nUDP:3074:10.2.0.2:3074:0:x",
                           1000, 0)
    assert [(m.key, m.to_port, m.description, m.expires) for m in m4] == [
        ("4/tcp/9100/10.2.0.2", 8080, "game", 1795816912.0), ("4/udp/3074/10.2.0.2", 3074, "x", 0.0)]
    m6 = upnp.parse_leases6("TCP;2001:db8:100::5;8081;(null);0;2;1795817258;PCP MAP 2b39", 0, 0)
    assert [(m.key, m.uid, m.expires) for m in m6] == [("6/tcp/8081/2001:db8:100::5", 2, 1795817258.0)]
    # a stamp that is seconds left (LEASEFILE_USE_REMAINING_TIME builds): from when it was written
    assert upnp.parse_leases("TCP:1:10.2.0.2:1:600:d", 5000, 0)[0].expires == 5600


# what `nft -j -a list chain` and `nft --debug=netlink list chain` showed for miniupnpd's rules
FORWARD_JSON = {"nftables": [{"metainfo": {}}, {"chain": {"name": "upnp_forward"}},
    {"rule": {"family": "inet", "table": "homework", "chain": "upnp_forward", "handle": 35, "expr": [
        {"match": {"op": "==", "left": {"meta": {"key": "iif"}}, "right": "wan0"}},
        {"match": {"op": "==", "left": {"payload": {"protocol": "th", "field": "dport"}}, "right": 8080}},
        {"match": {"op": "==", "left": {"payload": {"base": "nh", "offset": 192, "len": 128}},
                   "right": "0x20010db801000000006877fffe010001"}},
        {"match": {"op": "==", "left": {"payload": {"base": "nh", "offset": 48, "len": 8}}, "right": 6}},
        {"accept": None}]}},
    {"rule": {"family": "inet", "table": "homework", "chain": "upnp_forward", "handle": 37, "expr": [
        {"match": {"op": "==", "left": {"payload": {"protocol": "th", "field": "dport"}}, "right": 8080}},
        {"match": {"op": "==", "left": {"payload": {"base": "nh", "offset": 128, "len": 32}}, "right": 167903234}},
        {"match": {"op": "==", "left": {"payload": {"base": "nh", "offset": 72, "len": 8}}, "right": 6}},
        {"accept": None}]}}]}
NAT_JSON = {"nftables": [{"rule": {"family": "inet", "table": "homework_reach", "chain": "upnp_prerouting",
                                   "handle": 27, "expr": [
    {"match": {"op": "==", "left": {"payload": {"base": "nh", "offset": 72, "len": 8}}, "right": 6}},
    {"match": {"op": "==", "left": {"payload": {"protocol": "th", "field": "dport"}}, "right": 9100}},
    {"dnat": {"family": "ip", "addr": "10.2.0.2", "port": 8080}}]}}]}
DEBUG = """inet homework upnp_forward 35 34
  [ meta load iif => reg 1 ]
  [ immediate reg 0 accept ]
  userdata = { pinhole-1 ts-2209: IGD2 pinhole }
inet homework upnp_forward 37 36
  [ immediate reg 0 accept ]
  userdata = { game }
"""


def test_its_rules_are_read_back_pinholes_from_the_rules_and_ipv4_mappings_with_theirs():
    rules = upnp.parse_rules("homework", "upnp_forward", json.dumps(FORWARD_JSON)) + \
        upnp.parse_rules("homework_reach", "upnp_prerouting", json.dumps(NAT_JSON))
    assert [(r.handle, r.family, r.address, r.port, r.protocol) for r in rules] == [
        (35, 6, "2001:db8:100:0:68:77ff:fe01:1", 8080, "tcp"), (37, 4, "10.2.0.2", 8080, "tcp"),
        (27, 4, "10.2.0.2", 9100, "tcp")]
    labels = upnp.parse_labels(DEBUG)
    assert labels == {35: "pinhole-1 ts-2209: IGD2 pinhole", 37: "game"}
    [pin] = upnp.pinholes(rules, labels, boot=1_000_000.0)
    assert (pin.key, pin.uid, pin.description, pin.expires) == (
        "6/tcp/8080/2001:db8:100:0:68:77ff:fe01:1", 1, "IGD2 pinhole", 1_002_209.0)
    assert pin.handles == (("homework", "upnp_forward", 35),)
    lease = upnp.parse_leases("TCP:9100:10.2.0.2:8080:1795816912:game", 0, 0)[0]
    assert set(upnp.with_handles(lease, rules).handles) == {
        ("homework", "upnp_forward", 37), ("homework_reach", "upnp_prerouting", 27)}


# -- the component -------------------------------------------------------------------------------
def test_a_forward_goes_to_the_permitted_devices_address_and_its_64(home, tools):
    view = home.commands.call("forward-add", mac=A, ports="9000", to_port="8080", description="web")
    assert view["open"] and view["address"] == "10.2.0.2" and view["ipv6_prefix"] == "2001:db8:100::/64"
    reach(home)
    fill = tools.last_fill()
    assert "tcp dport 9000 dnat ip to 10.2.0.2:8080" in fill
    assert "ip6 daddr 2001:db8:100::/64 tcp dport 8080 accept" in fill
    assert home.commands.call("devices")[0]["open_ports"]["forwards"][0]["id"] == view["id"]


def test_a_pending_or_denied_device_has_its_forwards_closed(home, tools):
    home.commands.call("forward-add", mac=B, ports="9100")
    assert "9100" not in tools.last_fill()
    [f] = home.commands.call("forwards", mac=B)
    assert not f["open"] and f["why_closed"] == "it is waiting for approval"
    home.commands.call("permit", mac=B)
    reach(home)
    assert "tcp dport 9100 dnat ip to 10.2.0.6:9100" in tools.last_fill()
    home.commands.call("deny", mac=B)
    reach(home)
    assert "9100" not in tools.last_fill()
    assert home.commands.call("forwards", mac=B)[0]["why_closed"] == "it was refused"


def test_a_pause_closes_the_forward_and_resume_opens_it(home, tools):
    home.commands.call("forward-add", mac=A, ports="9000")
    reach(home)
    assert "tcp dport 9000" in tools.last_fill()
    home.commands.call("pause", mac=A, minutes=30)
    reach(home)
    assert "9000" not in tools.last_fill()
    assert home.commands.call("forwards")[0]["why_closed"] == "it is paused"
    home.commands.call("resume", mac=A)
    reach(home)
    assert "tcp dport 9000 dnat ip to 10.2.0.2:9000" in tools.last_fill()


def test_a_forward_follows_the_device_to_its_new_64(home, tools):
    home.commands.call("forward-add", mac=A, ports="9000")
    reach(home)
    assert "ip6 daddr 2001:db8:100::/64" in tools.last_fill()
    from homework.ipv6plan import AddressPlan
    import ipaddress
    old = home.ctx.ipv6
    home.ctx.ipv6 = AddressPlan(ipaddress.IPv6Network("2001:db8:777::/48"))
    home.bus.publish("ipv6_plan", old=old, new=home.ctx.ipv6)
    reach(home)
    assert "ip6 daddr 2001:db8:777::/64 tcp dport 9000 accept" in tools.last_fill()


def test_forgetting_a_device_removes_its_forwards(home, tools):
    home.commands.call("forward-add", mac=B, ports="9100")
    home.commands.call("forget", mac=B)
    assert home.commands.call("forwards") == []


def test_clashing_forwards_are_refused_and_nothing_is_stored(home, tools):
    home.commands.call("forward-add", mac=A, ports="27015-27030", protocol="both")
    with pytest.raises(CommandError, match="already goes to") as err:
        home.commands.call("forward-add", mac=B, ports="27020", protocol="udp")
    assert err.value.status == 409
    home.commands.call("forward-add", mac=B, ports="27031", protocol="udp")
    home.ctx.wan_services["remote access"] = ("udp", 51820)
    with pytest.raises(CommandError, match="router's own, for remote access"):
        home.commands.call("forward-add", mac=B, ports="51820", protocol="both")
    with pytest.raises(CommandError, match="no device with MAC"):
        home.commands.call("forward-add", mac="02:00:00:00:00:99", ports="1")
    assert [f["ports"] for f in home.commands.call("forwards")] == ["27015-27030", "27031"]


def test_forwards_survive_a_restart(tmp_path, clock, tools):
    core = new_home(tmp_path, clock)
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.commands.call("forward-add", mac=A, ports="9000")
    core.stop()
    again = new_home(tmp_path, clock)
    assert [f["ports"] for f in again.commands.call("forwards")] == ["9000"]


# -- may open ports (UPnP, NAT-PMP, PCP) ---------------------------------------------------------
@pytest.fixture
def upnp_home(tmp_path, clock, tools):
    core = new_home(tmp_path, clock, upnp_on=True)
    for mac, port in ((A, 1), (B, 2)):
        join(core, mac, port)
    core.commands.call("permit", mac=A)
    return core


def test_only_a_permitted_device_may_open_ports(upnp_home, tools):
    with pytest.raises(CommandError, match="pending: only a device let into the home") as err:
        upnp_home.commands.call("may-open-ports", mac=B, allowed=True)
    assert err.value.status == 409
    with pytest.raises(CommandError, match="true or false"):
        upnp_home.commands.call("may-open-ports", mac=A, allowed="yes")
    facts = upnp_home.commands.call("may-open-ports", mac=A, allowed=True)
    assert facts["may_open_ports"] is True
    reach(upnp_home)
    assert "add element inet homework_reach upnp4 { 10.2.0.2 }" in tools.last_fill()
    assert "add element inet homework_reach upnp6 { 2001:db8:100::/64 }" in tools.last_fill()


def test_losing_the_permission_or_access_ends_the_devices_mappings(upnp_home, tools):
    daemon = FakeDaemon.made[-1]
    upnp_home.commands.call("permit", mac=B)
    for mac in (A, B):
        upnp_home.commands.call("may-open-ports", mac=mac, allowed=True)
    mine = [Mapping(4, "tcp", 9100, "10.2.0.2", 8080, "game", 0),
            Mapping(6, "udp", 8081, "2001:db8:100::5", 8081, "", 0)]
    theirs = Mapping(4, "udp", 3074, "10.2.0.6", 3074, "", 0)
    daemon.maps = [*mine, theirs]
    upnp_home.commands.call("may-open-ports", mac=A, allowed=False)
    assert daemon.removed == mine and daemon.maps == [theirs]
    assert "10.2.0.2" not in tools.last_fill().split("upnp4", 1)[-1]
    # B's access ends (denied): its mapping goes too, and its permission cannot come back by itself
    upnp_home.commands.call("deny", mac=B)
    reach(upnp_home)
    assert daemon.maps == []
    upnp_home.commands.call("permit", mac=B)
    reach(upnp_home)
    assert "10.2.0.6" in tools.last_fill().split("upnp4", 1)[-1]      # still ticked: allowed again


def test_the_household_closes_one_mapping(upnp_home, tools):
    daemon = FakeDaemon.made[-1]
    upnp_home.commands.call("may-open-ports", mac=A, allowed=True)
    daemon.maps = [Mapping(4, "tcp", 9100, "10.2.0.2", 8080, "game", 0),
                   Mapping(4, "udp", 9200, "10.2.0.2", 9200, "", 0)]
    listed = upnp_home.commands.call("open-ports")
    assert [m["key"] for m in listed[0]["mappings"]] == ["4/tcp/9100/10.2.0.2", "4/udp/9200/10.2.0.2"]
    assert listed[0]["mappings"][0]["mac"] == A
    closed = upnp_home.commands.call("upnp-close", key="4/tcp/9100/10.2.0.2")
    assert [m["port"] for m in closed["closed"]] == [9100]
    with pytest.raises(CommandError, match="no open mapping") as err:
        upnp_home.commands.call("upnp-close", key="4/tcp/9100/10.2.0.2")
    assert err.value.status == 404
    # a forward on a port a mapping holds is refused, naming the device
    with pytest.raises(CommandError, match="open by UPnP for 02:00:00:00:00:0a"):
        upnp_home.commands.call("forward-add", mac=A, ports="9200", protocol="both")


def test_a_backup_carries_the_forwards_and_the_tick_and_refuses_bad_ones():
    from homework.components.backup.fileformat import BackupError
    from homework.components.backup.validate import validate
    good = {"port_forwards": [{"mac": A, "protocol": "both", "first": 27015, "last": 27030, "to_port": 27015,
                               "description": "game", "created": 1.0}],
            "open_ports_allowed": [{"mac": A, "since": 1.0}]}
    validate(good, {})
    for bad, says in (({"protocol": "icmp"}, "tcp, udp or both"), ({"to_port": 9000}, "same ports"),
                      ({"last": 27000}, "ends before it starts"), ({"mac": "zz"}, "MAC"),
                      ({"first": 0}, "first")):
        row = {**good["port_forwards"][0], **bad}
        with pytest.raises(BackupError, match=says):
            validate({"port_forwards": [row]}, {})


def test_a_blocking_usage_limit_closes_the_forward(tmp_path, clock, tools):
    core = new_home(tmp_path, clock, components=("dhcp", "routing", "usage", "reach"))
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.commands.call("forward-add", mac=A, ports="9000")
    reach(core)
    assert "tcp dport 9000" in tools.last_fill()
    core.commands.call("usage-limit", mac=A, allowance="1M", period="day", action="block")
    core.bus.publish("bandwidth", mac=A, ip="", bytes=2_000_000, up=0, down=2_000_000)
    reach(core)
    assert "9000" not in tools.last_fill()
    assert core.commands.call("forwards")[0]["why_closed"] == "it is over its usage limit"
    core.commands.call("usage-lift", mac=A)
    reach(core)
    assert "tcp dport 9000 dnat ip to 10.2.0.2:9000" in tools.last_fill()


def test_ssdp_reaches_the_routers_stack_and_its_solicitations_reach_permitted_devices(tmp_path, clock, tools):
    from homework.flows import LOCAL
    from routingkit import ip_pkt
    core = new_home(tmp_path, clock, upnp_on=True)
    for mac, port in ((A, 1), (B, 2)):
        join(core, mac, port)
    core.commands.call("permit", mac=A)
    ssdp = ip_pkt(1, A, "10.2.0.2", "239.255.255.250", proto=17, dport=1900, eth_dst="01:00:5e:7f:ff:fa")
    assert LOCAL in core.switch.outputs(ssdp)                  # M-SEARCH to miniupnpd (the gate decides)
    ns = {"in_port": LOCAL, "eth_src": "02:00:00:00:00:01", "eth_dst": "33:33:ff:01:00:0a", "eth_type": 0x86DD,
          "ipv6_src": "fe80::1", "ipv6_dst": "ff02::1:ff01:a", "ip_proto": 58, "icmpv6_type": 135, "nw_ttl": 255}
    assert core.switch.outputs(ns) == [1]                     # the permitted device only, not the pending one


def test_devices_with_nothing_open_cost_no_check(home, tools, monkeypatch):
    """A crowd of new devices (thousands of device events) runs no check of what is open,
    which restarted a miniupnpd that had exited once per device; a device with a forward
    still gets one on its decisions."""
    comp = reach(home)
    checks = []
    monkeypatch.setattr(comp, "check", lambda: checks.append(1))
    for i in range(10):           # within the port's new-MAC burst
        join(home, f"02:5c:00:00:01:{i:02x}", 3)
    home.commands.call("permit", mac="02:5c:00:00:01:00")
    assert checks == []
    home.commands.call("forward-add", mac=B, ports="9100")
    checks.clear()
    home.commands.call("permit", mac=B)
    assert checks


def test_a_started_miniupnpd_is_listening_when_start_returns(tmp_path):
    """A device allowed by the household finds the daemon at once: start() returns once the
    (re)started daemon listens, not before (a discovery right after the tick found nothing)."""
    import socket
    import sys
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    slow = tmp_path / "slow-miniupnpd"
    slow.write_text(f"#!{sys.executable}\n"
                    "import re, socket, sys, time\n"
                    "port = int(re.search(r'^http_port=(\\d+)$', open(sys.argv[2]).read(), re.M).group(1))\n"
                    "time.sleep(0.5)\n"
                    "s = socket.socket(); s.bind(('127.0.0.1', port)); s.listen(1); time.sleep(30)\n")
    slow.chmod(0o755)
    daemon = upnp.Miniupnpd(tmp_path / "run", lambda: f"http_port={port}\n", binary=str(slow))
    assert not upnp.listening(port)
    try:
        assert daemon.start()
        assert upnp.listening(port)
    finally:
        daemon.stop()
    assert not upnp.listening(port)
