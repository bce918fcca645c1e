"""The Python client end to end against the real daemon."""

import threading
import time

import hwdb_client
import pytest
from hwdb_client import HwdbError, HwdbTimeout


def test_typed_rows(client):
    client.insert("Links", ("aa:bb:cc:dd:ee:01", -41.5, 3, 120, 98000))
    client.query("create table Kinds (b boolean, t tinyint, s smallint, c character, ts tstamp)")
    client.insert("Kinds", (True, -5, 300, "x", "@00000000000000ff@"))
    (row,) = client.query("select * from Links").rows
    assert row["mac"] == "aa:bb:cc:dd:ee:01"
    assert row["rssi"] == -41.5 and isinstance(row["rssi"], float)
    assert row["retries"] == 3 and isinstance(row["retries"], int)
    assert isinstance(row["timestamp"], int) and row["timestamp"] > 1_600_000_000 * 10**9
    (k,) = client.query("select * from Kinds").rows
    assert (k["b"], k["t"], k["s"], k["c"], k["ts"]) == (True, -5, 300, "x", 255)
    r = client.query("select mac, count(*), avg(rssi) from Links group by mac")
    assert r.columns == ["mac", "count(*)", "avg(rssi)"]
    assert r.types == ["varchar", "integer", "real"]
    assert r.rows == [{"mac": "aa:bb:cc:dd:ee:01", "count(*)": 1, "avg(rssi)": -41.5}]


def test_errors_carry_the_daemons_message(client):
    with pytest.raises(HwdbError, match=r"^syntax error at 33: expected '\)'"):
        client.query("select * from Links where (a = 1")
    with pytest.raises(HwdbError, match="no such table: Nope"):
        client.query("select * from Nope")
    with pytest.raises(HwdbError, match="5 columns but 2 values"):
        client.insert("Links", ("a", 1))


def test_quoting_survives_awkward_strings(client):
    nasty = ["it's", 'say "hi"', "back\\slash", "two\nlines", "pipe<|>sep", "é ünïcode", "", "|"]
    for i, s in enumerate(nasty):
        client.insert("Alerts", (f"m{i}", "test", s))
    rows = client.query("select detail from Alerts").rows
    assert [r["detail"] for r in rows] == nasty
    client.bulk_insert([hwdb_client.insert_statement("Alerts", ("bulk", "k", s)) for s in nasty])
    rows = client.query("select detail from Alerts where mac = 'bulk'").rows
    assert [r["detail"] for r in rows] == nasty


def test_bulk_insert_and_fragmented_results(client):
    stmts = [hwdb_client.insert_statement("Flows", (6, f"192.168.1.{i % 250}", 1000 + i, "10.0.0.1", 443, 1, i))
             for i in range(20000)]
    r = client.bulk_insert(stmts)
    assert r.message == "Success: 20000 rows"
    rows = client.query("select * from Flows").rows  # ~1.5 MB response, >1400 fragments
    assert len(rows) == 20000 and rows[-1]["nbytes"] == 19999
    assert client.query("select count(*) from Flows [rows 10]").rows[0]["count(*)"] == 10
    with pytest.raises(HwdbError, match="line 2"):
        client.bulk_insert(["insert into Flows values (1, 'a', 1, 'b', 1, 1, 1)", "insert into Flows values (oops)"])
    assert client.query("select count(*) from Flows").rows[0]["count(*)"] == 20000


def test_persistent_tables_survive_a_restart(start_daemon, tmp_path):
    state = tmp_path / "persist"
    d = start_daemon(state)
    c = hwdb_client.Client(port=d.port, timeout=5)
    c.insert("Leases", ("aa:bb:cc:dd:ee:01", "192.168.1.10", "laptop", "add"), upsert=True)
    c.insert("Leases", ("aa:bb:cc:dd:ee:01", "192.168.1.11", "laptop", "add"), upsert=True)
    c.insert("Devices", ("aa:bb:cc:dd:ee:01", "permit", "dhcp", "laptop"))
    c.query("update Devices set state = 'deny' where mac = 'aa:bb:cc:dd:ee:01'")
    c.query("save (select * from Leases [since @0@]) as AllLeases")
    c.insert("Links", ("x", -1.0, 0, 0, 0))
    c.close()
    d.stop()
    d2 = start_daemon(state)  # same state dir, schema loaded again
    with hwdb_client.Client(port=d2.port, timeout=5) as c2:
        assert c2.query("select ipaddr from Leases").rows == [{"ipaddr": "192.168.1.11"}]
        assert c2.query("select state from Devices").rows == [{"state": "deny"}]
        assert len(c2.query("exec AllLeases")) == 1
        assert len(c2.query("select * from Links")) == 0  # stream tables are ephemeral


def test_subscription_callbacks(client):
    client.query("save (select mac, rssi from Links [last]) as NewestLink")
    got = []
    arrived = threading.Event()

    def on_result(result):
        got.append(result.rows)
        if len(got) >= 3:
            arrived.set()

    sub = client.subscribe("NewestLink", on_result)
    for i in range(3):
        client.insert("Links", (f"m{i}", -40.0 - i, 0, 0, 0))
    assert arrived.wait(5), got
    assert got[-1] == [{"mac": "m2", "rssi": -42.0}]
    assert [g[0]["mac"] for g in got] == ["m0", "m1", "m2"]
    assert len(client.query("show subscriptions")) == 1
    sub.close()
    assert len(client.query("show subscriptions")) == 0
    client.insert("Links", ("m9", -1.0, 0, 0, 0))
    time.sleep(0.3)
    assert len(got) == 3 and not sub.errors


def test_large_notification_is_fragmented(client):
    client.query("save (select * from Alerts) as AllAlerts")
    got = []
    done = threading.Event()
    sub = client.subscribe("AllAlerts", lambda r: (got.append(len(r)), done.set() if len(r) == 2001 else None))
    client.bulk_insert([hwdb_client.insert_statement("Alerts", ("m", "k", "x" * 100)) for _ in range(2000)])
    client.insert("Alerts", ("m", "k", "last"))
    assert done.wait(10), got
    sub.close()


def test_dead_subscriber_does_not_block_inserts(start_daemon):
    d = start_daemon(extra=["--callback-timeout", "1"])
    c = hwdb_client.Client(port=d.port, timeout=5)
    c.query("save (select count(*) from Links) as LinkCount")
    sub = c.subscribe("LinkCount", lambda r: None)
    # Kill the listener without unsubscribing: the daemon's callbacks now go nowhere.
    sub._shutdown()
    t = time.monotonic()
    for i in range(50):
        c.insert("Links", (f"m{i}", -1.0, 0, 0, 0))
    # Waiting for the dead subscriber would cost the callback timeout (1 s) per insert,
    # 50 s for these 50; half of that is a bound only a blocked daemon misses, however
    # loaded the machine.
    assert time.monotonic() - t < 25, "inserts must not wait for the dead subscriber"
    deadline = time.monotonic() + 30
    while c.query("show subscriptions").rows and time.monotonic() < deadline:
        time.sleep(0.2)
    assert c.query("show subscriptions").rows == []
    # The daemon drops the subscription before its log line reaches our pipe reader.
    while not any("dropping it" in line for line in d.log) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any("dropping it" in line for line in d.log)
    c.close()


def test_slow_callback_is_not_dropped(start_daemon):
    d = start_daemon(extra=["--callback-timeout", "1"])
    with hwdb_client.Client(port=d.port, timeout=5) as c:
        c.query("save (select count(*) from Links) as LinkCount")
        got = []
        sub = c.subscribe("LinkCount", lambda r: (time.sleep(1.5), got.append(r.rows[0]["count(*)"])))
        c.insert("Links", ("a", -1.0, 0, 0, 0))
        c.insert("Links", ("b", -1.0, 0, 0, 0))
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert got == [1, 2], "callbacks run in order even when slower than the daemon's timeout"
        assert len(c.query("show subscriptions")) == 1
        sub.close()


def test_many_threads_share_one_client(client):
    errors = []

    def worker(k):
        try:
            for n in range(25):
                client.insert("BWStats", (f"t{k}", "10.0.0.1", n))
                client.query("select count(*) from BWStats")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert client.query("select count(*) from BWStats").rows[0]["count(*)"] == 200


def test_many_clients_at_once(daemon):
    errors = []

    def worker(k):
        try:
            with hwdb_client.Client(port=daemon.port, timeout=10) as c:
                for n in range(10):
                    c.insert("DnsQueries", (f"c{k}", "example.com", "A", "allow", n, 1))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with hwdb_client.Client(port=daemon.port) as c:
        assert c.query("select count(*) from DnsQueries").rows[0]["count(*)"] == 300


def test_timeouts_raise_instead_of_hanging(start_daemon):
    d = start_daemon()
    c = hwdb_client.Client(port=d.port, timeout=1)
    c.query("show tables")
    d.stop()
    t = time.monotonic()
    with pytest.raises(HwdbTimeout):
        c.query("show tables")
    assert time.monotonic() - t < 10          # the 1 s timeout and its retries, not forever
    with pytest.raises(HwdbTimeout):
        hwdb_client.Client(port=d.port, timeout=0.5)


def test_daemon_restart_is_transparent_to_a_client(start_daemon, tmp_path):
    d = start_daemon(tmp_path / "s1")
    c = hwdb_client.Client(port=d.port, timeout=5)
    c.query("show tables")
    port = d.port
    d.stop()
    # A new daemon on the same port does not know the old connection: the client reconnects.
    d2 = start_daemon(tmp_path / "s2", extra=["--port", str(port)])
    assert d2.port == port
    assert len(c.query("show tables")) > 0
    c.close()
