"""Per-flow accounting from switch-learned entries, and per-host flow protection."""
import pytest

from homework import pipeline as L
from homework.flows import LOCAL, Datapath, FlowRemoved, FlowStats, FlowStatsRequest
from routingkit import ip_pkt, from_router, join, routing_core

A = "02:00:00:00:00:0a"
WEB = "203.0.113.10"


@pytest.fixture
def core(tmp_path, clock):
    core = routing_core(tmp_path, clock, per_host_flow_limit=10)
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    return core


def learned(core):
    return [f for f in core.switch.flows if L.kind_of(f.cookie) == L.KIND_LEARNED]


def stats_for(flows, packets, nbytes):
    return [FlowStats(match=f.match, cookie=f.cookie, priority=f.priority, duration_sec=1,
                      packet_count=packets, byte_count=nbytes, table_id=f.table_id) for f in flows]


def events(core, topic):
    return [p for t, p in core.events if t == topic]


def flow_records(core):
    """Every flow record published, in order (records are published together, as `flows`)."""
    return [r._asdict() for t, p in core.events if t == "flows" for r in p.records]


def test_first_packet_of_each_direction_learns_an_exact_flow(core):
    core.switch.outputs(ip_pkt(1, A, "10.2.0.2", WEB, sport=40000, dport=80))
    core.switch.outputs(from_router(WEB, "10.2.0.2", sport=80, dport=40000))
    core.switch.outputs(ip_pkt(1, A, "10.2.0.2", WEB, sport=40000, dport=80))   # same flow again
    flows = learned(core)
    assert len(flows) == 2
    out = [f for f in flows if f.match["ipv4_src"] == "10.2.0.2"][0]
    assert out.match == {"eth_type": 0x0800, "ip_proto": 6, "ipv4_src": "10.2.0.2", "ipv4_dst": WEB,
                         "tcp_src": 40000, "tcp_dst": 80}
    assert out.idle_timeout == 30 and out.send_flow_removed and L.device_of(out.cookie) == 0


def test_stats_polls_report_deltas_and_flow_removed_the_rest(core):
    routing = core.ctx.component("routing")
    core.switch.outputs(ip_pkt(1, A, "10.2.0.2", WEB, proto=17, sport=5000, dport=9000))
    [flow] = learned(core)
    routing.poll_flow_stats()                      # ends the priming interval from datapath_up
    assert isinstance(core.switch.stats_requests[-1], FlowStatsRequest)
    core.flow_stats(stats_for([flow], 10, 10_000))
    core.flow_stats(stats_for([flow], 25, 25_000))
    core.flow_removed(FlowRemoved(match=flow.match, cookie=flow.cookie, priority=flow.priority,
                                  reason="idle_timeout", duration_sec=40, packet_count=30,
                                  byte_count=30_000, table_id=L.TABLE_ACCOUNT))
    rows = flow_records(core)
    assert [(r["npkts"], r["nbytes"]) for r in rows] == [(10, 10_000), (15, 15_000), (5, 5_000)]
    assert rows[0] == {"mac": A, "proto": 17, "saddr": "10.2.0.2", "sport": 5000, "daddr": WEB,
                       "dport": 9000, "npkts": 10, "nbytes": 10_000}
    routing.poll_flow_stats()
    bw = events(core, "bandwidth")
    assert bw[-1] == {"mac": A, "ip": "10.2.0.2", "bytes": 30_000, "up": 30_000, "down": 0, "seconds": 10}


def test_after_reconnect_the_first_poll_is_a_baseline(core):
    routing = core.ctx.component("routing")
    core.switch.outputs(ip_pkt(1, A, "10.2.0.2", WEB))
    [flow] = learned(core)
    core.datapath_up(Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1}))
    core.flow_stats(stats_for([flow], 100, 100_000))   # counted by an earlier run
    routing.poll_flow_stats()
    core.flow_stats(stats_for([flow], 101, 100_100))
    assert [(r["npkts"], r["nbytes"]) for r in flow_records(core)] == [(1, 100)]


def answer_counts(core):
    """The fake switch answers the routing component's flow-stats requests (a poll's: the
    learned entries, and the devices it reads), until nothing is asked any more."""
    while core.switch.stats_requests:
        requests, core.switch.stats_requests[:] = list(core.switch.stats_requests), []
        for req in requests:
            matching = [f for f in core.switch.flows if f.table_id == req.table_id
                        and f.cookie & req.cookie_mask == req.cookie & req.cookie_mask]
            core.flow_stats(stats_for(matching, 1, 100))


def count_flows(core):
    """One accounting poll, answered: the flow limit is checked from what it reads."""
    core.switch.stats_requests.clear()
    core.ctx.component("routing").poll_flow_stats()
    answer_counts(core)


def test_flow_limit_collapses_to_a_per_host_entry_with_an_alert(core):
    sw = core.switch
    for port in range(10):
        assert sw.outputs(ip_pkt(1, A, "10.2.0.2", WEB, sport=20000 + port)) == [LOCAL]
    count_flows(core)
    assert events(core, "alert") == [] and len(learned(core)) == 10      # at the limit: fine
    assert sw.outputs(ip_pkt(1, A, "10.2.0.2", WEB, sport=30000)) == [LOCAL]
    count_flows(core)
    [alert] = events(core, "alert")
    assert alert["mac"] == A and alert["kind"] == "flow-limit"
    assert learned(core) == []
    # one entry per direction now, and the device still works
    assert sw.outputs(ip_pkt(1, A, "10.2.0.2", WEB, sport=30001)) == [LOCAL]
    assert learned(core) == []
    account = [f for f in sw.flows if L.kind_of(f.cookie) == L.KIND_ACCOUNT]
    assert len(account) == 2 and all(not f.actions for f in account)
    assert core.commands.call("routing-status")["devices"][0]["per_host"] is True
    # collapsed devices are not counted again, so no second alert
    count_flows(core)
    assert len(events(core, "alert")) == 1


def test_per_host_counts_still_give_bandwidth(core):
    routing = core.ctx.component("routing")
    routing.poll_flow_stats()
    routing.per_host.add(0)
    core.commands.call("deny", mac=A)
    core.commands.call("permit", mac=A)            # re-permit resets to per-flow
    assert not routing.per_host
    account = [f for f in core.switch.flows if L.kind_of(f.cookie) == L.KIND_ACCOUNT]
    core.flow_stats(stats_for(account[:1], 3, 3_000))
    routing.poll_flow_stats()
    assert events(core, "bandwidth")[-1]["bytes"] == 3_000
    assert flow_records(core) == []              # per-host entries are not flows


def test_flow_counting_is_one_request_whatever_the_number_of_devices(tmp_path, clock):
    core = routing_core(tmp_path, clock, per_host_flow_limit=10)
    macs = [f"02:00:00:00:01:{i:02x}" for i in range(40)]
    for port, mac in enumerate(macs, start=1):
        join(core, mac, port)
        core.commands.call("permit", mac=mac)
    routing = core.ctx.component("routing")
    routing.poll_flow_stats()
    core.switch.stats_requests.clear()
    routing.poll_flow_stats()
    learned = [r for r in core.switch.stats_requests if L.kind_of(r.cookie) == L.KIND_LEARNED]
    [request] = learned
    assert isinstance(request, FlowStatsRequest) and request.table_id == L.TABLE_ACCOUNT
    assert request.cookie_mask == L.MASK_ONE_KIND
    answer_counts(core)      # no flows at all: nothing collapses
    assert events(core, "alert") == []


def test_only_the_device_over_the_limit_is_collapsed_and_marked(tmp_path, clock):
    core = routing_core(tmp_path, clock, per_host_flow_limit=10)
    B = "02:00:00:00:00:0b"
    join(core, A, 1)
    join(core, B, 2)
    core.commands.call("permit", mac=A)
    core.commands.call("permit", mac=B)
    ip_a = core.commands.call("status", mac=A)["lease"]["ip"]
    ip_b = core.commands.call("status", mac=B)["lease"]["ip"]
    for port in range(8):          # 8 for B, 11 for A: 19 in all, over the limit of 10
        core.switch.outputs(ip_pkt(2, B, ip_b, WEB, sport=20000 + port))
    for port in range(11):
        core.switch.outputs(ip_pkt(1, A, ip_a, WEB, sport=20000 + port))
    assert core.commands.call("status", mac=A)["flow_limited"] is False
    routing = core.ctx.component("routing")
    count_flows(core)
    assert [a["mac"] for a in events(core, "alert")] == [A]
    assert core.commands.call("status", mac=A)["flow_limited"] is True
    assert core.commands.call("status", mac=B)["flow_limited"] is False
    assert {d["mac"]: d["flow_limited"] for d in core.commands.call("devices")} == {A: True, B: False}
    # A is still counted, per host: its bytes keep coming as bandwidth
    routing.poll_flow_stats()
    account = [f for f in core.switch.flows if L.kind_of(f.cookie) == L.KIND_ACCOUNT
               and L.device_of(f.cookie) == routing.installed[A][0].index]
    core.flow_stats(stats_for(account, 5, 5_000))
    routing.poll_flow_stats()
    core.flow_stats(stats_for(account, 10, 10_000))      # each per-host entry 5,000 bytes more
    routing.poll_flow_stats()
    assert [e["bytes"] for e in events(core, "bandwidth") if e["mac"] == A][-1] == 2 * 5_000
    # re-permitting (a new decision) gives per-flow accounting back, and the mark goes
    core.commands.call("deny", mac=A)
    core.commands.call("permit", mac=A)
    assert core.commands.call("status", mac=A)["flow_limited"] is False
