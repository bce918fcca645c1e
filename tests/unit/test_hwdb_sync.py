"""The bus -> hwdb sink: rows in the schema's column order, batching, and a controller that
never notices when hwdbd is down."""
import dataclasses
import socket
import subprocess
import time
from pathlib import Path

import pytest

import hwdb_client
from homework.components.hwdb_sync.dns_limiter import OTHER_NAMES, DnsLimiter
from homework.components.hwdb_sync.sink import QUEUE_LIMIT, Sink
from homework.events import FlowRecord, Flows
from homework.leases import Lease
from conftest import Clock, make_core

REPO = Path(__file__).resolve().parents[2]


class FakeClient:
    def __init__(self, log, fail=None):
        self.log, self.fail = log, fail or (lambda stmts: None)

    def bulk_insert(self, stmts):
        self.fail(stmts)
        self.log.extend(stmts)

    def query(self, stmt):
        self.fail([stmt])
        self.log.append(stmt)

    def close(self):
        pass


def sink_with(log, clock, fail=None, up=lambda: True):
    def connect():
        if not up():
            raise hwdb_client.HwdbTimeout("no answer")
        return FakeClient(log, fail)
    return Sink(connect, hwdb_client.insert_statement, clock, lambda e: isinstance(e, hwdb_client.HwdbTimeout))


def test_every_topic_becomes_a_row_in_schema_order(clock):
    log = []
    sink = sink_with(log, clock)
    sink.on_event("flows", dict(records=(
        FlowRecord("02:00:00:00:00:0a", 6, "10.2.0.2", 40000, "203.0.113.10", 80, 12, 9000),
        FlowRecord("02:00:00:00:00:0a", 6, "203.0.113.10", 80, "10.2.0.2", 40000, 10, 52000))))
    granted = Lease(mac="02:00:00:00:00:0a", index=0, network="10.2.0.0/30", router="10.2.0.1", ip="10.2.0.2",
                    broadcast="10.2.0.3", expires=1.0, port=1, hostname="it's mine", active=True)
    sink.on_event("lease", dict(action="granted", lease=granted, state="pending"))
    sink.on_event("lease", dict(action="expired", lease=dataclasses.replace(granted, hostname="", active=False),
                                state=None))
    sink.on_event("device", dict(mac="02:00:00:00:00:0a", state="permitted", old_state="pending",
                                 reason="decision", device={"hostname": "laptop", "name": "Tom's laptop"}))
    sink.on_event("bandwidth", dict(mac="02:00:00:00:00:0a", ip="10.2.0.2", bytes=123))
    sink.on_event("alert", dict(mac="02:00:00:00:00:0a", kind="flow-limit", detail="too many"))
    sink.on_event("dns_query", dict(mac="02:00:00:00:00:0a", name="example.com", qtype="A",
                                    verdict="allowed", latency_us=250))
    sink.on_event("link", dict(mac="02:00:00:00:00:0a", rssi=-41.5, retries=2, packets=10, bytes=1200))
    sink.on_event("something_else", dict(x=1))
    assert sink.flush() == 10
    assert log == [
        "insert into Flows values (6, '10.2.0.2', 40000, '203.0.113.10', 80, 12, 9000)",
        "insert into Flows values (6, '203.0.113.10', 80, '10.2.0.2', 40000, 10, 52000)",
        "insert into Leases values ('02:00:00:00:00:0a', '10.2.0.2', 'it''s mine', 'add') on duplicate key update",
        "insert into Leases values ('02:00:00:00:00:0a', '10.2.0.2', '', 'del') on duplicate key update",
        "insert into Devices values ('02:00:00:00:00:0a', 'permitted', 'decision', 'laptop') on duplicate key update",
        "insert into DeviceNames values ('02:00:00:00:00:0a', 'Tom''s laptop') on duplicate key update",
        "insert into BWStats values ('02:00:00:00:00:0a', '10.2.0.2', 123)",
        "insert into Alerts values ('02:00:00:00:00:0a', 'flow-limit', 'too many')",
        "insert into DnsQueries values ('02:00:00:00:00:0a', 'example.com', 'A', 'allowed', 250, 1)",
        "insert into Links values ('02:00:00:00:00:0a', -41.5, 2, 10, 1200)",
    ]


# -- DnsQueries: honest counts, and a flood aggregated per device --------------
def dns_sink(clock, **limits):
    """A sink whose 'statements' are (table, values) tuples, so tests read the values."""
    log = []
    sink = Sink(lambda: FakeClient(log), lambda table, values, upsert: (table, values), clock,
                lambda e: False, dns_limiter=DnsLimiter(clock, **limits) if limits else None)
    return sink, log


def query(sink, mac, name, count=1, latency=100, verdict="allowed"):
    sink.on_event("dns_query", dict(mac=mac, name=name, qtype=1, verdict=verdict, latency_us=latency, count=count))


def dns_rows(log, mac):
    return [v for t, v in log if t == "DnsQueries" and v[0] == mac]


def test_normal_dns_traffic_gets_a_row_per_query_with_dnsd_merge_counts(clock):
    sink, log = dns_sink(clock)
    for i in range(40):
        query(sink, "aa", f"site{i}.test")
    query(sink, "aa", "twice.test", count=3, latency=250)     # dnsd merged 3 identical queries
    sink.on_event("dns_query", dict(mac="aa", name="old.test", verdict="allowed"))  # no count: 1
    sink.flush()
    rows = dns_rows(log, "aa")
    assert len(rows) == 42
    assert rows[40] == ("aa", "twice.test", "1", "allowed", 250, 3)
    assert rows[41][-1] == 1
    clock.advance(5)
    sink.flush(final=True)
    assert len(dns_rows(log, "aa")) == 42, "nothing was held back for aggregation"
    assert sink.stats["dns_aggregated"] == 0


def test_a_flooding_device_is_aggregated_per_name_with_honest_counts(clock):
    sink, log = dns_sink(clock, interval=1.0, rows_per_device=50, names_per_device=100)
    for i in range(10_000):
        query(sink, "flood", f"name{i % 5}.test", latency=100 + i % 2 * 100)
        if i % 1000 == 0:
            query(sink, "quiet", "example.com")
    sink.flush()
    assert len(dns_rows(log, "flood")) == 50, "count rows wait for the end of the interval"
    assert len(dns_rows(log, "quiet")) == 10, "another device keeps a row per query"
    clock.advance(1.0)
    sink.flush()
    rows = dns_rows(log, "flood")
    counted = rows[50:]
    assert sorted(r[1] for r in counted) == [f"name{k}.test" for k in range(5)]
    assert sum(r[-1] for r in rows) == 10_000
    assert all(r[4] == 150 for r in counted), "latency_us is the mean of the merged queries"
    assert sink.stats["dns_aggregated"] == 10_000 - 50
    # a new interval: the budget starts again
    query(sink, "flood", "fresh.test")
    sink.flush()
    assert dns_rows(log, "flood")[-1] == ("flood", "fresh.test", "1", "allowed", 100, 1)


def test_a_flood_of_distinct_names_is_bounded_and_still_counts_every_query(clock):
    sink, log = dns_sink(clock, interval=1.0, rows_per_device=20, names_per_device=30)
    for i in range(5_000):
        query(sink, "flood", f"random-{i}.test", count=2, verdict="allowed" if i % 2 else "captive")
    clock.advance(1.5)
    sink.flush()
    rows = dns_rows(log, "flood")
    other = [r for r in rows if r[1] == OTHER_NAMES]
    assert len(rows) == 20 + 30 + 2 and len(other) == 2, "one catch-all row per verdict"
    assert {r[3] for r in other} == {"allowed", "captive"} and all(r[2] == "*" for r in other)
    assert sum(r[-1] for r in rows) == 10_000


def test_pending_count_rows_are_written_at_stop(clock):
    sink, log = dns_sink(clock, interval=60.0, rows_per_device=1, names_per_device=10)
    for _ in range(5):
        query(sink, "m", "a.test")
    sink.flush()
    assert [r[-1] for r in dns_rows(log, "m")] == [1]
    sink.flush(final=True)
    assert [r[-1] for r in dns_rows(log, "m")] == [1, 4]


def test_bad_dns_counts_are_rejected_not_written(tmp_path):
    core = make_core(tmp_path, components=("dhcp", "hwdb_sync"), hwdb_enabled=True, hwdb_port=_free_udp_port())
    for count in (0, -3, "many"):
        core.bus.publish("dns_query", mac="m", name="a.test", qtype=1, verdict="allowed", latency_us=1, count=count)
    status = core.commands.call("hwdb-sync-status")
    assert status["rejected"] == 3 and status["waiting"] == 0


def test_limiter_refuses_nonsense_settings(clock):
    for bad in (dict(interval=0), dict(rows_per_device=-1), dict(names_per_device=-1)):
        with pytest.raises(ValueError):
            DnsLimiter(clock, **bad)


def test_rows_wait_while_hwdb_is_down_then_arrive_in_order(clock):
    log, up = [], [False]
    sink = sink_with(log, clock, up=lambda: up[0])
    for i in range(5):
        sink.on_event("bandwidth", dict(mac="m", ip="10.2.0.2", bytes=i))
    assert sink.flush() == 0 and len(sink.queue) == 5
    up[0] = True
    assert sink.flush() == 0            # still backing off
    clock.advance(1)
    assert sink.flush() == 5
    assert [s.rsplit(", ", 1)[1] for s in log] == ["0)", "1)", "2)", "3)", "4)"]
    assert sink.stats["failures"] == 1 and sink.stats["connects"] == 1


def test_timeout_mid_batch_keeps_rows_for_the_retry(clock):
    log, calls = [], [0]

    def fail(stmts):
        calls[0] += 1
        if calls[0] == 1:
            raise hwdb_client.HwdbTimeout("lost")
    sink = sink_with(log, clock, fail=fail)
    for i in range(3):
        sink.on_event("alert", dict(mac="m", kind="flow-limit", detail=str(i)))
    assert sink.flush() == 0 and len(sink.queue) == 3 and sink.client is None
    clock.advance(1)
    assert sink.flush() == 3 and len(log) == 3


def test_a_refused_row_does_not_take_the_batch_with_it(clock):
    log = []

    def fail(stmts):
        if len(stmts) > 1 or "bad" in stmts[0]:
            raise hwdb_client.HwdbError("syntax error at 12")
    sink = sink_with(log, clock, fail=fail)
    for detail in ("a", "bad", "c"):
        sink.on_event("alert", dict(mac="m", kind="flow-limit", detail=detail))
    assert sink.flush() == 2
    assert sink.stats["rejected"] == 1 and len(log) == 2


def test_queue_is_bounded(clock):
    sink = sink_with([], clock, up=lambda: False)
    for i in range(QUEUE_LIMIT + 5):
        sink.on_event("bandwidth", dict(mac="m", ip="i", bytes=i))
    assert len(sink.queue) == QUEUE_LIMIT and sink.stats["dropped_overflow"] == 5


def test_component_survives_bad_payloads_and_a_dead_daemon(tmp_path):
    port = _free_udp_port()          # nothing listens there
    core = make_core(tmp_path, components=("dhcp", "routing", "hwdb_sync"), hwdb_enabled=True,
                     hwdb_port=port)
    sync = core.ctx.component("hwdb_sync")
    core.bus.publish(Flows(records=(FlowRecord("m", "not a number", "", 0, "", 0, 0, 0),)))
    core.bus.publish("alert", mac="m", kind="flow-limit", detail="x")
    status = core.commands.call("hwdb-sync-status")
    assert status["rejected"] == 1 and status["waiting"] == 1
    sync.sink._connect = lambda: (_ for _ in ()).throw(hwdb_client.HwdbTimeout("down"))
    sync.sink.flush()
    assert core.commands.call("hwdb-sync-status")["connected"] is False


def test_disabled_without_hwdb_enabled(tmp_path):
    core = make_core(tmp_path, components=("dhcp", "hwdb_sync"))
    assert core.commands.call("hwdb-sync-status") == {"enabled": False}


def _free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


HWDBD = REPO / "hwdb" / "target" / "release" / "hwdbd"


def test_rows_land_in_a_real_hwdbd(tmp_path):
    assert HWDBD.exists(), "hwdbd is not built (make deps builds it)"
    port = _free_udp_port()
    proc = subprocess.Popen([str(HWDBD), "--port", str(port), "--listen", "127.0.0.1", "--schema",
                             str(REPO / "hwdb" / "schema" / "router.hwdb"), "--state-dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        clock = Clock(time.time())
        sink = Sink(lambda: hwdb_client.Client("127.0.0.1", port, timeout=2.0), hwdb_client.insert_statement,
                    clock, lambda e: isinstance(e, hwdb_client.HwdbTimeout))
        # more than one batch
        sink.on_event("flows", Flows(records=tuple(FlowRecord("m", 6, "10.2.0.2", i, "203.0.113.10", 80, 1, 100)
                                                   for i in range(2500))))
        deadline = time.monotonic() + 10
        while sink.queue and time.monotonic() < deadline:
            sink.flush()
            clock.advance(1)
            time.sleep(0.05)
        rows = hwdb_client.Client("127.0.0.1", port).query("select count(*) from Flows")
        assert list(rows[0].values())[-1] == 2500
    finally:
        proc.terminate()
        proc.wait(5)
