"""The ISP edge's checks, without a switch: configuration, a placement's addresses, the
budget, the control-message bucket, and the flows and filters it writes."""
from __future__ import annotations

import ipaddress

import pytest

from ispedge import config
from ispedge.edge import Edge
from ispedge.placement import FiveTuple, HouseholdPlacements, PlacementError, TokenBucket, parse_request, queue_id
from ispedge.switch import Switch, household_flows, placement_flows, qos_command

DOC = {
    "edge": {"budget": 2, "messages_per_second": 1, "burst": 2},
    "port": [{"name": "bh0", "rate_kbit": 20000}],
    "household": [{"name": "a", "addresses": ["100.64.0.11/32", "2001:db8:a1::/48"], "line_kbit": 20000,
                   "guaranteed_kbit": 2000},
                  {"name": "b", "addresses": ["100.64.0.12/32", "2001:db8:a2::/48"], "line_kbit": 10000,
                   "guaranteed_kbit": 1000, "budget": 5}],
}


def cfg() -> config.EdgeConfig:
    return config.parse(DOC)


def req(**kw) -> dict:
    body = {"proto": "udp", "src": "100.64.0.11", "sport": 4000, "dst": "203.0.113.10", "dport": 5004,
            "queue": "high"}
    body.update(kw)
    return body


def test_the_config_is_read_and_checked():
    c = cfg()
    a, b = c.households
    assert (a.index, a.budget, b.budget) == (1, 2, 5)
    assert c.tc_classifies            # the userspace datapath: set_queue alone would not reach a qdisc
    for bad, words in [({"household": [{**DOC["household"][0], "addresses": ["10.0.0.1/8"]}]}, "not an address"),
                       ({"household": [DOC["household"][0], {**DOC["household"][1], "addresses": ["100.64.0.11/32"]}]},
                        "overlaps"),
                       ({"household": [{**DOC["household"][0], "guaranteed_kbit": 30000}]}, "guaranteed_kbit"),
                       ({"household": [{**DOC["household"][0], "name": "A B"}]}, "name"),
                       ({"port": []}, "[[port]]"),
                       ({"edge": {"listen": "nowhere"}}, "listen")]:
        with pytest.raises(config.ConfigError, match=words.replace("[", r"\[")):
            config.parse({**DOC, **bad})


def test_a_placement_must_have_one_end_in_the_households_addresses():
    a, b = cfg().households
    flow, queue = parse_request(a, req())
    assert queue == "high" and flow.src == ipaddress.ip_address("100.64.0.11")
    parse_request(a, req(src="203.0.113.10", dst="100.64.0.11"))             # either direction
    parse_request(a, req(src="2001:db8:a1:5::9", dst="2001:db8:cafe::10"))   # inside the prefix
    for other in ("100.64.0.12", "2001:db8:a2::2", "100.64.0.99"):
        dst = "2001:db8:cafe::10" if ":" in other else "203.0.113.10"
        with pytest.raises(PlacementError) as err:
            parse_request(a, req(src=other, dst=dst))
        assert err.value.status == 403
    for bad in (req(proto="icmp"), req(sport=0), req(dport=70000), req(src="x"), req(queue="urgent"),
                req(dst="2001:db8:cafe::10"), {**req(), "actions": "output:1"}, ["udp"]):
        with pytest.raises(PlacementError) as err:
            parse_request(a, bad)
        assert err.value.status == 400


def test_the_budget_counts_connections_not_directions():
    a = cfg().households[0]
    mine = HouseholdPlacements(a)
    f1, _ = parse_request(a, req())
    f2, _ = parse_request(a, req(sport=4001))
    p1, created = mine.place(f1, "high")
    assert created
    _, created = mine.place(f1.reverse(), "medium")       # the same connection: moved, not added
    assert not created and p1.queue == "medium"
    mine.place(f2, "high")
    with pytest.raises(PlacementError) as err:
        mine.place(parse_request(a, req(sport=4002))[0], "high")
    assert err.value.status == 409
    mine.remove(p1.id)
    mine.place(parse_request(a, req(sport=4002))[0], "high")
    with pytest.raises(PlacementError):
        mine.remove(999)


def test_the_bucket_allows_a_burst_then_the_rate():
    now = [0.0]
    bucket = TokenBucket(1.0, 2, clock=lambda: now[0])
    assert bucket.take() == 0 and bucket.take() == 0
    assert bucket.take() == pytest.approx(1.0)
    now[0] += 1.0
    assert bucket.take() == 0


def test_flows_and_queues_name_the_households_own_queues():
    c = cfg()
    a, b = c.households
    assert [queue_id(a, q) for q in ("high", "medium", "default")] == [5, 6, 7]
    assert queue_id(b, "high") == 9
    p = HouseholdPlacements(a).place(FiveTuple("tcp", ipaddress.ip_address("2001:db8:a1::2"), 50000,
                                               ipaddress.ip_address("2001:db8:cafe::10"), 443), "high")[0]
    flows = placement_flows(a, p)
    assert flows[0].endswith("tcp6,ipv6_src=2001:db8:a1::2,tp_src=50000,ipv6_dst=2001:db8:cafe::10,tp_dst=443,"
                             "actions=set_queue:5,NORMAL")
    assert "ipv6_src=2001:db8:cafe::10,tp_src=443" in flows[1]
    assert any("nw_dst=100.64.0.11/32" in f and "set_queue:7" in f for f in household_flows(a))
    cmd = " ".join(qos_command(c, c.ports[0]))
    # the high queue: the guaranteed rate as floor and ceiling, first priority
    assert "other-config:min-rate=2000000 other-config:max-rate=2000000 other-config:priority=0" in cmd
    assert "other-config:max-rate=10000000 other-config:priority=2" in cmd      # b's default: b's line


class RecordingSwitch(Switch):
    def __init__(self, c):
        super().__init__(c, runner=self.record)
        self.commands: list[tuple[list, str | None]] = []

    def record(self, cmd, stdin):
        self.commands.append((list(cmd), stdin))
        if list(cmd[:3]) == ["tc", "class", "show"]:      # the tree is there (household b's last queue)
            return "class htb 1:c parent 1:fffe leaf 100c: prio 2 rate 250Kbit ceil 10Mbit\n"
        return ""


def test_a_placement_is_mirrored_into_u32_filters_on_the_userspace_datapath():
    c = cfg()
    sw = RecordingSwitch(c)
    edge = Edge(c, switch=sw)
    a = c.households[0]
    edge.place(a, req())
    batches = [stdin for cmd, stdin in sw.commands if cmd[:2] == ["tc", "-batch"]]
    assert any("match ip src 100.64.0.11/32 match ip dst 203.0.113.10/32 match ip sport 4000 0xffff" in b
               and "classid 1:6" in b for b in batches)
    with pytest.raises(PlacementError):
        edge.place(a, req(src="100.64.0.12"))


def test_on_the_userspace_datapath_the_queues_can_be_built_on_the_backhauls_interface():
    doc = {**DOC, "port": [{"name": "t-bh0", "rate_kbit": 20000, "tap": True, "queue_device": "bh0"}]}
    c = config.parse(doc)
    sw = RecordingSwitch(c)
    sw.setup()
    added = [cmd for cmd, _ in sw.commands if cmd[:2] == ["ovs-vsctl", "--timeout=20"] and "add-port" in cmd]
    assert added and added[0][-3:] == ["interface", "t-bh0", "type=tap"]
    tree = "\n".join(stdin or "" for cmd, stdin in sw.commands if cmd[:2] == ["tc", "-batch"])
    # the HTB tree OVS would make, on bh0: household a's high queue (5) is class 1:6, first priority
    assert "class replace dev bh0 parent 1:fffe classid 1:6 htb rate 2000000bit ceil 2000000bit prio 0" in tree
    assert "filter add dev bh0 parent 1: protocol ip" in tree
    assert not any("qos=@q" in " ".join(cmd) for cmd, _ in sw.commands)     # no OVS QoS on the tap
