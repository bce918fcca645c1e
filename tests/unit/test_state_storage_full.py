"""A full state filesystem: queued writes are kept, in order, and saved when space returns;
reads keep working; direct writes fail with a clear StorageError.

The disk is "full" through SQLite's own limit (PRAGMA max_page_count), which makes SQLite
answer SQLITE_FULL ("database or disk is full") exactly as a full filesystem does."""

import pytest

from homework.state import StateStore, StorageError
from conftest import on_disk, stored_lease




class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def fill(store: StateStore) -> None:
    """No page may be added from now on."""
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count={pages}")


def free(store: StateStore) -> None:
    store.db.execute("PRAGMA max_page_count=1073741823")


def lease(i: int):
    return stored_lease(f"02:00:00:00:{i // 256:02x}:{i % 256:02x}", i, 100.0 + i, 1, "h" * 200)


@pytest.fixture
def store(tmp_path):
    s = StateStore(tmp_path / "s.db")
    s.clock = Clock()
    s.watched = []
    s.watch_storage(s.watched.append)
    yield s
    free(s)
    s.close()


def test_failed_lease_writes_stay_queued_and_are_saved_when_space_returns(store, tmp_path):
    fill(store)
    for i in range(300):          # far more than fits in the current pages
        store.save_lease(lease(i))
    assert store.flush() is False
    health = store.storage()
    assert health["full"] and not health["writable"] and health["queued_writes"] == 300
    assert "full" in health["error"]
    store.clock.t += 5            # a retry that fails again keeps them all
    assert store.flush() is False and store.storage()["queued_writes"] == 300
    free(store)
    store.clock.t += 5
    assert store.flush() is True
    assert on_disk(tmp_path / "s.db", "SELECT count(*) FROM leases") == [(300,)]
    assert store.storage() == {"full": False, "writable": True, "error": "", "since": 0.0,
                               "queued_writes": 0, "dropped_writes": 0}


def test_retries_are_paced_not_made_on_every_flush(store):
    fill(store)
    for i in range(300):
        store.save_lease(lease(i))
    assert store.flush() is False
    free(store)
    assert store.flush() is False                  # too soon: not even tried
    store.clock.t += 1.5
    assert store.flush() is True


def test_order_is_kept_across_failed_attempts(store, tmp_path):
    fill(store)
    for i in range(300):
        store.save_lease(lease(i))
    store.flush()
    mac = lease(0).mac
    store.save_lease(stored_lease(mac, 0, 999.0, 7, ""))       # a later update of the first row
    store.clock.t += 5
    store.flush()
    free(store)
    store.clock.t += 5
    assert store.flush()
    assert on_disk(tmp_path / "s.db", f"SELECT expires, port FROM leases WHERE mac='{mac}'") == [(999.0, 7)]


def test_reads_work_while_full_and_a_direct_write_is_refused_clearly(store):
    store.save_lease(lease(1))
    store.flush()
    fill(store)
    for i in range(2, 300):
        store.save_lease(lease(i))
    assert [r["mac"] for r in store.leases()] == [lease(1).mac]          # what is on disk
    # (delete_lease is queued too now, so a decision stands for the direct writes)
    with pytest.raises(StorageError, match="storage is full.*298 earlier writes are kept"):
        store.set_device_state(lease(1).mac, "permitted")     # must not overtake the queued writes
    free(store)
    store.clock.t += 5
    store.set_device_state(lease(1).mac, "permitted")         # the queue is retried first, then this write
    assert len(store.leases()) == 299
    assert store.get_device(lease(1).mac).state == "permitted"


def test_a_failing_direct_write_sets_the_flag_until_a_write_succeeds(store, tmp_path):
    fill(store)
    big = "x" * 100_000
    with pytest.raises(StorageError):
        store.execute("INSERT INTO leases (mac, block, expires, hostname) VALUES ('a', 1, 1, ?)", (big,))
    assert store.storage()["full"]
    free(store)
    store.clock.t += 5
    assert store.flush() and store.storage()["writable"]


def test_a_transaction_that_cannot_commit_raises_storage_error_and_leaves_no_open_transaction(store):
    fill(store)
    with pytest.raises(StorageError):
        with store.transaction() as st:
            st.db.execute("INSERT INTO leases (mac, block, expires, hostname) VALUES ('a', 1, 1, ?)",
                          ("x" * 100_000,))
    assert not store.db.in_transaction
    free(store)
    store.clock.t += 5
    with store.transaction() as st:
        st.db.execute("INSERT INTO leases (mac, block, expires) VALUES ('a', 1, 1)")
    assert [r["mac"] for r in store.leases()] == ["a"]


def test_watchers_hear_once_per_episode(store):
    fill(store)
    for i in range(300):
        store.save_lease(lease(i))
    for _ in range(5):
        store.clock.t += 5
        store.flush()
    assert [w["full"] for w in store.watched] == [True]
    free(store)
    store.clock.t += 5
    store.flush()
    assert [w["writable"] for w in store.watched] == [False, True]


def test_constraint_errors_are_still_skipped_not_retried(store, tmp_path):
    store.save_lease(stored_lease("02:00:00:00:00:01", 7, 5.0, 1, ""))
    store.save_lease(stored_lease("02:00:00:00:00:02", 7, 5.0, 1, ""))   # block is UNIQUE
    assert store.flush() is True and store.storage()["writable"]
    assert on_disk(tmp_path / "s.db", "SELECT mac FROM leases") == [("02:00:00:00:00:01",)]


def test_the_queue_is_bounded_and_drops_are_counted(store, monkeypatch):
    import homework.state as state
    monkeypatch.setattr(state, "MAX_QUEUED", 10)
    fill(store)
    for i in range(15):
        store.save_lease(lease(i))
    assert store.storage()["queued_writes"] == 10 and store.storage()["dropped_writes"] == 5
