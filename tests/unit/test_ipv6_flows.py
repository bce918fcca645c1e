"""IPv6: the address plan, Router Advertisements, and the v6 flows on a fake switch."""
import ipaddress
import struct

import pytest

from homework.components.routing import ndp
from homework.config import ConfigError, parse
from homework.flows import CONTROLLER, LOCAL, FlowMod, PacketIn
from homework.ipv6plan import AddressPlan, PlanError, parse_site_prefix, ula_prefix
from homework.macaddr import to_bytes
from homework.packets import checksum
from routingkit import ROUTER_MAC, join, routing_core

A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
SITE = "2001:db8:100::/48"
WEB6 = "2001:db8:cafe::10"


# -- the plan ---------------------------------------------------------------------------
def test_each_block_index_has_its_own_64_and_back():
    plan = AddressPlan(parse_site_prefix(SITE))
    assert str(plan.device_prefix(0)) == "2001:db8:100::/64"
    assert str(plan.device_prefix(5)) == "2001:db8:100:5::/64"
    assert str(plan.router_address(5)) == "2001:db8:100:5::1"
    assert plan.index_of("2001:db8:100:5:abcd::9") == 5
    assert plan.index_of("2001:db8:101::1") is None


def test_a_short_delegation_gives_v6_to_as_many_devices_as_it_holds():
    plan = AddressPlan(parse_site_prefix("2001:db8:100:ff00::/56"))
    assert str(plan.device_prefix(255)) == "2001:db8:100:ffff::/64"
    assert plan.device_prefix(256) is None


@pytest.mark.parametrize("bad", ["2001:db8::/64", "fe80::/48", "ff00::/8", "10.0.0.0/8", "2001:db8::1/48", "x"])
def test_bad_site_prefixes_are_refused(bad):
    with pytest.raises(PlanError):
        parse_site_prefix(bad)


def test_the_config_refuses_a_bad_prefix_with_its_key():
    with pytest.raises(ConfigError, match="ipv6.prefix"):
        parse({"ipv6": {"prefix": "2001:db8::/64"}})


def test_the_ula_is_made_once_and_kept(tmp_path):
    first = ula_prefix(tmp_path)
    assert first.prefixlen == 48 and first.subnet_of(ipaddress.IPv6Network("fd00::/8"))
    assert ula_prefix(tmp_path) == first
    (tmp_path / "ula-prefix").write_text("garbage\n")
    assert ula_prefix(tmp_path) != first                    # unreadable: a fresh one, kept from now on
    assert ula_prefix(tmp_path) == ula_prefix(tmp_path)


# -- Router Advertisements ------------------------------------------------------------------
def _icmp_ok(frame: bytes) -> bool:
    ip = ndp.parse_ipv6(frame[14:])
    pseudo = ip.src.packed + ip.dst.packed + struct.pack("!IxxxB", len(ip.payload), 58)
    return checksum(pseudo + ip.payload) == 0


def test_an_advertisement_carries_only_the_devices_prefix_not_on_link():
    prefix = ipaddress.IPv6Network("2001:db8:100:5::/64")
    frame = ndp.router_advertisement(to_bytes(ROUTER_MAC), to_bytes(A), prefix, 300, dns=prefix.network_address + 1)
    assert frame[:6] == to_bytes(A)                      # to the device alone
    ip = ndp.parse_ipv6(frame[14:])
    assert str(ip.src) == "fe80::1" and ip.hop_limit == 255 and ip.payload[0] == 134
    assert _icmp_ok(frame)
    options, found = ip.payload[16:], {}
    while options:
        kind, length = options[0], options[1] * 8
        found[kind] = options[:length]
        options = options[length:]
    pio = found[3]
    assert pio[2] == 64 and pio[3] == 0x40                # autonomous, on-link flag off
    assert ipaddress.IPv6Address(pio[16:32]) == prefix.network_address
    assert struct.unpack("!I", pio[4:8])[0] == 300
    assert ipaddress.IPv6Address(found[25][8:24]) == prefix.network_address + 1    # RDNSS: the router
    assert found[1][2:8] == to_bytes(ROUTER_MAC)


def _rs(mac, src="fe80::a", hop_limit=255, code=0, bad_sum=False):
    body = struct.pack("!BBHI", 133, code, 0, 0)
    src_a, dst_a = ipaddress.IPv6Address(src), ipaddress.IPv6Address("ff02::2")
    csum = checksum(src_a.packed + dst_a.packed + struct.pack("!IxxxB", len(body), 58) + body)
    body = body[:2] + struct.pack("!H", csum ^ (1 if bad_sum else 0)) + body[4:]
    ip = struct.pack("!IHBB16s16s", 6 << 28, len(body), 58, hop_limit, src_a.packed, dst_a.packed)
    return b"\x33\x33\x00\x00\x00\x02" + to_bytes(mac) + b"\x86\xdd" + ip + body


# -- flows on the fake switch ----------------------------------------------------------------
@pytest.fixture
def core(tmp_path, clock):
    return routing_core(tmp_path, clock, ipv6_enabled=True, ipv6_prefix=SITE)


def v6(port, mac, src, dst, proto=6, **extra):
    pkt = {"in_port": port, "eth_src": mac, "eth_type": 0x86DD, "ipv6_src": src, "ipv6_dst": dst,
           "ip_proto": proto, "nw_ttl": 64}
    if proto == 6:
        pkt.update(tcp_src=40000, tcp_dst=extra.pop("dport", 443))
    elif proto == 17:
        pkt.update(udp_src=40000, udp_dst=extra.pop("dport", 53))
    pkt.update(extra)
    return pkt


def _prefix(core, mac):
    return core.ctx.ipv6.device_prefix(core.ctx.leases.get(mac).index)


def test_a_lease_routes_the_devices_64_on_the_router_and_advertises_it(core):
    join(core, A, 1)
    prefix = _prefix(core, A)
    index = core.ctx.leases.get(A).index
    assert core.ctx.host.prefixes6[index] == (str(prefix), str(prefix.network_address + 1), A)
    ras = [p for p in core.switch.messages if getattr(p, "data", b"")[12:14] == b"\x86\xdd"]
    assert ras and ras[-1].actions[0].port == 1 and ras[-1].data[:6] == to_bytes(A)
    [view] = [d for d in core.commands.call("devices") if d["mac"] == A]     # CLI, API and board
    assert view["ipv6_prefix"] == str(prefix) and view["lease"]["ipv6_prefix"] == str(prefix)
    [lease] = [x for x in core.commands.call("dhcp-status") if x["mac"] == A]
    assert lease["ipv6_prefix"] == str(prefix)


def test_a_solicitation_gets_an_answer_only_from_the_devices_port(core):
    join(core, A, 1)
    assert core.switch.outputs(v6(1, A, "fe80::a", "ff02::2", 58, icmpv6_type=133)) == [CONTROLLER]
    core.switch.take_packet_outs()
    core.packet_in(PacketIn(in_port=1, data=_rs(A)))
    (ra,) = core.switch.take_packet_outs()
    assert ra.actions[0].port == 1 and ndp.parse_ipv6(ra.data[14:]).dst == ipaddress.IPv6Address("fe80::a")
    for wrong in (PacketIn(in_port=2, data=_rs(A)), PacketIn(in_port=1, data=_rs(A, hop_limit=64)),
                  PacketIn(in_port=1, data=_rs(A, bad_sum=True)), PacketIn(in_port=1, data=_rs(B))):
        core.packet_in(wrong)
        assert core.switch.take_packet_outs() == []


def test_pending_reaches_only_the_routers_services_over_v6(core):
    join(core, A, 1)
    p = _prefix(core, A)
    me, router = str(p.network_address + 0x1234), str(p.network_address + 1)
    sw = core.switch
    assert sw.outputs(v6(1, A, me, router, 6, dport=80)) == [LOCAL]
    assert sw.outputs(v6(1, A, me, router, 58)) == [LOCAL]
    assert sw.outputs(v6(1, A, me, router, 6, dport=443)) == []     # no dns component: no captive HTTPS
    assert sw.outputs(v6(1, A, me, router, 6, dport=8080)) == []
    assert sw.outputs(v6(1, A, me, WEB6)) == []
    assert sw.outputs(v6(LOCAL, ROUTER_MAC, WEB6, me)) == []
    assert sw.outputs(v6(LOCAL, ROUTER_MAC, WEB6, me, 6, tcp_src=443, tcp_dst=40000)) == []
    # a DNS answer from an outside resolver's address: dnsd answered the query sent there
    assert sw.outputs(v6(LOCAL, ROUTER_MAC, "2001:db8:cafe::53", me, 17, udp_src=53, udp_dst=40000)) == [1]
    # neighbour discovery with the router only
    assert sw.outputs(v6(1, A, "fe80::a", "ff02::1:ff00:1", 58, icmpv6_type=135, ipv6_nd_target="fe80::1")) == [LOCAL]
    assert sw.outputs(v6(1, A, "fe80::a", "ff02::1:ff00:2", 58, icmpv6_type=135, ipv6_nd_target="fe80::2")) == []
    assert sw.outputs(v6(1, A, "fe80::a", "ff02::1", 58, icmpv6_type=134)) == []     # rogue RA
    assert sw.outputs({"in_port": LOCAL, "eth_dst": A, "eth_type": 0x86DD, "ipv6_src": "fe80::1",
                       "ipv6_dst": "fe80::a", "ip_proto": 58, "icmpv6_type": 136}) == [1]


def test_permitted_is_routed_with_its_own_64_and_nothing_else(core):
    join(core, A, 1)
    join(core, B, 2)
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    pa, pb = _prefix(core, A), _prefix(core, B)
    a_addr, b_addr = str(pa.network_address + 0xbeef), str(pb.network_address + 7)
    sw = core.switch
    assert sw.outputs(v6(1, A, a_addr, WEB6)) == [LOCAL]
    assert sw.outputs(v6(LOCAL, ROUTER_MAC, WEB6, a_addr)) == [1]
    assert sw.outputs(v6(1, A, a_addr, b_addr)) == [2]                   # routed, not bridged
    assert sw.last_packet["eth_src"] == ROUTER_MAC and sw.last_packet["eth_dst"] == B
    assert sw.last_packet["nw_ttl"] == 63
    assert sw.outputs(v6(1, A, a_addr, str(pa.network_address + 1), 17)) == [LOCAL]   # DNS at its ::1
    # spoofing: B's prefix, another port, another MAC, a prefix outside the site
    assert sw.outputs(v6(1, A, b_addr, WEB6)) == []
    assert sw.outputs(v6(2, A, a_addr, WEB6)) == []
    assert sw.outputs(v6(1, B, a_addr, WEB6)) == []
    assert sw.outputs(v6(1, A, "2001:db8:999::1", WEB6)) == []
    # an unleased /64 of the site gets nothing from a permitted device
    assert sw.outputs(v6(1, A, a_addr, "2001:db8:100:77::2")) == []


def test_deny_closes_v6_at_once_and_permit_learns_v6_flows(core):
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    a_addr = str(_prefix(core, A).network_address + 9)
    sw = core.switch
    assert sw.outputs(v6(1, A, a_addr, WEB6)) == [LOCAL]
    learned = [f for f in sw.flows if f.table_id == 10 and f.priority == 100 and f.match.get("eth_type") == 0x86DD]
    assert learned and learned[0].match["ipv6_src"] == a_addr and learned[0].match["tcp_dst"] == 443
    core.commands.call("deny", mac=A)
    assert sw.outputs(v6(1, A, a_addr, WEB6)) == []
    assert sw.outputs(v6(LOCAL, ROUTER_MAC, WEB6, a_addr)) == []


def test_a_decision_resends_no_arp_or_neighbour_flows_and_they_stay(core):
    """A device decided on where it already is keeps its ARP and ND flows: the decision
    sends only what its mode changes (a crowd's permit resent a fifth of its flows)."""
    from homework import pipeline as L
    from routingkit import arp_pkt
    a_ip = join(core, A, 1)
    sw = core.switch
    index = core.ctx.leases.get(A).index
    arp = L.routing_cookie(L.KIND_ARP, index)
    held = sorted(repr(f.match) for f in sw.flows if f.cookie == arp)
    assert len(held) >= 8                      # two for ARP, the rest neighbour discovery
    for decision in ("permit", "deny", "permit"):
        sent = len(sw.messages)
        core.commands.call(decision, mac=A)
        assert [m for m in sw.messages[sent:] if isinstance(m, FlowMod) and m.cookie == arp] == []
        assert sorted(repr(f.match) for f in sw.flows if f.cookie == arp) == held
        router = core.ctx.leases.get(A).router
        assert sw.outputs(arp_pkt(1, A, a_ip, router)) == [LOCAL]


def test_the_end_of_a_lease_removes_the_route_and_every_v6_flow(core, clock):
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    index = core.ctx.leases.get(A).index
    clock.advance(10_000)
    core.ctx.component("dhcp").expire_leases()
    assert index not in core.ctx.host.prefixes6
    assert not [f for f in core.switch.flows if isinstance(f, FlowMod) and f.match.get("eth_type") == 0x86DD
                and (f.cookie & 0xFFFFFFFF) == index + 1]


def test_ipv6_off_installs_nothing_of_it(tmp_path, clock):
    core = routing_core(tmp_path, clock)
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    assert core.ctx.ipv6 is None
    assert not [f for f in core.switch.flows if f.match.get("eth_type") == 0x86DD]
    assert not core.ctx.host.prefixes6
    assert "ipv6_prefix" not in core.commands.call("devices")[0]


def test_v6_flows_are_reported_with_their_addresses_and_split_up_and_down(core):
    from homework import pipeline as L
    from homework.flows import FlowStats
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    routing = core.ctx.component("routing")
    me = str(_prefix(core, A).network_address + 0xabc)       # a privacy address: any in its /64
    core.switch.outputs(v6(1, A, me, WEB6, 17, dport=9000))
    core.switch.outputs(v6(LOCAL, ROUTER_MAC, WEB6, me, 17, udp_src=9000, udp_dst=40000))
    learned = [f for f in core.switch.flows if L.kind_of(f.cookie) == L.KIND_LEARNED]
    assert len(learned) == 2
    routing.poll_flow_stats()                                   # ends the priming interval
    up = [f for f in learned if f.match["ipv6_src"] == me][0]
    down = [f for f in learned if f.match["ipv6_dst"] == me][0]
    core.events.clear()
    core.flow_stats([FlowStats(match=f.match, cookie=f.cookie, priority=f.priority, duration_sec=1,
                               packet_count=1, byte_count=n, table_id=f.table_id)
                     for f, n in ((up, 1_000), (down, 50_000))])
    routing.poll_flow_stats()
    flows = [r._asdict() for t, p in core.events if t == "flows" for r in p.records]
    assert {(r["saddr"], r["daddr"], r["nbytes"]) for r in flows} == {(me, WEB6, 1_000), (WEB6, me, 50_000)}
    [bw] = [p for t, p in core.events if t == "bandwidth" and p["mac"] == A]
    assert (bw["up"], bw["down"]) == (1_000, 50_000)


def test_hop_limit_1_towards_a_device_gets_time_exceeded_from_the_senders_router(core):
    join(core, A, 1)
    join(core, B, 2)
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    pa, pb = _prefix(core, A), _prefix(core, B)
    a_addr, b_addr = pa.network_address + 5, pb.network_address + 6
    assert core.switch.outputs(v6(1, A, str(a_addr), str(b_addr), 58, nw_ttl=1)) == [CONTROLLER]
    core.switch.take_packet_outs()
    body = struct.pack("!BBHHH", 128, 0, 0, 1, 1) + b"ping"
    ip = struct.pack("!IHBB16s16s", 6 << 28, len(body), 58, 1, a_addr.packed, b_addr.packed) + body
    frame = to_bytes(ROUTER_MAC) + to_bytes(A) + b"\x86\xdd" + ip
    core.packet_in(PacketIn(in_port=1, data=frame, reason="invalid_ttl"))
    (reply,) = core.switch.take_packet_outs()
    answer = ndp.parse_ipv6(reply.data[14:])
    assert reply.actions[0].port == 1 and answer.src == pa.network_address + 1 and answer.dst == a_addr
    assert answer.payload[0] == 3 and answer.payload[8:] == ip and _icmp_ok(reply.data)
    core.packet_in(PacketIn(in_port=2, data=frame, reason="invalid_ttl"))        # not A's port
    assert core.switch.take_packet_outs() == []


def test_the_isps_delegation_is_used_and_a_new_one_renumbers_every_device(tmp_path, clock):
    from homework.ipv6plan import PrefixSource
    prefix_file = tmp_path / "delegated"
    prefix_file.write_text("2001:db8:200::/48\n")
    core = routing_core(tmp_path, clock, ipv6_enabled=True, ipv6_prefix="", ipv6_prefix_file=str(prefix_file))
    assert str(core.ctx.ipv6.site) == "2001:db8:200::/48"
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    index = core.ctx.leases.get(A).index
    old = core.ctx.ipv6.device_prefix(index)
    me_old = str(old.network_address + 5)
    assert core.switch.outputs(v6(1, A, me_old, WEB6)) == [LOCAL]
    core.switch.take_packet_outs()

    prefix_file.write_text("2001:db8:300::/48\n")             # the ISP renumbered the household
    core.check_site_prefix()
    new = core.ctx.ipv6.device_prefix(index)
    assert new == ipaddress.IPv6Network((int(ipaddress.IPv6Address("2001:db8:300::")) | (index << 64), 64))
    assert core.ctx.host.prefixes6[index][0] == str(new)
    assert core.switch.outputs(v6(1, A, str(new.network_address + 5), WEB6)) == [LOCAL]
    assert core.switch.outputs(v6(1, A, me_old, WEB6)) == []   # the old /64 is gone
    outs = [p for p in core.switch.take_packet_outs() if p.data[12:14] == b"\x86\xdd"]
    prefixes = []
    ras = [p for p in outs if ndp.parse_ipv6(p.data[14:]).next_header == 58
           and ndp.parse_ipv6(p.data[14:]).payload[0] == 134]
    for ra in ras:
        opts = ndp.parse_ipv6(ra.data[14:]).payload[16:]
        while opts:
            if opts[0] == 3:
                prefixes.append((ipaddress.IPv6Address(opts[16:32]), struct.unpack("!I", opts[8:12])[0]))
            opts = opts[opts[1] * 8:]
    assert (old.network_address, 0) in prefixes                 # old one: no longer preferred
    assert any(p == new.network_address and life > 0 for p, life in prefixes)
    # nothing changes while the prefix stays; a delegation that ends falls back to the ULA
    core.check_site_prefix()
    assert core.ctx.host.prefixes6[index][0] == str(new)
    prefix_file.write_text("")
    core.check_site_prefix()
    assert core.ctx.ipv6.site == PrefixSource("", "", tmp_path).site()
    assert core.ctx.ipv6.site.subnet_of(ipaddress.IPv6Network("fd00::/8"))


def _info_request(mac, src="fe80::a", xid=b"\x01\x02\x03", msg_type=11, extra=b""):
    from homework.components.routing import dhcpv6
    body = bytes([msg_type]) + xid + struct.pack("!HH", 1, 10) + b"\x00\x03\x00\x01" + to_bytes(mac) + extra
    src_a, dst_a = ipaddress.IPv6Address(src), ipaddress.IPv6Address("ff02::1:2")
    udp = struct.pack("!HHHH", dhcpv6.PORT_CLIENT, dhcpv6.PORT_SERVER, 8 + len(body), 0) + body
    ip = struct.pack("!IHBB16s16s", 6 << 28, len(udp), 17, 1, src_a.packed, dst_a.packed) + udp
    return b"\x33\x33\x00\x01\x00\x02" + to_bytes(mac) + b"\x86\xdd" + ip


def test_stateless_dhcpv6_answers_the_routers_dns_to_the_asking_device_only(core):
    join(core, A, 1)
    prefix = _prefix(core, A)
    routing = core.ctx.component("routing")
    assert core.switch.outputs(v6(1, A, "fe80::a", "ff02::1:2", 17, udp_src=546, dport=547)) == [CONTROLLER]
    core.switch.take_packet_outs()
    core.packet_in(PacketIn(in_port=1, data=_info_request(A)))
    assert core.switch.take_packet_outs() == []          # no dnsd in this home: nothing to tell
    routing._dns6 = lambda p: p.network_address + 1       # as with the dns component intercepting
    core.packet_in(PacketIn(in_port=1, data=_info_request(A)))
    (reply,) = core.switch.take_packet_outs()
    ip = ndp.parse_ipv6(reply.data[14:])
    assert reply.actions[0].port == 1 and str(ip.src) == "fe80::1" and str(ip.dst) == "fe80::a"
    msg = ip.payload[8:]
    assert msg[0] == 7 and msg[1:4] == b"\x01\x02\x03"
    assert (prefix.network_address + 1).packed in msg
    # RFC 8910 option 103: the captive portal API, as the RA's option 37 gives it
    uri = f"https://[{prefix.network_address + 1}]/ws.v1/captive-portal".encode()
    assert struct.pack("!HH", 103, len(uri)) + uri in msg
    pseudo = ip.src.packed + ip.dst.packed + struct.pack("!IxxxB", len(ip.payload), 17)
    assert checksum(pseudo + ip.payload) == 0
    # not from its port, not link-local, a SOLICIT, a malformed option: nothing
    for bad in (PacketIn(in_port=2, data=_info_request(A)),
                PacketIn(in_port=1, data=_info_request(A, src=str(prefix.network_address + 9))),
                PacketIn(in_port=1, data=_info_request(A, msg_type=1)),
                PacketIn(in_port=1, data=_info_request(A, extra=b"\x00\x17\x00\x40"))):
        core.packet_in(bad)
        assert core.switch.take_packet_outs() == []


def _mld_report(mac, groups, src="fe80::a"):
    # TO_EXCLUDE {}
    records = b"".join(struct.pack("!BBH16s", 4, 0, 0, ipaddress.IPv6Address(g).packed) for g in groups)
    icmp = struct.pack("!BBHHH", 143, 0, 0, 0, len(groups)) + records
    src_a, dst_a = ipaddress.IPv6Address(src), ipaddress.IPv6Address("ff02::16")
    csum = checksum(src_a.packed + dst_a.packed + struct.pack("!IxxxB", len(icmp), 58) + icmp)
    icmp = icmp[:2] + struct.pack("!H", csum) + icmp[4:]
    payload = bytes([58, 0, 5, 2, 0, 0, 1, 0]) + icmp
    ip = struct.pack("!IHBB16s16s", 6 << 28, len(payload), 0, 1, src_a.packed, dst_a.packed) + payload
    return b"\x33\x33\x00\x00\x00\x16" + to_bytes(mac) + b"\x86\xdd" + ip


def test_mld_joins_carry_mdns_over_ipv6_between_permitted_devices_only(core):
    C = "02:00:00:00:00:0c"
    for mac, port in ((A, 1), (B, 2), (C, 3)):
        join(core, mac, port)
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    sw = core.switch
    mdns = {"eth_type": 0x86DD, "ipv6_dst": "ff02::fb", "ip_proto": 17, "udp_src": 5353, "udp_dst": 5353}
    assert sw.outputs({**mdns, "in_port": 1, "eth_src": A, "ipv6_src": "fe80::a"}) == []    # nobody joined
    report = {"in_port": 2, "eth_src": B, "eth_type": 0x86DD, "ipv6_src": "fe80::b", "ipv6_dst": "ff02::16",
              "ip_proto": 58, "icmpv6_type": 143}
    assert sw.outputs(report) == [CONTROLLER]
    core.packet_in(PacketIn(in_port=2, data=_mld_report(B, ["ff02::fb", "ff02::1:ff00:b"], src="fe80::b")))
    core.packet_in(PacketIn(in_port=3, data=_mld_report(C, ["ff02::fb"], src="fe80::c")))   # C is pending
    assert sw.outputs({**mdns, "in_port": 1, "eth_src": A, "ipv6_src": "fe80::a"}) == [2]
    assert sw.outputs({**mdns, "in_port": 3, "eth_src": C, "ipv6_src": "fe80::c"}) == []     # pending sends nothing
    # a solicited-node group never carries neighbour discovery from one device to another
    ns = {"in_port": 1, "eth_src": A, "eth_type": 0x86DD, "ipv6_src": "fe80::a", "ipv6_dst": "ff02::1:ff00:b",
          "ip_proto": 58, "icmpv6_type": 135, "ipv6_nd_target": "fe80::b"}
    assert sw.outputs(ns) == []
    core.commands.call("deny", mac=B)                          # a denied member leaves every group
    assert sw.outputs({**mdns, "in_port": 1, "eth_src": A, "ipv6_src": "fe80::a"}) == []


def test_permitted_devices_get_mld_general_queries(core):
    join(core, A, 1)
    core.switch.take_packet_outs()
    core.commands.call("permit", mac=A)
    outs = core.switch.take_packet_outs()
    queries = [p for p in outs if p.data[:6] == bytes.fromhex("333300000001")]
    assert queries and queries[0].actions[0].port == 1
    ip = ndp.parse_ipv6(queries[0].data[14:])
    assert ip.hop_limit == 1 and str(ip.src) == "fe80::1" and ip.next_header == 0
    icmp = ip.payload[8:]
    assert icmp[0] == 130
    assert checksum(ip.src.packed + ip.dst.packed + struct.pack("!IxxxB", len(icmp), 58) + icmp) == 0


def test_the_dns_search_list_goes_with_the_dns_server():
    prefix = ipaddress.IPv6Network("2001:db8:100:5::/64")
    frame = ndp.router_advertisement(to_bytes(ROUTER_MAC), to_bytes(A), prefix, 300,
                                     dns=prefix.network_address + 1, search=["lan"])
    assert _icmp_ok(frame)
    opts, found = ndp.parse_ipv6(frame[14:]).payload[16:], {}
    while opts:
        found[opts[0]] = opts[:opts[1] * 8]
        opts = opts[opts[1] * 8:]
    assert found[31][8:].rstrip(b"\0") == b"\x03lan" and len(found[31]) % 8 == 0
    no_dns = ndp.router_advertisement(to_bytes(ROUTER_MAC), to_bytes(A), prefix, 300, search=["lan"])
    assert b"\x03lan" not in no_dns                            # no DNS server: no search list either
    with pytest.raises(ValueError):
        ndp.dns_names(["a" * 64 + ".lan"])


def test_what_a_device_sends_to_the_controller_over_ipv6_passes_its_own_meter(core, clock):
    from homework import pipeline as L
    join(core, A, 1)
    index = core.ctx.leases.get(A).index
    meter = core.switch.meters[L.punt_meter_id(index)]
    assert meter.rate_pps > 0 and meter.rate_kbps == 0
    def punts():
        return [f for f in core.switch.flows if CONTROLLER in [getattr(a, "port", None) for a in f.actions]
                and f.match.get("eth_type") == 0x86DD and f.table_id == 0]
    # pending: solicitations and DHCPv6; its MLD reports are nobody's business yet
    assert {f.match.get("icmpv6_type") or f.match.get("udp_dst") for f in punts()} == {133, 547}
    assert all(f.meter == L.punt_meter_id(index) for f in punts())
    core.commands.call("permit", mac=A)                   # same place: the meter stays, flows re-added
    assert L.punt_meter_id(index) in core.switch.meters
    assert {f.match.get("icmpv6_type") or f.match.get("udp_dst") for f in punts()} == {133, 131, 132, 143, 547}
    assert all(f.meter == L.punt_meter_id(index) for f in punts())
    core.commands.call("deny", mac=A)                     # denied: the MLD punts go with the forward flows
    assert {f.match.get("icmpv6_type") or f.match.get("udp_dst") for f in punts()} == {133, 547}
    core.commands.call("permit", mac=A)
    clock.advance(10_000)
    core.ctx.component("dhcp").expire_leases()             # lease over: meter and flows go
    assert L.punt_meter_id(index) not in core.switch.meters
    assert not [f for f in core.switch.flows if f.meter == L.punt_meter_id(index)]


# -- an idle household sends no RA and no query on a timer ------------------------------------
def _ras(core):
    return [p for p in core.switch.take_packet_outs() if p.data[12:14] == b"\x86\xdd" and p.data[54] == 134]


def _renew(core, mac, port):
    from homework.components.dhcp import message as m
    from dhcpframes import dhcp_frame
    ip = core.ctx.leases.get(mac).ip
    core.packet_in(PacketIn(in_port=port, data=dhcp_frame(mac, m.REQUEST, src_ip=ip, dst_ip="10.2.0.1")))


def test_a_lease_renewal_that_outlives_the_last_advertisement_brings_a_new_one(core, clock):
    join(core, A, 1)                          # pending: 30 s, told for 150 s (join takes that RA)
    clock.advance(15)
    _renew(core, A, 1)                        # still within what it was told
    assert _ras(core) == []
    core.commands.call("permit", mac=A)
    _renew(core, A, 1)                        # the permitted lease (3600 s) outlives it
    [ra] = _ras(core)
    ip = ndp.parse_ipv6(ra.data[14:])
    assert struct.unpack("!H", ip.payload[6:8])[0] == 3600 + 120 and ra.actions[0].port == 1
    clock.advance(1800)                       # each half-hourly renewal of the hour's lease
    _renew(core, A, 1)
    assert len(_ras(core)) == 1
    routing = core.ctx.component("routing")
    assert not hasattr(routing, "advertise_all")
    for _ in range(60):                       # an hour of timers: no RA to anyone
        for timer in core.timers:
            timer()
    assert _ras(core) == []


def test_general_queries_go_to_the_devices_that_joined_a_group(core):
    join(core, A, 1)
    join(core, B, 2)
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    core.packet_in(PacketIn(in_port=2, data=_mld_report(B, ["ff02::fb"])))
    core.switch.take_packet_outs()
    core.ctx.component("routing").query_members()
    queries = [p for p in core.switch.take_packet_outs() if p.data[:6] in (bytes.fromhex("333300000001"),
                                                                          bytes.fromhex("01005e000001"))]
    assert queries and {q.actions[0].port for q in queries} == {2}
