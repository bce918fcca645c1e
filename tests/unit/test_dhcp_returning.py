"""A forgotten device that still believes in its hour-long lease is not stranded: it is
asked to renew (FORCERENEW), its first packet makes it pending again on its old address,
its renewal is NAKed and its next DISCOVER gets its old block, and permitting its MAC
again lets it straight back in. On the strict fake switch."""
from homework.components.dhcp import message as m
from homework.components.dhcp.returning import FORCERENEW
from homework.flows import CONTROLLER, LOCAL, PacketIn
from homework.packets import parse_ethernet, parse_ipv4, parse_udp
from homework.pipeline import PRIO_DHCP_RETURNING
from routingkit import arp_pkt, from_router, ip_frame, ip_pkt, join, routing_core
from dhcpframes import dhcp_frame, opt_ip

A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
WEB = "203.0.113.10"


def home(tmp_path, clock):
    core = routing_core(tmp_path, clock)
    ip = join(core, A, 1)
    core.commands.call("permit", mac=A)
    # its renewal gives it the permitted hour
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(A, m.REQUEST, src_ip=ip, dst_ip="10.2.0.1")))
    core.switch.take_packet_outs()
    assert core.ctx.leases.get(A).expires - clock.now == 3600
    return core, ip


def dhcp_out(core):
    out = []
    for p in core.switch.take_packet_outs():
        eth = parse_ethernet(p.data)
        if eth.ethertype == 0x0800:
            msg = m.parse(parse_udp(parse_ipv4(eth.payload).payload).payload)
            out.append((msg.msg_type, parse_ipv4(eth.payload).dst, p))
    return out


def state(core, mac):
    return core.ctx.state.device_state(mac)


def test_forget_asks_it_to_renew_and_watches_for_it_until_its_lease_would_end(tmp_path, clock):
    core, ip = home(tmp_path, clock)
    core.commands.call("forget", mac=A)
    assert state(core, A) is None and core.ctx.leases.get(A) is None
    [(kind, dst, _)] = dhcp_out(core)
    assert kind == FORCERENEW and dst == bytes(map(int, ip.split(".")))
    # everything it sends but DHCP comes to the controller
    assert core.switch.outputs(ip_pkt(1, A, ip, WEB, dport=443)) == [CONTROLLER]
    assert core.switch.outputs(arp_pkt(1, A, ip, "10.2.0.1")) == [CONTROLLER]
    # ...but not from another port, and not someone else's
    assert core.switch.outputs(ip_pkt(2, A, ip, WEB)) == []
    assert [f for f in core.switch.flows if f.priority == PRIO_DHCP_RETURNING]
    # its hour passes: the watch ends
    clock.advance(3601)
    core.ctx.component("dhcp").expire_leases()
    assert not [f for f in core.switch.flows if f.priority == PRIO_DHCP_RETURNING]


def test_a_renewal_answering_the_forcerenew_at_once_is_never_left_without_its_lease(tmp_path, clock):
    """The FORCERENEW's answer may be handled while forget still waits on a socket (one
    loop): answered the moment the FORCERENEW leaves, the renewal finds the device
    forgotten (NAK: start over), not a lease the rest of forget then takes away."""
    core, ip = home(tmp_path, clock)
    dhcp = core.ctx.component("dhcp")
    real_send, answered = dhcp.ctx.send, []

    def send(decisions):
        real_send(decisions)
        if not answered and any(k == FORCERENEW for k, _, _ in dhcp_out(core)):
            answered.append(True)         # dhcpcd renews the moment it is asked
            core.packet_in(PacketIn(in_port=1, data=dhcp_frame(A, m.REQUEST, src_ip=ip, dst_ip="10.2.0.1")))
            answered.extend(k for k, _, _ in dhcp_out(core))
    dhcp.ctx.send = send
    core.commands.call("forget", mac=A)
    dhcp.ctx.send = real_send
    assert answered[:1] == [True]
    lease = core.ctx.leases.get(A)
    # an ACK must leave it a lease; else it was told to start over (its old block kept
    # for its DISCOVER)
    assert (m.ACK in answered and lease is not None and lease.active) or \
        (m.NAK in answered and (lease is None or not lease.active)), (answered, lease)


def test_its_first_packet_makes_it_pending_again_on_its_old_address(tmp_path, clock):
    core, ip = home(tmp_path, clock)
    core.commands.call("forget", mac=A)
    dhcp_out(core)
    frame = ip_frame(A, "02:00:00:00:00:01", ip, WEB, 17, b"\0" * 8)
    core.packet_in(PacketIn(in_port=1, data=frame))
    assert state(core, A) == "pending"
    lease = core.ctx.leases.get(A)
    assert lease.ip == ip and lease.active and lease.expires - clock.now == 30     # a pending device's lease
    # pending: its gateway's services, the page; not the internet; the watch is gone
    assert core.switch.outputs(ip_pkt(1, A, ip, "10.2.0.1", dport=80)) == [LOCAL]
    assert core.switch.outputs(ip_pkt(1, A, ip, WEB, dport=443)) == []
    assert not [f for f in core.switch.flows if f.priority == PRIO_DHCP_RETURNING]
    assert [k for k, _, _ in dhcp_out(core)] == [FORCERENEW]          # asked to renew once more
    # ours ends while it still believes in its hour: its next packet brings it back again
    clock.advance(31)
    core.ctx.component("dhcp").expire_leases()
    assert core.ctx.leases.get(A) is None or not core.ctx.leases.get(A).active
    assert core.switch.outputs(ip_pkt(1, A, ip, WEB, dport=443)) == [CONTROLLER]
    core.packet_in(PacketIn(in_port=1, data=frame))
    assert core.ctx.leases.get(A).active and core.ctx.leases.get(A).ip == ip
    dhcp_out(core)
    # its renewal gets the pending lease; then nothing more to watch for
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(A, m.REQUEST, src_ip=ip, dst_ip="10.2.0.1")))
    [(kind, _, ack)] = dhcp_out(core)
    assert kind == m.ACK
    assert core.ctx.leases.get(A).expires - clock.now == 30
    clock.advance(31)
    core.ctx.component("dhcp").expire_leases()
    assert not [f for f in core.switch.flows if f.priority == PRIO_DHCP_RETURNING]


def test_its_renewal_is_naked_and_its_discover_gets_its_old_block(tmp_path, clock):
    core, ip = home(tmp_path, clock)
    join(core, B, 2)
    core.commands.call("forget", mac=A)
    dhcp_out(core)
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(A, m.REQUEST, src_ip=ip, dst_ip="10.2.0.1")))
    assert [k for k, _, _ in dhcp_out(core)] == [m.NAK]
    assert not [f for f in core.switch.flows if f.priority == PRIO_DHCP_RETURNING]
    assert join(core, A, 1) == ip and state(core, A) == "pending"


def test_init_reboot_gets_its_old_address(tmp_path, clock):
    core, ip = home(tmp_path, clock)
    core.commands.call("forget", mac=A)
    dhcp_out(core)
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(A, m.REQUEST, options=[opt_ip(50, ip)])))
    assert [k for k, _, _ in dhcp_out(core)] == [m.ACK]
    assert core.ctx.leases.get(A).ip == ip and state(core, A) == "pending"


def test_permitting_its_mac_again_lets_it_straight_back_in(tmp_path, clock):
    core, ip = home(tmp_path, clock)
    core.commands.call("forget", mac=A)
    dhcp_out(core)
    assert core.switch.outputs(ip_pkt(1, A, ip, WEB, dport=443)) == [CONTROLLER]
    core.commands.call("permit", mac=A)
    assert state(core, A) == "permitted"
    assert core.ctx.leases.get(A).ip == ip and core.ctx.leases.get(A).active
    assert core.switch.outputs(ip_pkt(1, A, ip, WEB, dport=443)) == [LOCAL]       # online at once
    assert core.switch.outputs(from_router(WEB, ip, sport=443)) == [1]


def test_a_flood_from_a_forgotten_mac_meets_the_new_device_limits(tmp_path, clock):
    core, ip = home(tmp_path, clock)
    core.commands.call("forget", mac=A)
    watch = [f for f in core.switch.flows if f.priority == PRIO_DHCP_RETURNING]
    assert watch and watch[0].meter                       # metered towards the controller


def test_a_lease_of_a_device_no_longer_permitted_is_cut_short_at_start(tmp_path, clock):
    """A restore (or a decision while the controller was down) made a device with an hour
    pending: it holds a pending lease, is asked to renew, and is not stranded when ours ends."""
    from conftest import make_core
    from homework.flows import Datapath
    core, ip = home(tmp_path, clock)
    core.state.set_device_state(A, "pending")          # as a restore writes it
    core.stop()
    core.state.close()
    again = make_core(tmp_path, components=("dhcp", "routing"), clock=clock)
    lease = again.ctx.leases.get(A)
    assert lease.active and lease.expires - clock.now == 30 and lease.ip == ip
    again.datapath_up(Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1, "d2": 2}))
    assert FORCERENEW in [k for k, _, _ in dhcp_out(again)]
    clock.advance(31)
    again.ctx.component("dhcp").expire_leases()
    assert again.switch.outputs(ip_pkt(1, A, ip, WEB, dport=443)) == [CONTROLLER]      # watched
