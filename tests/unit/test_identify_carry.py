"""A device let in as the device it was (identify's join) takes every component's settings
for it: website rules and mode (dns), priority (qos), its schedules, its allowance and
burst alert (usage), its port forwards and may-open-ports (reach). Each component moves its
own (Component.carry_device); the old address keeps nothing."""
import pytest

from conftest import make_core
from dhcpframes import dhcp_frame
from homework.components.dhcp import message as m
from homework.components.qos import apply
from homework.components.reach import component as reach_component
from homework.components.reach import upnp
from homework.flows import Datapath
from test_dhcp_server import join, send
from test_identify import IPHONE_OPTIONS
from test_qos_api import Tools as QosTools
from test_reach import FakeDaemon, Tools as ReachTools

TOMS = "02:00:00:00:00:61"          # Tom's iPhone as it was let in
BACK = "3e:00:00:00:00:62"          # ... back with a new private address


@pytest.fixture
def core(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(apply, "run_tool", QosTools())
    monkeypatch.setattr(upnp, "run", ReachTools())
    monkeypatch.setattr(reach_component, "Miniupnpd", FakeDaemon)
    core = make_core(tmp_path, components=("dhcp", "routing", "dns", "schedules", "usage", "reach", "identify"),
                     clock=clock, timezone="UTC", dns_control="", dns_intercept=False, qos_enabled=True,
                     qos_down_kbit=19000, qos_up_kbit=4750, hwdb_enabled=False)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


def test_the_join_carries_rules_priority_schedules_allowance_and_forwards(core):
    call = core.commands.call
    join(core, TOMS, 1, hostname=b"Toms-iPhone")
    send(core, dhcp_frame(TOMS, m.DISCOVER, options=IPHONE_OPTIONS))
    call("set-meta", mac=TOMS, name="Tom's iPhone", owner="Tom", type="phone")
    call("permit", mac=TOMS)
    call("deny-dns", mac=TOMS, domain="games.example")
    call("permit-dns", mac=TOMS, domain="school.example")
    call("qos-device", mac=TOMS, cls="high")
    call("schedule-add", mac=TOMS, days="sun-thu", start="21:30", end="07:00")
    call("usage-limit", mac=TOMS, allowance="2G", period="day")
    call("usage-burst", mac=TOMS, size="500M", minutes=10)
    call("forward-add", mac=TOMS, ports="8080")
    send(core, dhcp_frame(BACK, m.DISCOVER, options=IPHONE_OPTIONS), port=2)

    answer = call("identify-join", mac=BACK, as_mac=TOMS)
    assert sorted(answer["carried"]) == sorted(["website rules", "priority", "schedules", "allowance",
                                                "burst alert", "port forwards"])
    rules = {(r["domain"], r["action"]) for r in call("dns-rules", mac=BACK)["rules"]}
    assert rules == {("games.example", "deny"), ("school.example", "allow")}
    assert core.ctx.facts_about(BACK)["priority"] == "high"
    assert [(s["mac"], s["days"]) for s in call("schedules", mac=BACK)] == [(BACK, "mon,tue,wed,thu,sun")]
    assert [lim["target"] for lim in call("usage-limits")] == [BACK]
    assert [b["mac"] for b in call("usage-bursts")] == [BACK]
    assert [(f["mac"], f["first"]) for f in call("forwards")] == [(BACK, 8080)]
    # the old address keeps nothing
    assert not core.ctx.state.execute("SELECT 1 FROM dns_rules WHERE owner=?", (TOMS,))
    assert not core.ctx.state.execute("SELECT 1 FROM qos_devices WHERE mac=?", (TOMS,))
    assert not core.ctx.state.execute("SELECT 1 FROM schedules WHERE target=?", (TOMS,))
    assert not core.ctx.state.execute("SELECT 1 FROM port_forwards WHERE mac=?", (TOMS,))


def test_a_join_with_nothing_to_carry_carries_nothing(core):
    join(core, TOMS, 1, hostname=b"Toms-iPhone")
    send(core, dhcp_frame(TOMS, m.DISCOVER, options=IPHONE_OPTIONS))
    core.commands.call("permit", mac=TOMS)
    send(core, dhcp_frame(BACK, m.DISCOVER, options=IPHONE_OPTIONS), port=2)
    assert core.commands.call("identify-join", mac=BACK, as_mac=TOMS)["carried"] == []
