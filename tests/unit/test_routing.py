"""Routing and access control on a fake flow table: who may send what, where it goes."""
import pytest

from homework.components.dhcp import message as m
from homework.flows import CONTROLLER, LOCAL, Datapath, FlowDelete, FlowMod, PacketIn
from homework import pipeline as L
from homework.packets import parse_ethernet, parse_ipv4
from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip
from routingkit import (ROUTER_MAC, arp_pkt, from_router, igmp_v2, igmp_v3, ip_frame, ip_pkt, join,
                        routing_core)

A, B, C = "02:00:00:00:00:0a", "02:00:00:00:00:0b", "02:00:00:00:00:0c"
WEB = "203.0.113.10"


@pytest.fixture
def core(tmp_path, clock):
    return routing_core(tmp_path, clock)


def test_switch_starts_closed_except_dhcp_and_igmp(core):
    sw = core.switch
    assert sw.outputs(ip_pkt(1, A, "10.2.0.2", WEB)) == []
    assert sw.outputs(arp_pkt(1, A, "10.2.0.2", "10.2.0.1")) == []
    assert sw.outputs(ip_pkt(1, A, "0.0.0.0", "255.255.255.255", proto=17, sport=68, dport=67)) == [CONTROLLER]
    assert sw.outputs(ip_pkt(1, A, "10.2.0.2", "224.0.0.22", proto=2)) == [CONTROLLER]


def test_pending_device_reaches_only_dns_the_page_and_ping_on_its_gateway(core):
    ip = join(core, A, 1)
    gw = "10.2.0.1"
    sw = core.switch
    assert sw.outputs(arp_pkt(1, A, ip, gw)) == [LOCAL]
    # DNS over TLS too (853): dnsd gives a pending device the same captive answers over it
    for proto, dport in ((17, 53), (6, 53), (6, 853), (6, 80), (1, 0)):
        assert sw.outputs(ip_pkt(1, A, ip, gw, proto=proto, dport=dport)) == [LOCAL], (proto, dport)
        assert sw.outputs(from_router(gw, ip, proto=proto, sport=dport)) == [1], (proto, dport)
    # 443 only where the dns component sends it to the captive pages (test_cutoff.py), never the board
    for dport in (443, 8080, 22):
        assert sw.outputs(ip_pkt(1, A, ip, gw, dport=dport)) == [], dport
    assert sw.outputs(ip_pkt(1, A, ip, WEB)) == []
    assert sw.outputs(from_router(WEB, ip)) == []                 # nothing from the internet...
    for proto, sport in ((6, 80), (6, 443), (1, 0), (6, 22)):
        assert sw.outputs(from_router(WEB, ip, proto=proto, sport=sport)) == [], (proto, sport)
    # ...but a DNS answer "from" an outside resolver (dnsd answered the query sent there)
    assert sw.outputs(from_router("203.0.113.99", ip, proto=17, sport=53)) == [1]
    assert sw.outputs(from_router("203.0.113.99", ip, proto=6, sport=53)) == [1]
    assert sw.outputs(from_router(gw, ip, sport=8080)) == []


def test_pending_devices_share_the_service_table_and_each_gets_only_its_own_answers(core):
    a, b = join(core, A, 1), join(core, B, 2)
    gw_a, gw_b = core.ctx.leases.get(A).router, core.ctx.leases.get(B).router
    sw = core.switch
    # the services are one shared set of flows in table 5, not a set per device
    shared = [f for f in sw.flows if f.table_id == L.TABLE_GATEWAY and f.priority == L.PRIO_GATEWAY_SERVICE]
    assert len(shared) == 5     # ICMP, DNS over UDP, TCP and TLS, HTTP
    # each answer from a gateway goes to that device's port (its own reg7), never the other's
    assert sw.outputs(from_router(gw_a, a, proto=17, sport=53)) == [1]
    assert sw.outputs(from_router(gw_b, b, proto=17, sport=53)) == [2]
    assert sw.outputs(from_router(gw_a, b, proto=6, sport=80)) == []    # b's address from a's gateway
    assert sw.outputs(from_router(gw_a, b, proto=17, sport=53)) == [2]  # a DNS answer: to b, whoever sent it
    assert sw.outputs(ip_pkt(1, A, a, gw_a, proto=6, dport=853)) == [LOCAL]   # the router's DNS over TLS
    assert sw.outputs(from_router(gw_a, a, proto=6, sport=853)) == [1]
    # another device's gateway address is not its own: nothing
    assert sw.outputs(ip_pkt(1, A, a, gw_b, proto=17, dport=53)) == []
    # a service port as the destination of the router's packet does not let it through
    assert sw.outputs(from_router(gw_a, a, proto=6, sport=8080, dport=80)) == []


def test_arp_only_for_the_own_gateway_with_the_own_address(core):
    ip = join(core, A, 1)
    sw = core.switch
    assert sw.outputs(arp_pkt(1, A, ip, "10.2.0.1")) == [LOCAL]
    assert sw.outputs(arp_pkt(1, A, ip, "10.2.0.5")) == []        # someone else's gateway
    assert sw.outputs(arp_pkt(1, A, ip, "10.2.0.6")) == []        # another device
    assert sw.outputs(arp_pkt(1, A, ip, ip)) == []                # gratuitous
    assert sw.outputs(arp_pkt(1, A, "10.2.0.6", "10.2.0.1")) == []  # claiming another address
    assert sw.outputs({"in_port": LOCAL, "eth_type": 0x0806, "arp_tpa": ip}) == [1]


def test_permit_opens_internet_and_gateway_at_once(core):
    ip = join(core, A, 1)
    core.commands.call("permit", mac=A)
    sw = core.switch
    assert sw.outputs(ip_pkt(1, A, ip, WEB)) == [LOCAL]
    assert sw.outputs(from_router(WEB, ip)) == [1]
    assert sw.outputs(ip_pkt(1, A, ip, "10.2.0.1", dport=443)) == [LOCAL]
    assert sw.outputs(arp_pkt(1, A, ip, "10.2.0.1")) == [LOCAL]


def test_spoofed_source_gets_nothing_through(core):
    ip = join(core, A, 1)
    join(core, B, 2)
    core.commands.call("permit", mac=A)
    sw = core.switch
    assert sw.outputs(ip_pkt(1, A, "10.2.0.6", WEB)) == []        # B's address
    assert sw.outputs(ip_pkt(1, B, ip, WEB)) == []                # B's MAC
    assert sw.outputs(ip_pkt(2, A, ip, WEB)) == []                # wrong port
    assert sw.outputs(ip_pkt(1, A, "192.168.1.7", WEB)) == []     # outside the pool


def test_device_to_device_is_routed_not_bridged(core):
    a, b = join(core, A, 1), join(core, B, 2)
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    sw = core.switch
    assert sw.outputs(ip_pkt(1, A, a, b, proto=1)) == [2]
    out = sw.last_packet
    assert out["eth_src"] == ROUTER_MAC and out["eth_dst"] == B and out["nw_ttl"] == 63
    assert sw.outputs(ip_pkt(2, B, b, a, proto=1)) == [1]


def test_pending_device_unreachable_both_ways(core):
    a, c = join(core, A, 1), join(core, C, 3)
    core.commands.call("permit", mac=A)
    sw = core.switch
    assert sw.outputs(ip_pkt(1, A, a, c)) == []                   # permitted -> pending
    assert sw.outputs(ip_pkt(3, C, c, a)) == []                   # pending -> permitted
    assert sw.outputs(from_router(a, c)) == []                    # routed by the kernel: still not


def test_deny_removes_forwarding_and_learned_flows(core):
    ip = join(core, A, 1)
    core.commands.call("permit", mac=A)
    sw = core.switch
    assert sw.outputs(ip_pkt(1, A, ip, WEB)) == [LOCAL]
    assert any(L.kind_of(f.cookie) == L.KIND_LEARNED for f in sw.flows)
    core.commands.call("deny", mac=A)
    assert sw.outputs(ip_pkt(1, A, ip, WEB)) == []
    assert sw.outputs(from_router(WEB, ip)) == []
    assert not any(L.kind_of(f.cookie) == L.KIND_LEARNED for f in sw.flows)
    # back to the pending treatment: DNS to the gateway still works
    assert sw.outputs(ip_pkt(1, A, ip, "10.2.0.1", proto=17, dport=53)) == [LOCAL]


def test_blacklist_removes_everything_including_arp(core):
    ip = join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.commands.call("blacklist", mac=A)
    sw = core.switch
    assert sw.outputs(arp_pkt(1, A, ip, "10.2.0.1")) == []
    assert sw.outputs(ip_pkt(1, A, ip, "10.2.0.1", proto=17, dport=53)) == []
    assert [f for f in sw.flows if L.device_of(f.cookie) is not None and L.is_routing(f.cookie)] == []


def test_lease_release_removes_device_flows(core):
    from dhcpframes import dhcp_frame
    from homework.components.dhcp import message as m
    ip = join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(A, m.RELEASE, src_ip=ip, dst_ip="10.2.0.1")))
    assert core.switch.outputs(ip_pkt(1, A, ip, WEB)) == []
    assert core.switch.outputs(arp_pkt(1, A, ip, "10.2.0.1")) == []


def test_broadcast_reaches_permitted_devices_only(core):
    a, _, c = join(core, A, 1), join(core, B, 2), join(core, C, 3)
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    sw = core.switch
    assert sorted(sw.outputs(ip_pkt(1, A, a, "255.255.255.255", proto=17, dport=137))) == [1, 2]  # switch skips in_port
    assert sw.outputs(ip_pkt(3, C, c, "255.255.255.255", proto=17, dport=137)) == []
    # subnet-directed broadcast rewritten to 255.255.255.255 and re-sent
    assert sorted(sw.outputs(ip_pkt(1, A, a, "10.2.0.3", proto=17, dport=137))) == [1, 2]
    assert sw.last_packet["ipv4_dst"] == "255.255.255.255"
    # another device's subnet broadcast is not ours to send
    assert sw.outputs(ip_pkt(1, A, a, "10.2.0.7", proto=17, dport=137)) == []
    core.commands.call("deny", mac=B)
    assert sw.outputs(ip_pkt(1, A, a, "255.255.255.255", proto=17, dport=137)) == [1]


def test_multicast_only_to_members(core):
    a, b, c = join(core, A, 1), join(core, B, 2), join(core, C, 3)
    for mac in (A, B, C):
        core.commands.call("permit", mac=mac)
    sw = core.switch
    mdns = ip_pkt(1, A, a, "224.0.0.251", proto=17, sport=5353, dport=5353)
    assert sw.outputs(mdns) == []                                  # nobody joined
    core.packet_in(PacketIn(in_port=2, data=ip_frame(B, "01:00:5e:00:00:16", b, "224.0.0.22", 2,
                                                     igmp_v3([(4, "224.0.0.251", 0)]), ttl=1)))
    assert sw.outputs(mdns) == [2]
    core.packet_in(PacketIn(in_port=3, data=ip_frame(C, "01:00:5e:00:00:fb", c, "224.0.0.251", 2,
                                                     igmp_v2(0x16, "224.0.0.251"), ttl=1)))
    assert sorted(sw.outputs(mdns)) == [2, 3]
    core.packet_in(PacketIn(in_port=3, data=ip_frame(C, "01:00:5e:00:00:02", c, "224.0.0.2", 2,
                                                     igmp_v2(0x17, "224.0.0.251"), ttl=1)))
    assert sw.outputs(mdns) == [2]
    core.commands.call("deny", mac=B)                              # a denied member is dropped
    assert sw.outputs(mdns) == []


def test_igmp_from_pending_or_spoofed_sender_is_ignored(core):
    join(core, A, 1)
    c = join(core, C, 3)
    core.commands.call("permit", mac=A)
    report = igmp_v2(0x16, "239.255.255.250")
    core.packet_in(PacketIn(in_port=3, data=ip_frame(C, "01:00:5e:7f:ff:fa", c, "239.255.255.250", 2, report)))
    core.packet_in(PacketIn(in_port=1, data=ip_frame(A, "01:00:5e:7f:ff:fa", "10.2.0.9", "239.255.255.250", 2, report)))
    assert core.commands.call("routing-status")["groups"] == {}


def test_truncated_igmp_does_not_hurt(core):
    a = join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.packet_in(PacketIn(in_port=1, data=ip_frame(A, "01:00:5e:00:00:16", a, "224.0.0.22", 2,
                                                     b"\x22\x00\x00\x00\x00\x00\x00\x05\x04")))
    assert core.counters.get("routing.malformed") == 1
    assert core.switch.outputs(ip_pkt(1, A, a, WEB)) == [LOCAL]


def test_memberships_expire_without_reports(core, clock):
    a, b = join(core, A, 1), join(core, B, 2)
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    core.packet_in(PacketIn(in_port=2, data=ip_frame(B, "01:00:5e:00:00:fb", b, "224.0.0.251", 2,
                                                     igmp_v2(0x16, "224.0.0.251"))))
    routing = core.ctx.component("routing")
    clock.advance(routing.memberships.lifetime + 1)
    routing.query_members()
    assert core.switch.outputs(ip_pkt(1, A, a, "224.0.0.251", proto=17, dport=5353)) == []
    queries = core.switch.take_packet_outs()
    assert {q.actions[0].port for q in queries} >= {1, 2}


def test_ttl_expiring_between_devices_gets_time_exceeded_from_the_gateway(core):
    a, b = join(core, A, 1), join(core, B, 2)
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    core.switch.take_packet_outs()
    probe = ip_frame(A, ROUTER_MAC, a, b, 17, b"\x82\x9a\x82\x9b\x00\x10\x00\x00" + b"x" * 8, ttl=1)
    assert core.switch.outputs(ip_pkt(1, A, a, b, proto=17, nw_ttl=1)) == [CONTROLLER]
    punt = core.switch.last_hits[-1]
    core.packet_in(PacketIn(in_port=1, data=probe, reason="action", cookie=punt.cookie))
    [out] = core.switch.take_packet_outs()
    assert out.actions[0].port == 1
    ip = parse_ipv4(parse_ethernet(out.data).payload)
    assert (ip.src_ip, ip.dst_ip, ip.proto) == ("10.2.0.1", a, 1)
    assert ip.payload[0] == 11 and ip.payload[8 + 12:8 + 16] == bytes([10, 2, 0, 2])


def test_controller_restart_resynchronises_from_state(tmp_path, clock):
    core = routing_core(tmp_path, clock)
    a = join(core, A, 1)
    c = join(core, C, 3)
    core.commands.call("permit", mac=A)
    switch = core.switch                       # the switch keeps its flows
    core.state.close()
    again = make_core(tmp_path, clock=clock, switch=switch)
    again.datapath_up(Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1, "d3": 3}))
    assert switch.outputs(ip_pkt(1, A, a, WEB)) == [LOCAL]
    assert switch.outputs(ip_pkt(3, C, c, "10.2.0.9", proto=17, dport=53)) == []
    assert switch.outputs(ip_pkt(3, C, c, "10.2.0.9", proto=17, dport=53, ipv4_dst="10.2.0.9")) == []
    assert again.ctx.component("routing").status()["devices"][0]["mode"] == "permitted"


def test_stale_flows_of_devices_without_lease_are_deleted_on_reconnect(tmp_path, clock):
    core = routing_core(tmp_path, clock)
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    clock.advance(40)                          # pending lease (30 s) ran out while we were away
    core.state.close()
    again = make_core(tmp_path, clock=clock, switch=core.switch)
    again.switch.messages.clear()
    again.datapath_up(Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1}))
    deletes = [d for d in again.switch.messages if isinstance(d, FlowDelete)
               and d.cookie_mask == L.MASK_ALL_KINDS_ONE_DEVICE]
    assert deletes and L.device_of(deletes[0].cookie) == 0
    assert again.switch.outputs(ip_pkt(1, A, "10.2.0.2", WEB)) == []


def test_a_renewal_keeps_the_flows_and_the_per_host_collapse(core, clock):
    """A renewal changes only the expiry: reinstalling would cut the device's traffic for
    a moment and forget that it was collapsed to per-host counting."""
    ip = join(core, A, 1)
    core.commands.call("permit", mac=A)
    routing = core.ctx.component("routing")
    routing.per_host.add(core.ctx.leases.get(A).index)
    before = len(core.switch.messages)
    clock.advance(60)
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(A, m.REQUEST, options=[opt_ip(50, ip)], ciaddr=ip)))
    renewed = core.ctx.leases.get(A)
    assert renewed.ip == ip and renewed.expires > 0
    sent = core.switch.messages[before:]
    assert not [d for d in sent if isinstance(d, (FlowDelete, FlowMod))], sent
    assert routing.flow_limited(A)
    assert core.switch.outputs(ip_pkt(1, A, ip, WEB)) == [LOCAL]
