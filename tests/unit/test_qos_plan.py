"""The qos plan as text: the HTB tree per interface, the nftables table that
classifies by device and by application, the leaf choice, and the counters parser."""
import json
import re

from homework.components.qos import apply, plan, stats
from homework.components.qos.plan import AppRule, Member, PortRange, Side, build

A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
MEMBERS = [Member(A, 1, "10.2.0.4/30", "fd00:0:0:1::/64"), Member(B, 2, "10.2.0.8/30")]
SIDES = [Side("up", "wan0", 4750), Side("down", "br0", 19000)]


def lines_for(p, dev):
    return [line for line in p.tc if f" dev {dev} " in line]


def test_the_link_is_shaped_at_shape_percent_and_high_is_sure_of_its_share_and_may_borrow_it_all():
    p = build(SIDES, MEMBERS, {}, [], 95, 30, "bfifo")
    down = lines_for(p, "br0")
    assert down[0] == "qdisc replace dev br0 root handle 1: htb default 3fff"
    assert "classid 1:1 htb rate 18050kbit ceil 18050kbit" in down[1]       # 95% of 19000
    high = next(line for line in down if "classid 1:10 " in line)
    # 30% of the link assured, the whole link when idle (never capped below the others), served first
    assert "rate 5415kbit ceil 18050kbit prio 0" in high
    medium = next(line for line in down if "classid 1:20 " in line)
    default = next(line for line in down if "classid 1:30 " in line)
    assert "ceil 18050kbit prio 1" in medium and "ceil 18050kbit prio 2" in default
    up = lines_for(p, "wan0")
    assert "classid 1:1 htb rate 4512kbit ceil 4512kbit" in up[1]            # 95% of 4750


def test_the_download_is_shaped_at_its_own_lower_percent_and_the_upload_keeps_shape_percent():
    p = build(SIDES, MEMBERS, {}, [], 95, 30, "bfifo", down_percent=90)
    down, up = lines_for(p, "br0"), lines_for(p, "wan0")
    assert "classid 1:1 htb rate 17100kbit ceil 17100kbit" in down[1]       # 90% of 19000
    assert "rate 5130kbit ceil 17100kbit prio 0" in next(line for line in down if "classid 1:10 " in line)
    assert "ceil 17100kbit prio 2" in next(line for line in down if "classid 1:30 " in line)
    assert "classid 1:1 htb rate 4512kbit ceil 4512kbit" in up[1]            # still 95% of 4750
    assert plan.side_percent(SIDES[1], 95, None) == 95                       # unset: shape_percent


def test_without_fq_codel_a_leaf_holds_100_ms_at_its_ceil_in_bytes_not_packets():
    # bytes: a download's ACKs on a device's upload leaf must not crowd out its data frames
    p = build(SIDES, MEMBERS, {}, [], 95, 30, "bfifo")
    assert "qdisc replace dev wan0 parent 1:c001 handle c001: bfifo limit 56400" in p.tc      # 4512 kbit, 100 ms
    assert "qdisc replace dev wan0 parent 1:4001 handle 4001: bfifo limit 56400" in p.tc      # high: 4512 kbit too
    assert "qdisc replace dev br0 parent 1:8002 handle 8002: bfifo limit 225625" in p.tc      # 18050 kbit
    assert plan.leaf_bytes(100) == plan.MIN_LEAF_BYTES                                         # a few frames at least


def test_every_device_has_its_own_leaf_in_every_class_with_a_bounded_queue():
    p = build(SIDES, MEMBERS, {}, [], 95, 30, "bfifo")
    for dev in ("wan0", "br0"):
        text = "\n".join(lines_for(p, dev))
        for parent, minor in (("1:10", "4001"), ("1:20", "8001"), ("1:30", "c001"),
                              ("1:10", "4002"), ("1:20", "8002"), ("1:30", "c002"), ("1:30", "3fff")):
            assert f"parent {parent} classid 1:{minor} htb" in text
            assert re.search(rf"parent 1:{minor} handle {minor}: bfifo limit \d+$", text, re.M)
    assert p.leaves[("up", 0x4001)] == ("high", A) and p.leaves[("down", 0xC002)] == ("default", B)
    assert p.leaves[("down", 0x3FFF)] == ("default", None)


def test_fq_codel_leaves_when_the_kernel_has_them():
    p = build(SIDES, MEMBERS, {}, [], 95, 30, "fq_codel")
    assert "qdisc replace dev br0 parent 1:4001 handle 4001: fq_codel" in p.tc
    assert not any("bfifo" in line for line in p.tc)


def test_the_leaf_is_chosen_by_trying_fq_codel(monkeypatch):
    tried = []

    def fake(argv, text=""):
        tried.append(argv)
        return (0, "") if "fq_codel" in argv else (2, "")
    monkeypatch.setattr(apply, "run_tool", fake)
    assert apply.choose_leaf("wan0") == "fq_codel"
    monkeypatch.setattr(apply, "run_tool", lambda argv, text="": (2, "Error: Specified qdisc kind is unknown."))
    assert apply.choose_leaf("wan0") == "bfifo"
    # no handle: replacing the bfifo's own handle with another kind is refused by the kernel
    assert tried[0] == ["tc", "qdisc", "replace", "dev", "wan0", "parent", "1:3fff", "fq_codel"]


def test_devices_are_classified_by_their_addresses_before_masquerade():
    p = build(SIDES, MEMBERS, {A: "high"}, [], 95, 30, "bfifo")
    assert "type filter hook postrouting priority mangle" in p.nft      # before srcnat: the device's own address
    assert 'oifname "wan0" goto up' in p.nft and 'oifname "br0" goto down' in p.nft
    assert "map dev_up4 { type ipv4_addr : classid; flags interval; elements = { 10.2.0.4/30 : 1:4001, " \
           "10.2.0.8/30 : 1:c002 }; }" in p.nft
    assert ("map dev_down6 { type ipv6_addr : classid; flags interval; elements = { fd00:0:0:1::/64 : 1:4001 }; }"
            in p.nft)
    assert "meta priority set ip saddr map @dev_up4" in p.nft
    assert "meta priority set ip daddr map @dev_down4" in p.nft
    assert p.nft.startswith("table inet homework_qos\ndelete table inet homework_qos\n")   # one atomic replace


def test_an_app_marks_its_connections_and_the_better_class_wins():
    video = AppRule(7, "medium", (PortRange("udp", 3478, 3481), PortRange("tcp", 443, 443)),
                    {"198.51.100.7": 120.0}, {}, True)
    p = build(SIDES, MEMBERS, {A: "high"}, [video], 95, 30, "bfifo")
    assert "udp dport { 3478-3481 } ct mark set 7" in p.nft
    assert "tcp sport { 443 } ct mark set 7" in p.nft                   # the download direction
    assert "ip daddr @app7_4 ct mark set 7" in p.nft and "ip saddr @app7_4 ct mark set 7" in p.nft
    assert "set app7_4 { type ipv4_addr; flags timeout; elements = { 198.51.100.7 timeout 120s }; }" in p.nft
    # A is high already (high beats medium); B's video traffic goes to its medium leaf
    assert "7 . 10.2.0.4/30 : 1:4001, 7 . 10.2.0.8/30 : 1:8002" in p.nft
    assert "meta priority set ct mark . ip saddr map @app_up4" in p.nft


def test_no_device_and_no_app_is_still_a_valid_table():
    p = build(SIDES[:1], [], {}, [], 95, 30, "bfifo")
    assert "elements" not in p.nft and "chain down" not in p.nft
    assert not any("br0" in line for line in p.tc)


def test_gone_leaves_are_deleted():
    assert plan.tc_deletes("br0", {0x4001, 0x4002}, {0x4001}) == ["class del dev br0 classid 1:4002"]


def test_learned_addresses_go_to_the_app_sets():
    text = plan.nft_learned(3, ["192.0.2.1", "2001:db8::1"], 1800)
    assert "add element inet homework_qos app3_4 { 192.0.2.1 timeout 1800s }" in text
    assert "add element inet homework_qos app3_6 { 2001:db8::1 timeout 1800s }" in text


# Recorded from `tc -s -j class show dev wan0` (iproute2 6.1, which prints text for
# classes even with -j); counters edited to be non-zero.
RECORDED = """class htb 1:10 parent 1:1 rate 1353Kbit ceil 1353Kbit burst 1599b cburst 1599b
 Sent 5000 bytes 10 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
 lended: 0 borrowed: 0 giants: 0
 tokens: 147812 ctokens: 147812

class htb 1:1 root rate 4512Kbit ceil 4512Kbit burst 1598b cburst 1598b
 Sent 9000 bytes 30 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0

class htb 1:4001 parent 1:10 leaf 4001: prio 0 rate 451Kbit ceil 1353Kbit burst 1599b cburst 1599b
 Sent 5000 bytes 10 pkt (dropped 3, overlimits 7 requeues 0)
 backlog 0b 0p requeues 0

class htb 1:c002 parent 1:30 leaf c002: prio 2 rate 421Kbit ceil 4512Kbit burst 1599b cburst 1598b
 Sent 4000 bytes 20 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
"""


def test_the_counters_parser_reads_the_text_form():
    found = stats.parse(RECORDED)
    assert found[0x4001] == stats.Counter(5000, 10, 3)
    assert found[0xC002] == stats.Counter(4000, 20, 0)
    assert found[0x1] == stats.Counter(9000, 30, 0)


def test_the_counters_parser_reads_the_json_form():
    rows = [{"class": "htb", "handle": "1:4001", "parent": "1:10", "leaf": "4001:",
             "stats": {"bytes": 777, "packets": 3, "drops": 1, "overlimits": 0, "requeues": 0}},
            {"class": "htb", "handle": "1:1", "root": True, "stats": {"bytes": 777, "packets": 3, "drops": 0}}]
    found = stats.parse(json.dumps(rows))
    assert found[0x4001] == stats.Counter(777, 3, 1) and found[1].drops == 0


def test_rates_per_class_and_device_from_two_samples():
    p = build(SIDES[:1], MEMBERS, {A: "high"}, [], 95, 30, "bfifo")
    before = stats.Sample(100.0, {("up", m): c for m, c in stats.parse(RECORDED.replace("5000", "1000")).items()})
    now = stats.Sample(102.0, {("up", m): c for m, c in stats.parse(RECORDED).items()})
    summary = stats.summarize(now, before, p.leaves)
    high = next(r for r in summary["classes"] if r["class"] == "high")
    assert high == {"direction": "up", "class": "high", "rate_bps": 16000, "bytes": 5000, "drops": 3, "packets": 10}
    assert {"mac": A, "direction": "up", "class": "high", "rate_bps": 16000, "bytes": 5000, "drops": 3,
            "packets": 10} in summary["devices"]
    assert stats.high_drops(summary) == 3


def test_every_app_has_a_byte_counter_per_direction():
    video = AppRule(7, "medium", (PortRange("udp", 3478, 3481),))
    p = build(SIDES, MEMBERS, {}, [video], 95, 30, "bfifo")
    assert "counter app7_up { }" in p.nft and "counter app7_down { }" in p.nft
    assert 'ct mark 7 counter name "app7_up"' in p.nft and 'ct mark 7 counter name "app7_down"' in p.nft
    # counted after the mark is set, so a connection's first packet counts too
    up = p.nft.split("chain up {")[1]
    assert up.index("ct mark set 7") < up.index('counter name "app7_up"')


def test_app_rates_from_nft_counters_and_garbage_is_left_out():
    def listing(up_bytes):
        return json.dumps({"nftables": [
            {"metainfo": {"version": "1.0.6"}},
            {"counter": {"family": "inet", "name": "app7_up", "table": "homework_qos", "packets": 3,
                         "bytes": up_bytes}},
            {"counter": {"family": "inet", "name": "app7_down", "table": "homework_qos", "packets": 1, "bytes": 100}},
            {"counter": {"family": "inet", "name": "other", "table": "homework_qos", "packets": 1, "bytes": 1}}]})
    assert stats.parse_app_counters("not json") == {} and stats.parse_app_counters("") == {}
    before = stats.Sample(10.0, {}, stats.parse_app_counters(listing(1000)))
    now = stats.Sample(12.0, {}, stats.parse_app_counters(listing(3000)))
    assert set(now.apps) == {("up", 7), ("down", 7)}
    summary = stats.summarize(now, before, {}, {7: ("video calls", "high")})
    assert {"name": "video calls", "direction": "up", "class": "high", "rate_bps": 8000, "bytes": 3000,
            "packets": 3} in summary["apps"]
    # an app deleted since the sample (no name) is not reported
    assert stats.summarize(now, before, {}, {})["apps"] == []


def test_the_download_percent_is_a_checked_config_key():
    import pytest
    from homework.config import ConfigError, parse
    assert parse({}).qos_down_percent == 90 and parse({}).qos_shape_percent == 95
    assert parse({"qos": {"down_percent": 85}}).qos_down_percent == 85
    for bad in (49, 101, "90"):
        with pytest.raises(ConfigError, match="qos.down_percent"):
            parse({"qos": {"down_percent": bad}})
