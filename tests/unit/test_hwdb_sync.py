"""The bus -> hwdb sink: rows in the schema's column order, batching, and a controller that
never notices when hwdbd is down."""
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

import hwdb_client
from homework.components.hwdb_sync.sink import QUEUE_LIMIT, Sink
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
    sink.on_event("flow", dict(mac="02:00:00:00:00:0a", proto=6, saddr="10.2.0.2", sport=40000,
                               daddr="203.0.113.10", dport=80, npkts=12, nbytes=9000))
    sink.on_event("lease", dict(action="granted", mac="02:00:00:00:00:0a", ip="10.2.0.2", router="10.2.0.1",
                                port=1, lease_time=30, expires=1.0, hostname="it's mine", state="pending"))
    sink.on_event("lease", dict(action="expired", mac="02:00:00:00:00:0a", ip="10.2.0.2", hostname=""))
    sink.on_event("device", dict(mac="02:00:00:00:00:0a", state="permitted", old_state="pending",
                                 reason="decision", device={"hostname": "laptop", "name": "Tom's laptop"}))
    sink.on_event("bandwidth", dict(mac="02:00:00:00:00:0a", ip="10.2.0.2", bytes=123))
    sink.on_event("alert", dict(mac="02:00:00:00:00:0a", kind="flow-limit", detail="too many"))
    sink.on_event("dns_query", dict(mac="02:00:00:00:00:0a", name="example.com", qtype="A",
                                    verdict="allowed", latency_us=250))
    sink.on_event("link", dict(mac="02:00:00:00:00:0a", rssi=-41.5, retries=2, packets=10, bytes=1200))
    sink.on_event("something_else", dict(x=1))
    assert sink.flush() == 9
    assert log == [
        "insert into Flows values (6, '10.2.0.2', 40000, '203.0.113.10', 80, 12, 9000)",
        "insert into Leases values ('02:00:00:00:00:0a', '10.2.0.2', 'it''s mine', 'add') on duplicate key update",
        "insert into Leases values ('02:00:00:00:00:0a', '10.2.0.2', '', 'del') on duplicate key update",
        "insert into Devices values ('02:00:00:00:00:0a', 'permitted', 'decision', 'laptop') on duplicate key update",
        "insert into DeviceNames values ('02:00:00:00:00:0a', 'Tom''s laptop') on duplicate key update",
        "insert into BWStats values ('02:00:00:00:00:0a', '10.2.0.2', 123)",
        "insert into Alerts values ('02:00:00:00:00:0a', 'flow-limit', 'too many')",
        "insert into DnsQueries values ('02:00:00:00:00:0a', 'example.com', 'A', 'allowed', 250)",
        "insert into Links values ('02:00:00:00:00:0a', -41.5, 2, 10, 1200)",
    ]


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
        sink.on_event("alert", dict(mac="m", kind="k", detail=str(i)))
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
        sink.on_event("alert", dict(mac="m", kind="k", detail=detail))
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
    core.bus.publish("flow", mac="m", proto="not a number")
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


@pytest.mark.skipif(not HWDBD.exists(), reason="hwdbd not built (make -C hwdb)")
def test_rows_land_in_a_real_hwdbd(tmp_path):
    port = _free_udp_port()
    proc = subprocess.Popen([str(HWDBD), "--port", str(port), "--listen", "127.0.0.1", "--schema",
                             str(REPO / "hwdb" / "schema" / "router.hwdb"), "--state-dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        clock = Clock(time.time())
        sink = Sink(lambda: hwdb_client.Client("127.0.0.1", port, timeout=2.0), hwdb_client.insert_statement,
                    clock, lambda e: isinstance(e, hwdb_client.HwdbTimeout))
        for i in range(2500):           # more than one batch
            sink.on_event("flow", dict(mac="m", proto=6, saddr="10.2.0.2", sport=i, daddr="203.0.113.10",
                                       dport=80, npkts=1, nbytes=100))
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
