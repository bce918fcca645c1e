"""what a hostile device on another port can no longer do with forged DHCP, and
what unapproved devices may cost (new-MAC rate limit, pending cap, forgetting)."""
import pytest

from homework.components.dhcp import message as m
from homework.components.dhcp.admission import NewMacGate
from homework.flows import Datapath
from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip
from test_dhcp_server import MAC, join, lease_time, send

ATTACKER_PORT = 2
PORTS = {"br0": 0xFFFFFFFE, "d1": 1, "d2": 2, "d3": 3}


def alerts(core):
    seen = []
    core.bus.subscribe("alert", lambda topic, ev: seen.append(ev))
    return seen


def permitted_victim(core):
    offer, ack = join(core, MAC, port=1)
    core.commands.call("permit", mac=MAC)
    return ack.yiaddr


def lease(core, mac=MAC):
    found = core.ctx.leases.get(mac)
    return found.as_dict() if found else None


def test_forged_renew_from_another_port_is_refused_and_alerts(core):
    ip = permitted_victim(core)
    seen = alerts(core)
    forged = dhcp_frame(MAC, m.REQUEST, src_ip=ip, dst_ip="255.255.255.255", flags=0x8000)
    assert send(core, forged, ATTACKER_PORT) == []
    assert lease(core)["port"] == 1 and lease(core)["active"]
    assert [a["kind"] for a in seen] == ["dhcp-port-mismatch"]
    # The victim's entry flow still names its own port, none names the attacker's.
    routing = core.ctx.component("routing").status()["devices"]
    assert [(d["mac"], d["port"]) for d in routing] == [(MAC, 1)]
    assert core.switch.outputs({"in_port": ATTACKER_PORT, "eth_src": MAC, "eth_type": 0x0800,
                                "ipv4_src": ip, "ipv4_dst": "203.0.113.10", "ip_proto": 6, "tcp_dst": 443}) == []


@pytest.mark.parametrize("form", ["rebind", "init-reboot", "discover"])
def test_other_forged_forms_do_not_move_the_lease(core, form):
    ip = permitted_victim(core)
    frame = {"rebind": dhcp_frame(MAC, m.REQUEST, src_ip=ip, dst_ip="255.255.255.255"),
             "init-reboot": dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, ip)]),
             "discover": dhcp_frame(MAC, m.DISCOVER)}[form]
    assert send(core, frame, ATTACKER_PORT) == []
    assert lease(core)["port"] == 1 and lease(core)["active"]


def test_the_victim_still_renews_on_its_own_port(core):
    ip = permitted_victim(core)
    send(core, dhcp_frame(MAC, m.REQUEST, src_ip=ip, dst_ip="255.255.255.255"), ATTACKER_PORT)
    [(ack, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, src_ip=ip, dst_ip="10.2.0.1"), 1)
    assert ack.msg_type == m.ACK and lease_time(ack) == 3600


def test_a_device_whose_old_port_went_down_may_move(core):
    ip = permitted_victim(core)
    core.port_status("d1", 1, up=False)           # unplugged
    [(ack, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, ip)]), 3)
    assert ack.msg_type == m.ACK and ack.yiaddr == ip
    assert lease(core)["port"] == 3


def test_a_device_whose_lease_ended_may_move(core, clock):
    ip = permitted_victim(core)
    clock.advance(3601)
    core.ctx.component("dhcp").expire_leases()
    [(ack, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, ip)]), 3)
    assert ack.msg_type == m.ACK and lease(core)["port"] == 3


def test_frame_source_must_be_the_client(core):
    permitted_victim(core)
    frame = bytearray(dhcp_frame(MAC, m.DISCOVER))
    frame[6:12] = bytes.fromhex("020000000099")   # chaddr = victim, frame from someone else
    assert send(core, bytes(frame), 1) == []
    assert core.counters.get("dhcp.spoofed_source") == 1


@pytest.mark.parametrize("kind", [m.RELEASE, m.DECLINE])
def test_forged_release_or_decline_from_another_port_is_ignored(core, kind):
    ip = permitted_victim(core)
    seen = alerts(core)
    if kind == m.RELEASE:
        frame = dhcp_frame(MAC, m.RELEASE, src_ip=ip, dst_ip="10.2.0.1")
    else:
        frame = dhcp_frame(MAC, m.DECLINE, options=[opt_ip(50, ip)])
    send(core, frame, ATTACKER_PORT)
    assert lease(core)["active"] and lease(core)["ip"] == ip
    assert seen and seen[0]["kind"].startswith("dhcp-")


def test_release_from_the_lease_port_still_works(core):
    ip = permitted_victim(core)
    send(core, dhcp_frame(MAC, m.RELEASE, src_ip=ip, dst_ip="10.2.0.1"), 1)
    assert not lease(core)["active"]


def test_decline_quarantine_survives_a_restart(tmp_path, clock):
    core = make_core(tmp_path, clock=clock)
    core.datapath_up(Datapath(dpid=1, ports=PORTS))
    offer, ack = join(core, MAC, port=1)
    send(core, dhcp_frame(MAC, m.DECLINE, options=[opt_ip(50, ack.yiaddr)]), 1)
    core.stop()
    core.state.close()
    again = make_core(tmp_path, clock=clock)
    again.datapath_up(Datapath(dpid=1, ports=PORTS))
    # The next new device asks for exactly the declined address and does not get it.
    [(offer2, *_)] = send(again, dhcp_frame("02:00:00:00:00:07", m.DISCOVER, options=[opt_ip(50, ack.yiaddr)]), 2)
    assert offer2.yiaddr != ack.yiaddr


def test_new_macs_per_port_are_rate_limited_and_alert(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, new_macs_burst=5, new_macs_per_minute=60)
    core.datapath_up(Datapath(dpid=1, ports=PORTS))
    seen = alerts(core)
    offers = [send(core, dhcp_frame(f"02:00:00:00:10:{i:02x}", m.DISCOVER), 2) for i in range(50)]
    assert sum(1 for o in offers if o) == 5
    assert [a["kind"] for a in seen] == ["dhcp-flood"]
    # Another port is not affected by this one's flood.
    assert send(core, dhcp_frame("02:00:00:00:20:01", m.DISCOVER), 3)
    # Known devices are never limited.
    assert send(core, dhcp_frame("02:00:00:00:10:00", m.DISCOVER), 2)


def test_a_real_client_that_retries_gets_in_during_a_flood():
    gate = NewMacGate(burst=2, per_second=0.0)
    assert gate.admit(1, "a", 0.0) and gate.admit(1, "b", 0.0)
    flood = [gate.admit(1, f"f{i}", 0.1) for i in range(1000)]
    assert not any(flood)
    assert not gate.admit(1, "real", 0.2)
    assert gate.admit(1, "real", 2.2)          # its retransmission gets in
    assert not any(gate.admit(1, f"g{i}", 3.0) for i in range(100))


def test_new_macs_let_in_elsewhere_spend_the_ports_allowance():
    """homework-dhcpd's own offers (charged here) and the controller's admissions together
    let in what the gate alone would: the burst, then the rate."""
    gate = NewMacGate(burst=2, per_second=1.0)
    gate.charge(1, 0.0)
    gate.charge(1, 0.0)
    assert not gate.admit(1, "a", 0.0)
    for _ in range(10):             # a flood through the daemon: at most one burst of debt
        gate.charge(1, 0.0)
    assert not gate.admit(1, "b", 2.5)      # the debt (one burst at most) is paid back at 1/s
    assert gate.admit(1, "c", 3.0)
    assert gate.admit(2, "d", 0.0)          # another port has its own


def test_pending_devices_are_capped_oldest_forgotten_first(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, max_pending=10, new_macs_burst=1000)
    core.datapath_up(Datapath(dpid=1, ports=PORTS))
    join(core, MAC, port=1)
    core.commands.call("permit", mac=MAC)
    macs = [f"02:00:00:00:30:{i:02x}" for i in range(40)]
    for mac in macs:
        clock.advance(0.01)
        send(core, dhcp_frame(mac, m.DISCOVER), 2)
    states = {d.mac: d.state for d in core.state.devices()}
    assert states[MAC] == "permitted"
    pending = [mac for mac, s in states.items() if s == "pending"]
    assert sorted(pending) == macs[-10:]
    dhcp = core.ctx.component("dhcp")
    assert all(dhcp.get(mac) is None for mac in macs[:30])
    assert len(core.state.execute("SELECT mac FROM devices")) == 11


def test_forget_removes_device_lease_and_flows(core):
    ip = permitted_victim(core)
    assert core.commands.call("forget", mac=MAC) == {"mac": MAC, "forgotten": True}
    assert core.state.get_device(MAC) is None
    assert lease(core) is None
    assert core.ctx.component("routing").status()["devices"] == []
    assert core.state.execute("SELECT * FROM leases WHERE mac=?", (MAC,)) == []
    assert f"{'.'.join(ip.split('.')[:3])}.1/30" not in core.ctx.host.addresses
    core.switch.take_packet_outs()          # the FORCERENEW (components/dhcp/returning.py)
    # It comes back as a new, pending device.
    join(core, MAC, port=1)
    assert core.state.get_device(MAC).state == "pending"


def test_forget_refuses_a_blacklisted_device(core):
    permitted_victim(core)
    core.commands.call("blacklist", mac=MAC)
    from homework.commands import CommandError
    with pytest.raises(CommandError) as err:
        core.commands.call("forget", mac=MAC)
    assert err.value.status == 409
    assert core.state.get_device(MAC).state == "blacklisted"


def test_never_approved_devices_unseen_for_long_are_forgotten(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, forget_unapproved_after=3600)
    core.datapath_up(Datapath(dpid=1, ports=PORTS))
    join(core, MAC, port=1)
    core.commands.call("deny", mac=MAC)              # a decision: kept
    join(core, "02:00:00:00:00:05", port=2)          # never approved
    clock.advance(1800)
    join(core, "02:00:00:00:00:06", port=3)          # seen recently
    clock.advance(1900)
    assert core.devices.forget_unseen() == 1
    assert {d.mac for d in core.state.devices()} == {MAC, "02:00:00:00:00:06"}


def test_the_pending_cap_spares_a_guest_that_finished_dhcp(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, max_pending=5, new_macs_burst=1000)
    core.datapath_up(Datapath(dpid=1, ports=PORTS))
    for i in range(3):
        send(core, dhcp_frame(f"02:00:00:00:40:{i:02x}", m.DISCOVER), 2)
    join(core, MAC, port=1)                     # a real guest mid-flood: DISCOVER + REQUEST
    for i in range(3, 60):
        clock.advance(0.01)
        send(core, dhcp_frame(f"02:00:00:00:40:{i:02x}", m.DISCOVER), 2)
    assert core.state.get_device(MAC).state == "pending"
    assert lease(core)["active"]
    assert core.devices.pending_count() == 5


def test_a_station_may_roam_between_two_radios_but_not_from_a_wired_port(core):
    """ports 1 and 3 are satellites' radios (their link stays up for their other
    stations); port 2 is wired."""
    core.datapath_up(Datapath(dpid=1, ports=PORTS))                 # all three ports up
    core.ctx.is_radio_port = lambda port: port in (1, 3)
    ip = permitted_victim(core)                                     # on port 1, a radio
    [(ack, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, ip)]), 3)
    assert ack.msg_type == m.ACK and ack.yiaddr == ip and lease(core)["port"] == 3
    assert core.counters.get("dhcp.roamed") == 1
    assert send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, ip)]), 2) == []   # wired: refused
    assert lease(core)["port"] == 3


def test_a_station_a_satellite_hears_on_another_radio_takes_its_lease_along_without_asking(core):
    """the satellite agent's station dump says where a station is (radio
    monitor -> `station_at`); radio to radio the lease follows at once, and the routing
    flows with it. A wired port, a radio that is down or a relayed lease are never taken."""
    core.datapath_up(Datapath(dpid=1, ports=PORTS))
    core.ctx.is_radio_port = lambda port: port in (1, 3)
    core.ctx.radio_port = {"wlan0@sat1": 1, "wlan0@sat2": 3, "eth1@sat2": 2}.get
    ip = permitted_victim(core)                                     # on port 1, a radio
    flows_before = {f.match.get("in_port") for f in core.switch.flows if f.match.get("eth_src") == MAC}
    assert 1 in flows_before and 3 not in flows_before
    core.bus.publish("station_at", mac=MAC, ifname="wlan0@sat2", previous="wlan0@sat1")
    assert lease(core)["port"] == 3 and lease(core)["ip"] == ip
    assert core.counters.get("dhcp.roamed_by_radio") == 1
    flows_after = {f.match.get("in_port") for f in core.switch.flows if f.match.get("eth_src") == MAC}
    assert 3 in flows_after and 1 not in flows_after, flows_after
    # a wired port, an unknown radio, or a radio that is down: the lease stays
    for ifname in ("eth1@sat2", "wlan0@sat9", "wlan0"):
        core.bus.publish("station_at", mac=MAC, ifname=ifname, previous="wlan0@sat2")
        assert lease(core)["port"] == 3
    # and it survives a restart of the controller on its new port
    assert core.ctx.state.leases()[0]["port"] == 3


# -- a pre-approved MAC is bound to the first port it is seen on --------------------------------
def test_a_preapproval_holds_on_the_first_port_only(core, clock):
    seen = alerts(core)
    core.commands.call("permit", mac=MAC)                 # pre-approved: never seen
    offer, ack = join(core, MAC, port=1)
    assert lease_time(ack) == 3600 and core.devices.preapproval_port(MAC) == "d1"
    # it comes back on its own port: still itself
    clock.advance(3601)
    core.ctx.component("dhcp").expire_leases()
    [(ack, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, ack.yiaddr)]), 1)
    assert lease_time(ack) == 3600 and core.ctx.state.device_state(MAC) == "permitted"
    # the same MAC from another port, its lease over: the pre-approval does not follow it
    clock.advance(3601)
    core.ctx.component("dhcp").expire_leases()
    [(offer, *_)] = send(core, dhcp_frame(MAC, m.DISCOVER), ATTACKER_PORT)
    assert lease_time(offer) == 30 and core.ctx.state.device_state(MAC) == "pending"
    assert [a["kind"] for a in seen] == ["preapproval-moved"] and "d2" in seen[0]["detail"]
    assert core.devices.preapproval_port(MAC) is None


def test_a_preapproval_that_someone_else_claimed_first_is_theirs_on_their_port_only(core):
    core.commands.call("permit", mac=MAC)
    join(core, MAC, port=ATTACKER_PORT)                   # the impostor, first
    assert core.devices.preapproval_port(MAC) == "d2"
    core.port_status("d2", ATTACKER_PORT, up=False)
    [(offer, *_)] = send(core, dhcp_frame(MAC, m.DISCOVER), 1)    # the real device: the household is asked
    assert lease_time(offer) == 30 and core.ctx.state.device_state(MAC) == "pending"


def test_the_households_own_permit_of_a_seen_device_ends_the_binding(core, clock):
    core.commands.call("permit", mac=MAC)
    offer, ack = join(core, MAC, port=1)
    core.commands.call("permit", mac=MAC)                 # seen now: the household's word about it
    assert core.devices.preapproval_port(MAC) is None
    core.port_status("d1", 1, up=False)
    [(ack, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, ack.yiaddr)]), 3)
    assert lease_time(ack) == 3600 and core.ctx.state.device_state(MAC) == "permitted"
