"""The lean OpenFlow encoder (adapter/ofencode.py) gives os-ken's bytes for every
decision it takes, and takes the per-device flows a new device costs; what it cannot pack
goes to os-ken. (Every unit test's fake switch also compares the two paths, in ofwire.py.)"""
import ipaddress

import pytest
from os_ken.ofproto import ofproto_v1_3, ofproto_v1_3_parser

from homework import flows as F
from homework.adapter import ofencode
from homework.adapter.osken_app import _next_xid, to_message
from homework.components.routing import flowsets as fs
from homework.components.routing import flowsets6 as fs6
from homework.leases import Lease


class Dp:
    ofproto, ofproto_parser = ofproto_v1_3, ofproto_v1_3_parser
    xid = 0


def osken_bytes(decision, xid):
    msg = to_message(Dp, decision)
    msg.set_xid(xid)
    msg.serialize()
    return bytes(msg.buf)


PREFIX = ipaddress.ip_network("fd00:1:2:1::/64")
DEVICE = Lease(mac="02:AB:00:00:00:01", index=1, network="10.2.0.4/30", router="10.2.0.5", ip="10.2.0.6",
               broadcast="10.2.0.7", expires=0.0, port=3, active=True)


def device_decisions():
    return (fs.arp_flows(DEVICE) + fs.gateway_flows(DEVICE) + fs.forward_flows(DEVICE, "02:00:00:00:00:01")
            + fs.account_flows(DEVICE, 60) + fs.per_host_flows(DEVICE)
            + fs.base_flows(ipaddress.ip_network("10.2.0.0/16"))
            + fs6.base_flows(ipaddress.ip_network("fd00:1:2::/48"))
            + fs6.nd_flows(DEVICE, PREFIX) + fs6.gateway_flows(DEVICE, PREFIX)
            + fs6.forward_flows(DEVICE, PREFIX, "02:00:00:00:00:01") + fs6.per_host_flows(DEVICE, PREFIX))


def test_the_flows_of_a_device_are_packed_leanly_and_exactly_as_os_ken_packs_them():
    lean = 0
    for i, decision in enumerate(device_decisions()):
        got = ofencode.encode(decision, 1000 + i)
        if got is None:
            continue
        lean += 1
        assert got == osken_bytes(decision, 1000 + i), decision
    assert lean >= 56          # the accounting flows' learn actions too


@pytest.mark.parametrize("decision", [
    F.FlowMod(match={"in_port": 7, "eth_src": "02:00:00:00:00:09", "eth_type": 0x0800, "ipv4_src": "10.2.0.2"},
              actions=(F.SetField("eth_dst", "02:00:00:00:00:01"), F.DecTTL(), F.Output(4)),
              priority=3000, table_id=1, idle_timeout=60, hard_timeout=3600, cookie=0x0123456789ABCDEF,
              send_flow_removed=True, goto=2),
    F.FlowMod(match={"in_port": 0xFFFFFFFE, "eth_type": 0x0800, "ipv4_src": "10.2.0.5", "ipv4_dst": "10.2.0.6"},
              actions=(F.SetField("reg7", 3), F.Resubmit(5)), priority=30000, cookie=7),
    F.FlowMod(match={"eth_type": 0x0800}, actions=(F.SetField("reg0", 0xFFFFFFFF), F.Output(2))),
    F.FlowMod(match={"eth_type": 0x86DD, "ipv6_src": "fd00::1", "icmpv6_type": 135,
                     "ipv6_nd_target": "fe80::1"}, actions=(F.Output(F.CONTROLLER, 128),), meter=5),
    F.FlowMod(match={"in_port": 2, "vlan_vid": 0x1000 | 261}, actions=(F.PopVlan(), F.Output(1))),
    F.FlowMod(match={"in_port": 1}, actions=(F.PushVlan(), F.SetField("vlan_vid", 0x1000 | 257), F.Output(250))),
    F.FlowMod(match={}, priority=0),                      # a drop with no match at all
    F.FlowDelete(cookie=0x0A00000000000000, cookie_mask=0xFF00000000000000),
    F.FlowDelete(match={"in_port": 3, "eth_src": "02:00:00:00:00:03"}, strict=True, priority=30000,
                 table_id=0, out_port=5),
    F.PacketOut(data=b"\x02" * 60, actions=(F.Output(3),), in_port=F.CONTROLLER),
    F.FlowMod(match={"eth_type": 0x0800, "ipv4_dst": ("10.2.0.7", "255.255.0.0")},      # masked: value & mask
              actions=(F.Resubmit(3), F.Output(2))),
    F.FlowMod(match={"eth_type": 0x86DD, "ipv6_src": ("fd00:1:2:3::9", "ffff:ffff:ffff:ffff::"),
                     "eth_dst": ("01:00:5e:00:00:00", "ff:ff:ff:80:00:00")}),
    # learn: the packet's fields and literals (an odd number of specs: the action is padded)
    F.FlowMod(match={"in_port": 3, "eth_type": 0x86DD},
              actions=(F.Learn(table_id=10, fields=(("eth_type", 0x86DD), ("ip_proto", None), ("ipv6_src", None),
                                                    ("ipv6_dst", None), ("in_port", 7)),
                               priority=100, idle_timeout=60, hard_timeout=3600, fin_idle_timeout=2,
                               cookie=0x0500000000000007, send_flow_removed=True), F.Resubmit(11)), table_id=10),
    F.FlowMod(match={"eth_type": 0x0800},
              actions=(F.Learn(table_id=10, fields=(("eth_src", None), ("ip_proto", 17), ("udp_dst", None))),)),
    F.FlowMod(match={"eth_type": 0x0800}, actions=(F.Learn(table_id=10, fields=()),)),
])
def test_each_shape_it_takes_matches_os_ken_byte_for_byte(decision):
    got = ofencode.encode(decision, 77)
    assert got is not None
    assert got == osken_bytes(decision, 77)


@pytest.mark.parametrize("decision", [
    F.FlowMod(match={"reg0": 1}),                                                     # a Nicira field
    F.FlowMod(match={"in_port": 1}, actions=(F.Move("in_port", "eth_dst", 16),)),     # a Nicira action
    F.FlowMod(match={"ipv4_src": "10.2.0.300"}),                                      # not an address
    F.FlowMod(match={}, actions=(F.SetField("reg7", 1 << 32),)),                      # wider than a register
    F.FlowMod(match={"in_port": "1"}),                                                # not a number
    F.FlowStatsRequest(),
    F.AggregateStatsRequest(),
    F.FlowMod(match={}, actions=(F.Learn(table_id=10, fields=(("vlan_vid", None),)),)),   # not a learn field
])
def test_what_it_cannot_pack_is_left_to_os_ken(decision):
    assert ofencode.encode(decision, 1) is None


def test_transaction_ids_follow_the_datapaths_counter_as_os_kens_set_xid_does():
    dp = Dp()
    dp.xid = ofproto_v1_3.MAX_XID - 1
    assert _next_xid(dp) == ofproto_v1_3.MAX_XID
    assert _next_xid(dp) == 0
    assert _next_xid(dp) == 1


def test_remembered_fields_give_the_same_bytes_and_the_memory_is_bounded(monkeypatch):
    from homework.adapter import ofencode
    monkeypatch.setattr(ofencode, "_OXM_CACHE", {})
    monkeypatch.setattr(ofencode, "_OXM_CACHE_MAX", 4)
    match = {"in_port": 3, "eth_src": "02:00:00:00:00:07", "eth_type": 0x0800, "ipv4_src": "10.2.0.2"}
    first = ofencode.match_bytes(match)
    assert len(ofencode._OXM_CACHE) == 4
    assert ofencode.match_bytes(match) == first
    ofencode.match_bytes({"ip_proto": 17})          # a fifth field: the memory starts again
    assert len(ofencode._OXM_CACHE) == 1
    assert ofencode.match_bytes(match) == first
    # a masked pair and a bool are never remembered; a bool is still refused
    ofencode.match_bytes({"ipv4_dst": ("10.2.0.0", "255.255.0.0")})
    assert ("ipv4_dst", ("10.2.0.0", "255.255.0.0")) not in ofencode._OXM_CACHE
    with pytest.raises(ofencode.NotLean):
        ofencode.match_bytes({"in_port": True})


def test_learns_field_headers_are_os_kens():
    from homework.adapter.nx import NXM_FIELDS
    assert set(ofencode.NXM_HEADERS) == set(NXM_FIELDS)
    for name, (nxm, bits) in NXM_FIELDS.items():
        buf = bytearray()
        ofproto_v1_3.oxm_serialize_header(ofproto_v1_3.oxm_from_user_header(nxm), buf, 0)
        assert ofencode.NXM_HEADERS[name] == (int.from_bytes(buf, "big"), bits), name
