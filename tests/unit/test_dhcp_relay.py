"""Clients behind a DHCP relay agent (giaddr set): a lease, answered to the relay, but no
router address on the bridge and no per-device flows (the client is not on our port)."""
import sqlite3

import pytest

from homework.components.dhcp import message as m
from homework.flows import Datapath, FlowDelete, FlowMod
from homework.packets import parse_udp
from homework.state import StateStore
from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip
from test_dhcp_server import MAC, join, send

RELAY = "10.2.0.2"


@pytest.fixture
def core(tmp_path, clock):
    """The usual core, with RELAY configured as a relay agent (none are by default)."""
    core = make_core(tmp_path, clock=clock, dhcp_relays=(RELAY,))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


def relayed(mac, msg_type, **kw):
    return dhcp_frame(mac, msg_type, src_ip=RELAY, dst_ip="255.255.255.255", ciaddr="0.0.0.0", giaddr=RELAY, **kw)


def join_relayed(core, mac="02:00:00:00:01:01", port=1):
    [(offer, out, eth, ip)] = send(core, relayed(mac, m.DISCOVER), port)
    [(ack, *_)] = send(core, relayed(mac, m.REQUEST, options=[opt_ip(50, offer.yiaddr),
                                                             opt_ip(54, offer.server_id)]), port)
    return offer, ack, out, ip


def per_device_flows(core):
    return [d for d in core.switch.messages if isinstance(d, (FlowMod, FlowDelete))]


def test_relayed_client_gets_a_lease_answered_to_the_relay(core):
    offer, ack, out, ip = join_relayed(core)
    assert offer.msg_type == m.OFFER and ack.msg_type == m.ACK
    assert ip.dst_ip == RELAY and parse_udp(ip.payload).dport == 67
    assert out.actions[0].port == 1
    lease = core.ctx.component("dhcp").get("02:00:00:00:01:01")
    assert lease.active and lease.relay == RELAY and lease.ip == ack.yiaddr


def test_relayed_client_gets_no_router_address_and_no_flows(core):
    before = len(per_device_flows(core))
    join_relayed(core, "02:00:00:00:01:01")
    join_relayed(core, "02:00:00:00:01:02")
    assert core.ctx.host.addresses == set()
    assert len(per_device_flows(core)) == before
    assert core.ctx.component("routing").status()["devices"] == []
    # A direct client next to them still gets both.
    join(core, MAC)
    assert core.ctx.host.addresses == {f"{core.ctx.component('dhcp').get(MAC).router}/30"}
    assert [d["mac"] for d in core.ctx.component("routing").status()["devices"]] == [MAC]


def test_relayed_lease_survives_restart_without_router_address(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, dhcp_relays=(RELAY,))
    core.datapath_up(Datapath(dpid=1, ports={}))
    join_relayed(core, "02:00:00:00:01:01")
    join(core, MAC)
    core.state.close()
    again = make_core(tmp_path, clock=clock, dhcp_relays=(RELAY,))
    again.datapath_up(Datapath(dpid=1, ports={}))
    dhcp = again.ctx.component("dhcp")
    assert dhcp.get("02:00:00:00:01:01").relay == RELAY
    assert again.ctx.host.addresses == {f"{dhcp.get(MAC).router}/30"}
    assert [d["mac"] for d in again.ctx.component("routing").status()["devices"]] == [MAC]


def test_client_moving_from_relay_to_our_port_gets_address_and_flows(core, clock):
    mac = "02:00:00:00:01:01"
    offer, ack, *_ = join_relayed(core, mac)
    assert core.ctx.host.addresses == set()
    # Now directly on port 2: INIT-REBOOT with the address it has.
    [(ack2, *_)] = send(core, dhcp_frame(mac, m.REQUEST, options=[opt_ip(50, ack.yiaddr)]), 2)
    assert ack2.msg_type == m.ACK
    dhcp = core.ctx.component("dhcp")
    assert dhcp.get(mac).relay == ""
    assert core.ctx.host.addresses == {f"{dhcp.get(mac).router}/30"}
    assert [d["port"] for d in core.ctx.component("routing").status()["devices"]] == [2]
    # A relayed message never touches a lease that lives on a local port ...
    send(core, relayed(mac, m.REQUEST, options=[opt_ip(50, ack.yiaddr)]))
    assert [d["port"] for d in core.ctx.component("routing").status()["devices"]] == [2]
    # ... so it goes back behind the relay once that local lease has ended: address and flows go.
    send(core, dhcp_frame(mac, m.RELEASE, src_ip=ack.yiaddr, dst_ip="10.2.0.1"), 2)
    send(core, relayed(mac, m.REQUEST, options=[opt_ip(50, ack.yiaddr)]))
    assert dhcp.get(mac).relay == RELAY and dhcp.get(mac).active
    assert core.ctx.host.addresses == set()
    assert core.ctx.component("routing").status()["devices"] == []


def test_old_database_without_relay_column_is_migrated(tmp_path):
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE leases (mac TEXT PRIMARY KEY, block INTEGER NOT NULL UNIQUE, "
                      "expires REAL NOT NULL, port INTEGER NOT NULL DEFAULT 0, hostname TEXT NOT NULL DEFAULT '');"
                      "INSERT INTO leases VALUES ('02:00:00:00:00:01', 3, 5.0, 1, 'x');")
    con.close()
    store = StateStore(db)
    [row] = store.leases()
    assert row["block"] == 3 and row["relay"] == ""


def test_relay_not_configured_is_ignored(tmp_path, clock):
    core = make_core(tmp_path, clock=clock)
    core.datapath_up(Datapath(dpid=1, ports={"d1": 1}))
    assert send(core, relayed("02:00:00:00:01:01", m.DISCOVER), 1) == []
    assert core.counters.get("dhcp.relay_refused") == 1
    assert core.state.get_device("02:00:00:00:01:01") is None


def test_relay_cannot_touch_a_lease_on_a_local_port(core):
    join(core, MAC)
    before = core.ctx.component("dhcp").get(MAC)
    assert send(core, relayed(MAC, m.REQUEST, options=[opt_ip(50, before.ip)]), 2) == []
    assert send(core, relayed(MAC, m.DISCOVER), 2) == []
    after = core.ctx.component("dhcp").get(MAC)
    assert after.port == before.port and after.relay == "" and after.active
