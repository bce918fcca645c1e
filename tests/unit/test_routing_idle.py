"""What accounting costs follows the traffic, not the number of devices: flows within the
household are learned per pair (a new connection between two devices that talked before
changes no table), an idle household's poll reads a fixed number of devices and
publishes nothing, and a device that moves bytes is read until it stops."""
import dataclasses

from homework import pipeline as L
from homework.components.routing.component import SWEEP_PER_POLL
from homework.components.routing.conntrack import CtEntry
from homework.flows import LOCAL, FlowStats, FlowStatsRequest
from fakehost import FakeHost
from routingkit import FakeConntrack, ip_pkt, join, routing_core

WEB = "203.0.113.10"


def home(tmp_path, clock, devices, **config):
    host = FakeHost()
    host.fake_conntrack = FakeConntrack()
    core = routing_core(tmp_path, clock, host=host, **config)
    macs = [f"02:00:00:00:01:{i:02x}" for i in range(devices)]
    for i, mac in enumerate(macs):
        join(core, mac, 1 + i % 3)
        core.commands.call("permit", mac=mac)
    core.conntrack = host.fake_conntrack
    return core, macs


def poll(core):
    """One accounting interval; the switch's requests it made."""
    core.switch.stats_requests.clear()
    core.ctx.component("routing").poll_flow_stats()
    return [r for r in core.switch.stats_requests if isinstance(r, FlowStatsRequest)]


def answer(core, requests, counts):
    """The switch answers the requests: `counts(flow)` -> (packets, bytes) of each entry."""
    for req in requests:
        matching = [f for f in core.switch.flows if f.table_id == req.table_id
                    and f.cookie & req.cookie_mask == req.cookie & req.cookie_mask]
        core.flow_stats([FlowStats(match=f.match, cookie=f.cookie, priority=f.priority, duration_sec=1,
                                   packet_count=counts(f)[0], byte_count=counts(f)[1], table_id=f.table_id)
                         for f in matching])


def bandwidth(core):
    return [p for t, p in core.events if t == "bandwidth"]


def test_device_to_device_connections_share_one_learned_entry_per_pair_and_direction(tmp_path, clock):
    core, (a, b) = home(tmp_path, clock, 2)
    ip_a, ip_b = core.ctx.leases.get(a).ip, core.ctx.leases.get(b).ip
    port_a, port_b = core.ctx.leases.get(a).port, core.ctx.leases.get(b).port
    sw = core.switch
    for sport in (40000, 40001, 40002):          # three connections, a to b, and b's answers
        assert sw.outputs(ip_pkt(port_a, a, ip_a, ip_b, sport=sport, dport=22)) == [port_b]
        assert sw.outputs(ip_pkt(port_b, b, ip_b, ip_a, sport=22, dport=sport)) == [port_a]
    learned = [f for f in sw.flows if L.kind_of(f.cookie) == L.KIND_LEARNED]
    assert sorted((f.match["ipv4_src"], f.match["ipv4_dst"]) for f in learned) == sorted([(ip_a, ip_b), (ip_b, ip_a)])
    assert all(f.match["ip_proto"] == 6 and "tcp_src" not in f.match and "tcp_dst" not in f.match for f in learned)
    assert all(f.idle_timeout == 30 and f.send_flow_removed for f in learned)
    # the internet's connections learn nothing: conntrack records them
    assert sw.outputs(ip_pkt(port_a, a, ip_a, WEB, sport=41000)) == [LOCAL]
    assert len([f for f in sw.flows if L.kind_of(f.cookie) == L.KIND_LEARNED]) == 2


def test_an_idle_household_is_read_a_few_devices_a_poll_and_publishes_nothing(tmp_path, clock):
    core, macs = home(tmp_path, clock, 40)
    poll(core)                                   # the priming interval after datapath_up ends
    core.events.clear()
    read: set[int] = set()
    for _ in range(6):
        clock.advance(10)
        requests = poll(core)
        per_device = [r for r in requests if L.kind_of(r.cookie) == L.KIND_ACCOUNT]
        assert len(per_device) <= SWEEP_PER_POLL
        assert all(r.cookie_mask == L.COOKIE_MASK_ALL for r in per_device)
        assert len(requests) == len(per_device) + 1      # and one for every learned entry
        read |= {L.device_of(r.cookie) for r in per_device}
        answer(core, requests, lambda f: (0, 0))
    assert bandwidth(core) == []
    assert len(read) == 40                       # in turn, every device was looked at


def test_a_device_moving_bytes_is_read_until_it_stops_then_told_once_as_zero(tmp_path, clock):
    core, macs = home(tmp_path, clock, 40)
    lease = core.ctx.leases.get(macs[7])
    poll(core)
    core.events.clear()
    conntrack = core.conntrack
    conntrack.entries = [CtEntry(id=1, proto=6, src=lease.ip, dst=WEB, sport=40000, dport=443, packets=1,
                                 bytes=60, reply_packets=0, reply_bytes=0)]
    counted = {"bytes": 0}

    def counts(f):
        mine = (L.device_of(f.cookie) == lease.index and f.priority == L.PRIO_ACCOUNT_HOST
                and f.match["in_port"] != LOCAL)
        return (1, counted["bytes"]) if mine else (0, 0)
    for step, nbytes in enumerate((1000, 5000, 5000, 5000)):
        clock.advance(10)
        counted["bytes"] = nbytes
        conntrack.entries = [CtEntry(id=1, proto=6, src=lease.ip, dst=WEB, sport=40000, dport=443, packets=step + 2,
                                     bytes=nbytes, reply_packets=0, reply_bytes=0)] if step < 2 else []
        requests = poll(core)
        answer(core, requests, counts)
        if step == 0:
            assert L.routing_cookie(L.KIND_ACCOUNT, lease.index) in {r.cookie for r in requests}
    clock.advance(10)
    poll(core)
    mine = [e for e in bandwidth(core) if e["mac"] == macs[7]]
    assert [e["bytes"] for e in mine] == [1000, 4000, 0]
    assert all(e["seconds"] == 10 for e in mine) and mine[0]["up"] == 1000
    assert {e["mac"] for e in bandwidth(core)} == {macs[7]}


def test_a_device_with_more_nated_connections_than_the_limit_is_counted_per_host(tmp_path, clock):
    core, (a, b) = home(tmp_path, clock, 2, per_host_flow_limit=10)
    ip_a, ip_b = core.ctx.leases.get(a).ip, core.ctx.leases.get(b).ip

    def conns(ip, n, first=1):
        return [CtEntry(id=first + i, proto=17, src=ip, dst=WEB, sport=5000, dport=10000 + i, packets=1,
                        bytes=40, reply_packets=0, reply_bytes=0) for i in range(n)]
    core.conntrack.entries = conns(ip_a, 10) + conns(ip_b, 9, first=100)     # 19 in all; each at most 10
    poll(core)
    assert [p for t, p in core.events if t == "alert"] == []
    core.conntrack.entries = conns(ip_a, 11) + conns(ip_b, 9, first=100)
    poll(core)
    [alert] = [p for t, p in core.events if t == "alert"]
    assert alert["mac"] == a and alert["kind"] == "flow-limit"
    assert core.commands.call("status", mac=a)["flow_limited"] is True
    assert core.commands.call("status", mac=b)["flow_limited"] is False


def test_connections_made_after_a_start_are_recorded_from_the_first_poll(tmp_path, clock):
    host = FakeHost()
    host.fake_conntrack = FakeConntrack()
    old = CtEntry(id=1, proto=6, src="10.2.0.2", dst=WEB, sport=40000, dport=443, packets=5, bytes=500,
                  reply_packets=5, reply_bytes=900)
    host.fake_conntrack.entries = [old]            # an earlier run's: it reported these bytes
    core = routing_core(tmp_path, clock, host=host)
    join(core, "02:00:00:00:01:01", 1)
    ip = core.ctx.leases.get("02:00:00:00:01:01").ip
    new = CtEntry(id=2, proto=6, src=ip, dst=WEB, sport=40001, dport=443, packets=3, bytes=300,
                  reply_packets=2, reply_bytes=700)
    host.fake_conntrack.entries = [old, new]
    poll(core)                                     # the first poll after the start
    flows = [r._asdict() for t, p in core.events if t == "flows" for r in p.records]
    assert [(f["sport"], f["nbytes"]) for f in flows] == [(40001, 300), (443, 700)]


def test_the_broadcast_fan_out_is_sent_only_when_the_ports_with_permitted_devices_change(tmp_path, clock):
    from homework import pipeline as P
    core = routing_core(tmp_path, clock)
    sent = []
    send = core.switch.apply

    def counting(decisions):
        decisions = list(decisions)
        sent.extend(d for d in decisions if getattr(d, "priority", None) == P.PRIO_BROADCAST)
        return send(decisions)
    core._send = counting
    for i, port in enumerate((1, 1, 1, 2)):          # three behind one access point, then another port
        mac = f"02:00:00:00:03:{i:02x}"
        join(core, mac, port)
        core.commands.call("permit", mac=mac)
    assert [tuple(a.port for a in f.actions) for f in sent] == [(1,), (1, 2)]
    flow = [f for f in core.switch.flows if f.priority == P.PRIO_BROADCAST and f.table_id == P.TABLE_FORWARD]
    assert [tuple(a.port for a in f.actions) for f in flow] == [(1, 2)]


def test_a_polls_records_and_a_seconds_endings_are_published_together(tmp_path, clock):
    from homework.components.routing.component import ENDINGS_SECONDS
    core, (a, b) = home(tmp_path, clock, 2)
    ips = [core.ctx.leases.get(mac).ip for mac in (a, b)]
    poll(core)
    core.events.clear()
    conns = [CtEntry(id=i, proto=6, src=ips[i % 2], dst=WEB, sport=40000 + i, dport=443, packets=3, bytes=300,
                     reply_packets=2, reply_bytes=700) for i in range(10)]
    core.conntrack.entries = conns
    clock.advance(10)
    poll(core)
    [batch] = [p for t, p in core.events if t == "flows"]
    assert len(batch.records) == 20
    assert {r.mac for r in batch.records} == {a, b}
    assert core.ctx.counters.get("routing.flows_reported") == 20
    # endings come one at a time; they are published together by a timer
    core.events.clear()
    for e in conns[:4]:
        core.conntrack.on_end(dataclasses.replace(e, packets=4, bytes=352))
    assert [t for t, _ in core.events if t == "flows"] == []
    [publish] = [fn for seconds, fn in core.periods if seconds == ENDINGS_SECONDS]
    publish()
    [batch] = [p for t, p in core.events if t == "flows"]
    assert [(r.sport, r.npkts, r.nbytes) for r in batch.records] == [(40000 + i, 1, 52) for i in range(4)]
    publish()
    assert len([t for t, _ in core.events if t == "flows"]) == 1       # nothing new: nothing published


def test_a_failed_dump_counts_nothing_twice(tmp_path, clock):
    core, (mac,) = home(tmp_path, clock, 1)
    ip = core.ctx.leases.get(mac).ip

    def conn(nbytes):
        return CtEntry(id=7, proto=6, src=ip, dst=WEB, sport=40000, dport=80, packets=1, bytes=100,
                       reply_packets=nbytes // 1000, reply_bytes=nbytes)
    poll(core)
    core.events.clear()
    core.conntrack.entries = [conn(10_000)]
    poll(core)
    core.conntrack.failing = True           # the tool failed: no dump, not an empty one
    core.conntrack.entries = [conn(30_000)]
    poll(core)
    core.conntrack.failing = False
    core.conntrack.entries = [conn(50_000)]
    poll(core)
    down = [r.nbytes for t, p in core.events if t == "flows" for r in p.records if r.sport == 80]
    assert down == [10_000, 40_000]
