"""Hot-path state writes (lease rows, new devices) are queued and committed together."""

from homework.state import StateStore
from conftest import on_disk, stored_lease
from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip
from homework.components.dhcp import message as m
from homework.flows import Datapath, PacketIn




def test_lease_rows_reach_the_disk_on_flush_in_one_go(tmp_path):
    db = tmp_path / "s.db"
    store = StateStore(db)
    for i in range(50):
        store.save_lease(stored_lease(f"02:00:00:00:00:{i:02x}", i, 100.0 + i, 1, ""))
    assert on_disk(db, "SELECT count(*) FROM leases") == [(0,)]
    store.flush()
    assert on_disk(db, "SELECT count(*) FROM leases") == [(50,)]


def test_reads_and_other_writes_see_queued_writes_in_order(tmp_path):
    store = StateStore(tmp_path / "s.db")
    store.save_lease(stored_lease("02:00:00:00:00:01", 1, 5.0, 1, "a"))
    store.save_lease(stored_lease("02:00:00:00:00:01", 1, 9.0, 2, "a"))
    assert [(r["expires"], r["port"]) for r in store.leases()] == [(9.0, 2)]
    store.save_lease(stored_lease("02:00:00:00:00:02", 2, 5.0, 1, ""))
    store.delete_lease("02:00:00:00:00:02")          # after the queued insert, not before
    assert [r["mac"] for r in store.leases()] == ["02:00:00:00:00:01"]


def test_new_device_is_known_at_once_and_written_behind(tmp_path):
    db = tmp_path / "s.db"
    store = StateStore(db)
    device, created = store.touch_device("02:00:00:00:00:01", "laptop", now=10.0)
    assert created and device.state == "pending" and device.first_seen == 10.0
    assert store.get_device("02:00:00:00:00:01").hostname == "laptop"
    assert on_disk(db, "SELECT count(*) FROM devices") == [(0,)]
    # A decision right after (before any flush) lands on top of the queued insert.
    store.set_device_state("02:00:00:00:00:01", "permitted")
    assert on_disk(db, "SELECT state, hostname, first_seen FROM devices") == [("permitted", "laptop", 10.0)]


def test_close_flushes(tmp_path):
    db = tmp_path / "s.db"
    store = StateStore(db)
    store.save_lease(stored_lease("02:00:00:00:00:01", 1, 5.0, 1, ""))
    store.close()
    assert on_disk(db, "SELECT mac FROM leases") == [("02:00:00:00:00:01",)]


def test_a_failing_queued_write_is_skipped_and_the_rest_commit(tmp_path):
    db = tmp_path / "s.db"
    store = StateStore(db)
    store.save_lease(stored_lease("02:00:00:00:00:01", 7, 5.0, 1, ""))
    store.save_lease(stored_lease("02:00:00:00:00:02", 7, 5.0, 1, ""))   # block is UNIQUE
    store.save_lease(stored_lease("02:00:00:00:00:03", 8, 5.0, 1, ""))
    store.flush()
    assert on_disk(db, "SELECT mac FROM leases ORDER BY mac") == [("02:00:00:00:00:01",), ("02:00:00:00:00:03",)]


def test_core_flushes_on_its_timer_and_at_stop(tmp_path):
    core = make_core(tmp_path)
    core.datapath_up(Datapath(dpid=1, ports={}))
    mac = "02:00:00:00:00:09"
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(mac, m.DISCOVER)))
    block = core.ctx.component("dhcp").alloc.block_for(mac)
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(mac, m.REQUEST, options=[
        opt_ip(50, block.device), opt_ip(54, block.router)])))
    db = core.config.state_db
    assert on_disk(db, "SELECT count(*) FROM leases") == [(0,)]
    for timer in core.timers:       # run every registered timer once, as the hub would
        timer()
    assert on_disk(db, "SELECT mac FROM leases") == [(mac,)]
    assert on_disk(db, "SELECT mac FROM devices") == [(mac,)]
    core.packet_in(PacketIn(in_port=1, data=dhcp_frame(mac, m.RELEASE, src_ip=block.device, dst_ip=block.router)))
    core.stop()
    assert on_disk(db, "SELECT expires FROM leases") == [(0.0,)]


def test_a_pre_approved_device_is_first_seen_when_it_first_asks(tmp_path):
    db = tmp_path / "s.db"
    store = StateStore(db)
    store.set_device_state("02:00:00:00:00:09", "permitted", now=0)     # decided on before it came
    device, created = store.touch_device("02:00:00:00:00:09", "console", now=50.0)
    assert not created and device.state == "permitted"
    assert (device.first_seen, device.last_seen) == (50.0, 50.0)
    store.flush()
    assert on_disk(db, "SELECT first_seen FROM devices") == [(50.0,)]


def test_a_read_of_other_tables_leaves_the_queue_alone(tmp_path):
    """The event handlers' reads (settings, webhooks) do not commit a crowd's queued lease
    writes one device at a time; a read of a table with queued writes still sees them."""
    db = tmp_path / "s.db"
    store = StateStore(db)
    store.save_lease(stored_lease("02:00:00:00:00:01", 1, 5.0, 1, "a"))
    assert store.execute("SELECT key, value FROM settings WHERE key LIKE 'qos.%'") == []
    assert store.execute("SELECT id FROM webhooks WHERE id IN (SELECT id FROM webhooks)") == []
    assert on_disk(db, "SELECT count(*) FROM leases") == [(0,)]          # still queued
    # a join or a subquery naming the queued table waits for it
    assert store.execute("SELECT count(*) FROM webhooks JOIN leases ON 1=1")[0][0] == 0
    assert on_disk(db, "SELECT count(*) FROM leases") == [(1,)]
    store.save_lease(stored_lease("02:00:00:00:00:02", 2, 5.0, 1, "b"))
    assert store.execute("SELECT count(*) FROM settings WHERE key IN (SELECT mac FROM leases)")[0][0] == 0
    assert on_disk(db, "SELECT count(*) FROM leases") == [(2,)]
    # a read whose tables cannot be told (a PRAGMA) and any write wait for the queue
    store.save_lease(stored_lease("02:00:00:00:00:03", 3, 5.0, 1, "c"))
    store.execute("PRAGMA user_version")
    assert on_disk(db, "SELECT count(*) FROM leases") == [(3,)]
    store.save_lease(stored_lease("02:00:00:00:00:04", 4, 5.0, 1, "d"))
    store.execute("INSERT INTO settings (key, value) VALUES ('x', 'y')")
    assert on_disk(db, "SELECT count(*) FROM leases") == [(4,)]
