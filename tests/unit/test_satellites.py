"""The satellite plan: config lines, the satellite's flow table, the router's
patch ports, and the gate that admits listed satellites."""
import pytest

from homework import config
from homework import flows as F
from homework.adapter.switch_gate import LOCAL_PORT, SwitchGate
from homework.satellites import (VLAN_NONE, VLAN_PRESENT, PatchLinks, SatelliteError, flows,
                                 management_address_commands, parse, parse_radio_label, radio_label,
                                 router_commands)

SAT_PORTS = {"sat1": LOCAL_PORT, "up0": 250, "lan1": 1, "wlan0": 2}


def test_config_lines_become_satellites_numbered_in_order():
    a, b = parse(["a1:up0:cable1", "00000000000000a2:up:cable2"])
    assert (a.index, a.dpid, a.uplink, a.router_port) == (1, 0xA1, "up0", "cable1")
    assert (b.index, b.dpid) == (2, 0xA2)
    assert a.vlan(3) == 259 and b.vlan(1) == 513
    assert a.patch_names(3) == ("hws1p3", "hws1p3d") and a.demux_bridge == "hwsat1"


@pytest.mark.parametrize("lines, words", [
    (["a1:up0"], "DPID:UPLINK:ROUTER_PORT"),
    (["xyz:up0:c"], "not hexadecimal"),
    (["0:up0:c"], "not zero"),
    (["11111111111111111:up0:c"], "16 hex digits"),
    (["a1:up 0:c"], "not an interface name"),
    (["a1:up0:c", "A1:up1:d"], "listed twice"),
    (["a1:up0:c", "a2:up1:c"], "already carries"),
    ([f"{i + 1:x}:u:c{i}" for i in range(16)], "at most 15"),
    (["a1:up0:hws1p3"], "must be listed before it"),
    (["a1:up0:c", "a2:up1:hws2p3"], "must be listed before it"),
    (["a1:up0:c", "a2:up1:hws1p300"], "outside 1..254"),
])
def test_bad_config_lines_are_refused_with_the_reason(lines, words):
    with pytest.raises(SatelliteError, match=words):
        parse(lines)
    with pytest.raises(config.ConfigError, match="satellites.switches"):
        config.parse({"satellites": {"switches": lines}})


def test_the_satellite_carries_each_device_port_alone_to_its_uplink_and_back():
    sat, = parse(["a1:up0:cable1"])
    plan = flows(sat, SAT_PORTS)
    assert isinstance(plan[0], F.FlowDelete) and plan[0].cookie_mask == 0      # a clean table first
    mods = [m for m in plan if isinstance(m, F.FlowMod)]
    up = {m.match["in_port"]: m.actions for m in mods if m.match.get("in_port") not in (250, None)}
    down = {m.match["vlan_vid"]: m.actions for m in mods if m.match.get("in_port") == 250}
    # its own stack (LOCAL) reaches the router untagged, the management link, and only it
    assert up.pop(F.LOCAL) == (F.Output(250),) and down.pop(VLAN_NONE) == (F.Output(F.LOCAL),)
    assert up == {1: (F.PushVlan(0x8100), F.SetField("vlan_vid", VLAN_PRESENT | 257), F.Output(250)),
                  2: (F.PushVlan(0x8100), F.SetField("vlan_vid", VLAN_PRESENT | 258), F.Output(250))}
    assert down == {VLAN_PRESENT | 257: (F.PopVlan(), F.Output(1)), VLAN_PRESENT | 258: (F.PopVlan(), F.Output(2))}
    # nothing port to port, and everything else dropped
    assert all(a.port == 250 for acts in up.values() for a in acts if isinstance(a, F.Output))
    assert [m for m in mods if not m.match] == [F.FlowMod(match={}, priority=0, cookie=mods[-1].cookie)]


def test_a_satellite_without_its_uplink_or_with_a_port_no_vlan_can_name_is_refused():
    sat, = parse(["a1:up0:cable1"])
    with pytest.raises(SatelliteError, match="uplink"):
        flows(sat, {"lan1": 1})
    assert 300 not in [m.match.get("in_port") for m in flows(sat, {**SAT_PORTS, "p300": 300})
                       if isinstance(m, F.FlowMod)]
    with pytest.raises(SatelliteError, match="outside"):
        sat.vlan(255)


def test_the_router_gets_a_patch_port_per_satellite_port_through_the_demux_bridge():
    sat, = parse(["a1:up0:cable1"])
    args = router_commands(sat, SAT_PORTS, "br0", "netdev")
    text = " ".join(args)
    assert "add-br hwsat1 -- set bridge hwsat1 datapath_type=netdev fail_mode=standalone" in text
    assert "add-port hwsat1 cable1 -- set port cable1 vlan_mode=native-untagged tag=256" in text
    # the management link: untagged frames of the cable reach the router's own port, not br0
    assert "add-port hwsat1 hwsat1m -- set port hwsat1m tag=256 -- set interface hwsat1m type=internal" in text
    assert "add-port br0 hwsat1m" not in text
    assert ("add-port br0 hws1p1 -- set interface hws1p1 type=patch options:peer=hws1p1d ofport_request=4353"
            in text)                                                # 4096 + VLAN 257: the same after a restart
    assert "add-port hwsat1 hws1p2d tag=258 -- set interface hws1p2d type=patch options:peer=hws1p2" in text
    assert "up0" not in text and "250" not in text


def test_the_gate_admits_a_listed_satellite_and_never_as_the_bridge():
    sats = parse(["a1:up0:cable1"])
    gate = SwitchGate("br0", sats)
    assert gate.satellite(0xA1, SAT_PORTS) == (sats[0], "")
    assert gate.satellite(0xA2, SAT_PORTS) == (None, "")                   # not listed: the bridge's rules
    sat, why = gate.satellite(0xA1, {"br0": LOCAL_PORT, "up0": 1})
    assert sat is None and "is the bridge" in why
    sat, why = gate.satellite(0xA1, {"sat1": LOCAL_PORT, "lan1": 1})
    assert sat is None and "no uplink port 'up0'" in why
    assert gate.admit(0x1, {"br0": LOCAL_PORT}) == (True, "")               # the bridge is unaffected


def test_a_patch_pair_whose_satellite_port_has_gone_is_removed_and_others_are_kept():
    sat, = parse(["a1:up0:cable1"])
    existing = {"cable1", "hws1p1d", "hws1p7d", "hws2p7d"}
    text = " ".join(router_commands(sat, SAT_PORTS, "br0", "netdev", existing))
    assert "--if-exists del-port br0 hws1p7 -- --if-exists del-port hwsat1 hws1p7d" in text
    assert "del-port br0 hws1p1 " not in text and "hws2p7" not in text      # still wanted / not ours


def test_the_router_sees_a_patch_port_up_only_while_its_satellite_port_has_link():
    sat, = parse(["a1:up0:cable1"])
    links = PatchLinks()
    # the satellite connects first: lan1 has link, wlan0 not; the router has no patch ports yet
    assert links.satellite_ports(sat, SAT_PORTS, down={"wlan0"}) == []
    # the bridge connects with both patch ports: wlan0's is left out of what the pipeline sees
    assert links.bridge_ports({"br0": LOCAL_PORT, "hws1p1": 7, "hws1p2": 8}) == {"br0": LOCAL_PORT, "hws1p1": 7}
    # wlan0 gets link, lan1 loses it: two changes, by router port number
    assert links.satellite_ports(sat, SAT_PORTS, down={"lan1"}) == [("hws1p1", 7, False), ("hws1p2", 8, True)]
    assert links.satellite_ports(sat, SAT_PORTS, down={"lan1"}) == []          # no change, nothing said
    # a patch port created while its satellite port has no link arrives down
    assert links.router_port("hws1p1", 9, True) is False
    assert links.router_port("hws1p2", 8, True) is True
    assert links.router_port("eth1", 3, True) is True                          # not a satellite port
    # lan1 is removed from the satellite: forgotten, and its patch port (when deleted) is simply down
    assert links.satellite_ports(sat, {"up0": 250, "wlan0": 2}, down=set()) == []
    assert "hws1p1" not in links.link and links.router_port("hws1p1", 9, False) is False


def test_a_satellite_taken_off_the_router_loses_every_patch_port_but_not_its_management_link():
    from homework.satellites import unplug_commands
    sat, = parse(["a1:up0:cable1"])
    args = unplug_commands(sat, "br0", {"cable1", "hwsat1m", "hws1p1d", "hws1p2d", "hws2p1d"})
    assert " ".join(args) == ("--if-exists del-port br0 hws1p1 -- --if-exists del-port hwsat1 hws1p1d -- "
                              "--if-exists del-port br0 hws1p2 -- --if-exists del-port hwsat1 hws1p2d")
    assert unplug_commands(sat, "br0", {"cable1", "hwsat1m"}) == []


def test_the_router_answers_on_the_management_link_at_fe80_1_and_believes_no_advertisement():
    sat, = parse(["a1:up0:cable1"])
    cmds = [" ".join(c) for c in management_address_commands(sat, "netdev")]
    assert "ip -6 addr replace fe80::1/64 dev hwsat1m nodad" in cmds
    assert "sysctl -q -w net.ipv6.conf.hwsat1m.accept_ra=0" in cmds
    assert "ethtool -K hwsat1m tx off" in cmds
    assert not any("ethtool" in c for c in (" ".join(c) for c in management_address_commands(sat, "system")))


def test_the_router_holds_a_satellites_own_cable_up_but_not_a_cable_inside_a_tree():
    from homework.satellites import cable_up_command
    root, child = parse(["a1:uplink:enp3s0", "a2:uplink:hws1p7"])
    assert cable_up_command(root) == ["ip", "link", "set", "enp3s0", "up"]
    assert cable_up_command(child) is None


def test_a_satellite_radio_is_named_and_found_on_the_router():
    assert radio_label(2, "wlan0") == "wlan0@sat2" and parse_radio_label("wlan0@sat2") == (2, "wlan0")
    assert parse_radio_label("wlan0") is None and parse_radio_label("@sat2") is None
    assert parse_radio_label("wlan0@satx") is None
    [sat] = parse(["00000000000000a2:up:cable"])
    links = PatchLinks(("wlan0",))
    links.satellite_ports(sat, {"up": 250, "wlan0": 200, "eth1": 1}, down=set())
    patch = sat.patch_names(200)[0]
    links.router_port(patch, sat.router_ofport(200), True)
    links.router_port(sat.patch_names(1)[0], sat.router_ofport(1), True)
    assert links.radio_router_port(radio_label(sat.index, "wlan0")) == sat.router_ofport(200)
    assert links.radio_router_port(radio_label(sat.index, "eth1")) is None      # not a radio
    assert links.radio_router_port(radio_label(sat.index + 1, "wlan0")) is None
    links.satellite_ports(sat, {"up": 250, "wlan0": 200, "eth1": 1}, down={"wlan0"})
    assert links.radio_router_port(radio_label(sat.index, "wlan0")) is None     # no link


def test_a_satellite_behind_another_is_carried_through_its_parent_with_its_own_vlans():
    from homework.satellites import VLAN_RANGE_MASK, management_commands, subtree, unplug_commands
    sats = parse(["a1:up0:cable1", "a2:up:hws1p3", "a3:up:hws2p5"])      # 3 behind 2 behind 1
    parent, child, grandchild = sats
    assert child.parent == (1, 3) and grandchild.parent == (2, 5) and parent.parent is None
    # one demux bridge, the root's, sorts every VLAN of the tree
    assert parent.demux_bridge == child.demux_bridge == grandchild.demux_bridge == "hwsat1"
    assert subtree(parent, sats) == {3: (2, (2, 3))} and subtree(child, sats) == {5: (3, (3,))}
    assert subtree(grandchild, sats) == {}
    # the child has no cable of its own on the router: only its management port, VLAN 512
    text = " ".join(management_commands(child, "netdev"))
    assert "add-port hwsat1 hwsat2m -- set port hwsat2m tag=512" in text and "hws1p3" not in text
    # the parent's port 3: the child's untagged frames become VLAN 512, and the VLANs of the
    # child and the grandchild pass as they are, both ways; no device flows on that port
    plan = flows(parent, {"up0": 250, "lan1": 1, "lan3": 3}, subtree(parent, sats))
    port3 = [m for m in plan if isinstance(m, F.FlowMod) and (m.match.get("in_port") == 3 or
                                                             m.actions[-1:] == (F.Output(3),))]
    up = {str(m.match["vlan_vid"]): m.actions for m in port3 if m.match["in_port"] == 3}
    down = {str(m.match["vlan_vid"]): m.actions for m in port3 if m.match["in_port"] == 250}
    assert up == {str(VLAN_NONE): (F.PushVlan(0x8100), F.SetField("vlan_vid", VLAN_PRESENT | 512), F.Output(250)),
                  str((VLAN_PRESENT | 512, VLAN_RANGE_MASK)): (F.Output(250),),
                  str((VLAN_PRESENT | 768, VLAN_RANGE_MASK)): (F.Output(250),)}
    assert down == {str(VLAN_PRESENT | 512): (F.PopVlan(), F.Output(3)),
                    str((VLAN_PRESENT | 512, VLAN_RANGE_MASK)): (F.Output(3),),
                    str((VLAN_PRESENT | 768, VLAN_RANGE_MASK)): (F.Output(3),)}
    pop_mgmt = next(m for m in port3 if m.match == {"in_port": 250, "vlan_vid": VLAN_PRESENT | 512})
    assert pop_mgmt.priority > 100           # above the pass-through of the child's whole range
    assert not any(F.PushVlan(0x8100) in m.actions and F.SetField("vlan_vid", VLAN_PRESENT | 259) in m.actions
                   for m in plan if isinstance(m, F.FlowMod))      # port 3 is not a device port (VLAN 259)
    # ... nor a port of the router's bridge
    text = " ".join(router_commands(parent, {"up0": 250, "lan1": 1, "lan3": 3}, "br0", "netdev",
                                    {"cable1"}, frozenset({3})))
    assert "add-port br0 hws1p1 " in text and "hws1p3" not in text
    assert unplug_commands(parent, "br0", {"cable1", "hws1p1d", "hws2p1d"}) == [
        "--if-exists", "del-port", "br0", "hws1p1", "--", "--if-exists", "del-port", "hwsat1", "hws1p1d"]


def test_a_child_whose_cable_lost_its_link_keeps_only_its_management_link_through_its_parent():
    from homework.satellites import subtree
    sats = parse(["a1:up0:cable1", "a2:up:hws1p3", "a3:up:hws2p5"])
    parent = sats[0]
    ports = {"up0": 250, "lan1": 1, "lan3": 3}
    open_plan = flows(parent, ports, subtree(parent, sats))
    locked_plan = flows(parent, ports, subtree(parent, sats), locked={2})
    port3 = [m for m in locked_plan if isinstance(m, F.FlowMod) and (m.match.get("in_port") == 3 or
                                                                    m.actions[-1:] == (F.Output(3),))]
    # the child's own stack still reaches the router (VLAN 512 both ways), nothing else of it
    assert sorted(m.match["vlan_vid"] for m in port3) == sorted([VLAN_PRESENT | 512, VLAN_NONE])
    assert len(open_plan) - len(locked_plan) == 4           # its range and the grandchild's, both ways
    # the parent's own device port is untouched
    assert [m for m in open_plan if isinstance(m, F.FlowMod) and m.match.get("in_port") == 1] == \
           [m for m in locked_plan if isinstance(m, F.FlowMod) and m.match.get("in_port") == 1]
