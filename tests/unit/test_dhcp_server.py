"""The DHCP component driven by packets, checked by what it sends and stores."""
import struct

from homework.components.dhcp import message as m
from homework.flows import CONTROLLER, LOCAL, Datapath, PacketIn
from homework.packets import parse_ethernet, parse_ipv4, parse_udp
from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip

MAC = "02:00:00:00:00:01"
MAC2 = "02:00:00:00:00:02"


def send(core, frame, port=1):
    core.packet_in(PacketIn(in_port=port, data=frame))
    outs = core.switch.take_packet_outs()
    replies = []
    for out in outs:
        eth = parse_ethernet(out.data)
        if eth.ethertype != 0x0800:   # e.g. routing's Router Advertisement (IPv6 on)
            continue
        ip = parse_ipv4(eth.payload)
        if ip.proto != 17:   # not DHCP: e.g. routing's IGMP query to a newly permitted device
            continue
        replies.append((m.parse(parse_udp(ip.payload).payload), out, eth, ip))
    return replies


def lease_time(msg):
    return struct.unpack("!I", msg.options[m.OPT_LEASE_TIME])[0]


def join(core, mac=MAC, port=1, hostname=b"laptop"):
    [(offer, *_)] = send(core, dhcp_frame(mac, m.DISCOVER, options=[(12, hostname)]), port)
    request = dhcp_frame(mac, m.REQUEST, options=[opt_ip(50, offer.yiaddr), opt_ip(54, offer.server_id)])
    [(ack, *_)] = send(core, request, port)
    return offer, ack


def test_dhcp_requests_go_to_controller(core):
    flow = core.switch.lookup({"in_port": 1, "eth_type": 0x0800, "ip_proto": 17, "udp_dst": 67})
    assert flow and flow.actions[0].port == CONTROLLER
    # and everything else is dropped by default
    assert core.switch.outputs({"in_port": 1, "eth_type": 0x0800, "ip_proto": 6, "tcp_dst": 80}) == []


def test_full_exchange_gives_a_slash30_with_all_options(core):
    offer, ack = join(core)
    assert offer.msg_type == m.OFFER and ack.msg_type == m.ACK
    assert ack.yiaddr == "10.2.0.2"
    assert ack.options[m.OPT_SUBNET_MASK] == bytes([255, 255, 255, 252])
    assert ack.options[m.OPT_ROUTER] == bytes([10, 2, 0, 1])
    assert ack.options[m.OPT_DNS] == bytes([10, 2, 0, 1])
    assert ack.options[m.OPT_BROADCAST] == bytes([10, 2, 0, 3])
    assert ack.server_id == "10.2.0.1"
    assert lease_time(ack) == 30
    assert struct.unpack("!I", ack.options[m.OPT_T1])[0] == 15
    assert struct.unpack("!I", ack.options[m.OPT_T2])[0] == 26
    assert ack.options[m.OPT_HOSTNAME] == b"laptop"
    assert core.ctx.host.addresses == {"10.2.0.1/30"}
    assert core.state.get_device(MAC).state == "pending"


def test_reply_goes_out_of_the_asking_port(core):
    replies = send(core, dhcp_frame(MAC, m.DISCOVER), port=2)
    _, out, eth, ip = replies[0]
    assert out.actions[0].port == 2
    assert eth.dst_mac == MAC and ip.dst_ip == "10.2.0.2"


def test_broadcast_flag_gets_broadcast_reply(core):
    [(_, _, eth, ip)] = send(core, dhcp_frame(MAC, m.DISCOVER, flags=0x8000))
    assert eth.dst_mac == "ff:ff:ff:ff:ff:ff" and ip.dst_ip == "255.255.255.255"


def test_permit_lengthens_next_renewal(core):
    join(core)
    core.commands.call("permit", mac=MAC)
    [(ack, _, eth, ip)] = send(core, dhcp_frame(MAC, m.REQUEST, src_ip="10.2.0.2", dst_ip="10.2.0.1"))
    assert ack.msg_type == m.ACK and lease_time(ack) == 3600
    assert ip.dst_ip == "10.2.0.2"   # renewal answered by unicast


def test_renewal_with_wrong_address_is_naked(core):
    join(core)
    [(nak, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, src_ip="10.2.0.6", dst_ip="10.2.0.5"))
    assert nak.msg_type == m.NAK


def test_init_reboot_same_address_acked_other_naked(core):
    join(core)
    [(ack, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.2")]))
    assert ack.msg_type == m.ACK
    [(nak, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.6")]))
    assert nak.msg_type == m.NAK
    [(nak, *_)] = send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "192.168.1.10")]))
    assert nak.msg_type == m.NAK


def test_init_reboot_cannot_take_another_devices_address(core):
    join(core, MAC)
    [(nak, *_)] = send(core, dhcp_frame(MAC2, m.REQUEST, options=[opt_ip(50, "10.2.0.2")]), port=2)
    assert nak.msg_type == m.NAK


def test_selecting_another_server_is_ignored(core):
    send(core, dhcp_frame(MAC, m.DISCOVER))
    assert send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.2"), opt_ip(54, "192.0.2.1")])) == []


def test_release_removes_router_address_and_keeps_block(core):
    offer, ack = join(core)
    send(core, dhcp_frame(MAC, m.RELEASE, src_ip="10.2.0.2", dst_ip="10.2.0.1"))
    assert core.ctx.host.addresses == set()
    offer2, _ = join(core)
    assert offer2.yiaddr == ack.yiaddr


def test_lease_expiry_removes_router_address(core, clock):
    join(core)
    clock.advance(31)
    for timer in core.timers:
        timer()
    assert core.ctx.host.addresses == set()
    assert core.ctx.component("dhcp").get(MAC).active is False


def test_decline_moves_device_to_another_block(core):
    offer, _ = join(core)
    send(core, dhcp_frame(MAC, m.DECLINE, options=[opt_ip(50, offer.yiaddr)]))
    offer2, _ = join(core)
    assert offer2.yiaddr != offer.yiaddr


def test_inform_gets_options_without_lease(core):
    join(core)
    [(ack, *_)] = send(core, dhcp_frame(MAC, m.INFORM, src_ip="10.2.0.2", dst_ip="10.2.0.1"))
    assert ack.msg_type == m.ACK and m.OPT_LEASE_TIME not in ack.options and ack.yiaddr == "0.0.0.0"


def test_blacklisted_device_gets_nothing(core):
    core.devices.blacklist(MAC)
    assert send(core, dhcp_frame(MAC, m.DISCOVER)) == []


def test_pool_exhaustion_logged_no_offer(tmp_path, clock):
    import ipaddress
    core = make_core(tmp_path, clock=clock, pool=ipaddress.IPv4Network("10.9.0.0/29"))
    core.datapath_up(Datapath(dpid=1, ports={}))
    join(core, "02:00:00:00:00:01")
    join(core, "02:00:00:00:00:02")
    assert send(core, dhcp_frame("02:00:00:00:00:03", m.DISCOVER)) == []
    assert core.counters.get("dhcp.exhausted") == 1


def test_a_forgotten_devices_block_serves_a_new_device_once_its_lease_would_have_ended(tmp_path, clock):
    import ipaddress
    core = make_core(tmp_path, clock=clock, pool=ipaddress.IPv4Network("10.9.0.0/29"))   # two blocks
    core.datapath_up(Datapath(dpid=1, ports={}))
    join(core, "02:00:00:00:00:01")
    join(core, "02:00:00:00:00:02")
    core.commands.call("forget", mac="02:00:00:00:00:01")
    [forcerenew] = core.switch.take_packet_outs()       # asked to renew now (components/dhcp/returning.py)
    assert send(core, dhcp_frame("02:00:00:00:00:03", m.DISCOVER)) == []   # its 30 s lease runs on
    clock.advance(31)
    [(offer, *_)] = send(core, dhcp_frame("02:00:00:00:00:03", m.DISCOVER))
    assert offer.msg_type == m.OFFER and offer.yiaddr == "10.9.0.2"
    assert core.ctx.leases.get("02:00:00:00:00:02").ip == "10.9.0.6"   # the other device kept its block


def test_a_forgotten_devices_block_stays_held_across_a_controller_restart(tmp_path, clock):
    import ipaddress
    pool = ipaddress.IPv4Network("10.9.0.0/29")     # two blocks
    core = make_core(tmp_path, clock=clock, pool=pool)
    core.datapath_up(Datapath(dpid=1, ports={}))
    join(core, "02:00:00:00:00:01")
    join(core, "02:00:00:00:00:02")
    core.commands.call("forget", mac="02:00:00:00:00:01")
    core.stop()
    core.state.close()
    again = make_core(tmp_path, clock=clock, pool=pool)
    again.datapath_up(Datapath(dpid=1, ports={}))
    # the forgotten device may still use 10.9.0.2 until its lease ends: nobody else gets it
    assert send(again, dhcp_frame("02:00:00:00:00:03", m.DISCOVER)) == []
    clock.advance(31)
    [(offer, *_)] = send(again, dhcp_frame("02:00:00:00:00:03", m.DISCOVER))
    assert offer.yiaddr == "10.9.0.2"


def test_same_mac_same_address_after_restart(tmp_path, clock):
    core = make_core(tmp_path, clock=clock)
    core.datapath_up(Datapath(dpid=1, ports={}))
    join(core, "02:00:00:00:00:07")
    join(core, MAC)
    core.commands.call("permit", mac=MAC)
    core.state.close()
    again = make_core(tmp_path, clock=clock)
    again.datapath_up(Datapath(dpid=1, ports={}))
    assert again.ctx.host.addresses == {"10.2.0.1/30", "10.2.0.5/30"}
    offer, ack = join(again, MAC)
    assert ack.yiaddr == "10.2.0.6" and lease_time(ack) == 3600
    assert again.state.get_device(MAC).state == "permitted"


def test_malformed_packets_are_counted_not_fatal(core):
    good = dhcp_frame(MAC, m.DISCOVER)
    for junk in (good[:20], good[:50], good[:300], good[:42] + b"\x00" * 10, b"\xff" * 5):
        send(core, junk)
    assert core.counters.get("dhcp.malformed") + core.counters.get("core.malformed_frames") >= 4
    [(offer, *_)] = send(core, good)
    assert offer.msg_type == m.OFFER


def test_leased_device_may_reach_only_its_gateway(core):
    join(core)
    sw = core.switch
    arp = {"in_port": 1, "eth_src": MAC, "eth_type": 0x0806, "arp_spa": "10.2.0.2", "arp_tpa": "10.2.0.1"}
    assert sw.outputs(arp) == [LOCAL]
    assert sw.outputs(dict(arp, arp_tpa="10.2.0.5")) == []
    ping = {"in_port": 1, "eth_src": MAC, "eth_type": 0x0800, "ipv4_src": "10.2.0.2", "ipv4_dst": "10.2.0.1",
            "ip_proto": 1}
    assert sw.outputs(ping) == [LOCAL]
    assert sw.outputs(dict(ping, ipv4_dst="203.0.113.10")) == []
    assert sw.outputs(dict(ping, eth_src=MAC2)) == []
    # Back from the router: only its gateway's answers (routing tightened this).
    assert sw.outputs({"in_port": LOCAL, "eth_type": 0x0800, "ipv4_src": "10.2.0.1", "ipv4_dst": "10.2.0.2",
                       "ip_proto": 1}) == [1]
    assert sw.outputs({"in_port": LOCAL, "eth_type": 0x0800, "ipv4_src": "10.2.0.5", "ipv4_dst": "10.2.0.2",
                       "ip_proto": 1}) == []


def test_flows_removed_when_lease_ends(core):
    join(core)
    send(core, dhcp_frame(MAC, m.RELEASE, src_ip="10.2.0.2", dst_ip="10.2.0.1"))
    assert core.switch.outputs({"in_port": LOCAL, "eth_type": 0x0800, "ipv4_dst": "10.2.0.2"}) == []


def test_devices_command_shows_state_and_lease(core):
    join(core)
    [row] = core.commands.call("devices")
    assert row["mac"] == MAC and row["state"] == "pending" and row["hostname"] == "laptop"
    assert row["lease"]["ip"] == "10.2.0.2" and row["lease"]["active"] is True
    assert core.commands.call("permit", mac="02-00-00-00-00-01")["state"] == "permitted"
    import pytest
    from homework.commands import CommandError
    # a MAC never seen is pre-approved (no lease, last_seen 0); a multicast one is refused
    assert core.commands.call("permit", mac="02:00:00:00:00:99")["last_seen"] == 0
    with pytest.raises(CommandError) as exc:
        core.commands.call("permit", mac="03:00:00:00:00:99")
    assert exc.value.status == 400
    with pytest.raises(CommandError) as exc:
        core.commands.call("permit", mac="nonsense")
    assert exc.value.status == 400
