"""The controller's persistent state (SQLite): devices, leases and anything a component
registers. One source of truth per fact: decisions and leases live here; hwdb is only the log.

Every table, the components' too, is created and changed by the numbered steps in
migrations.py (PRAGMA user_version), so an upgraded router reads the state.db an older
release wrote, and an older release refuses a newer one.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from collections.abc import Callable

from . import migrations

if TYPE_CHECKING:
    from .leases import Lease

log = logging.getLogger(__name__)

DEVICE_STATES = ("pending", "permitted", "denied", "blacklisted")
# Hot-path writes (a lease row per ACK, a new device per first DISCOVER) are queued and
# written in one transaction at most this long after (the core's timer calls flush()).
# A burst of 1,000 leases is then one commit, not 2,000. A crash may lose this much:
# the client keeps its /30 anyway when it re-requests the address it remembers.
WRITE_BEHIND_SECONDS = 0.25
# last_seen is written back at most this often per device: DHCP renewals and packets
# touch it constantly, and a minute's precision is all the board shows.
LAST_SEEN_WRITE_SECONDS = 60
# When writes fail for a reason that passes (disk full, I/O error, database locked), the
# queued writes are kept, in order, and tried again at most this often.
RETRY_SECONDS = 1.0
# The queue's bound while writes fail: ~200 bytes a statement, so ~20 MiB of memory.
# Past it new queued writes are dropped and counted (storage()["dropped_writes"]).
MAX_QUEUED = 100_000
# SQLite primary result codes after which a write may succeed later.
_RETRYABLE = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED,
              sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN}
# A write that needs a new page on disk: queued after a failed direct write so the retry
# loop learns when space is back even if nothing else is waiting to be written.
_PROBE = "INSERT INTO storage_probe (id, at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET at=excluded.at"



@dataclass
class Device:
    mac: str
    state: str
    hostname: str = ""
    name: str = ""
    owner: str = ""
    type: str = ""
    first_seen: float = 0.0
    last_seen: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class StorageError(sqlite3.OperationalError):
    """The state cannot be written now (disk full, I/O error): the write was not made.
    Queued writes are kept and retried; reads still work."""


def _retryable(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return "disk is full" in str(exc) or "disk I/O error" in str(exc)
    return code & 0xFF in _RETRYABLE


def _is_read(sql: str) -> bool:
    return sql.lstrip()[:6].upper() in ("SELECT", "PRAGMA")


_WRITTEN = re.compile(r"^\s*(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?"
                      r"|DELETE\s+FROM)\s+(\w+)", re.IGNORECASE)
_READ_FROM = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def _written_table(sql: str) -> str | None:
    """The table a queued write changes (None: not a statement of one table we can name)."""
    m = _WRITTEN.match(sql)
    return m.group(1).lower() if m else None


@functools.lru_cache(maxsize=1024)
def _read_tables(sql: str) -> frozenset[str] | None:
    """The tables a SELECT names (subqueries' too); None for anything else (a PRAGMA, a
    SELECT of no table): such a read waits for every queued write."""
    if sql.lstrip()[:6].upper() != "SELECT":
        return None
    names = frozenset(n.lower() for n in _READ_FROM.findall(sql))
    return names or None


def _schema_of(path: Path) -> int | None:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return db.execute("PRAGMA user_version").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return None


def restore_pre_update_copy(path: Path) -> bool:
    """state.db is newer than this release: the router went back to the old system slot
    after an update that migrated it. If the update's copy of state.db from before it
    (`state.db.pre-<version>`, homework/update/apply.py) has a schema this release reads,
    it becomes state.db again and the newer one is kept aside (`state.db.newer-<schema>`),
    for when the newer release runs again. What changed since the update is lost; what
    the household had before it is not. False if there is no such copy."""
    path = Path(path)
    copies = sorted(path.parent.glob(f"{path.name}.pre-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    usable = [c for c in copies if not c.name.endswith(".tmp")
              and (v := _schema_of(c)) is not None and v <= migrations.LATEST]
    if not usable:
        return False
    newer = _schema_of(path)
    aside = path.with_name(f"{path.name}.newer-{newer}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            os.replace(src, Path(str(aside) + suffix))
    tmp = path.with_name(path.name + ".restoring")
    with open(usable[0], "rb") as f, open(tmp, "wb") as out:
        out.write(f.read())
        out.flush()
        os.fsync(out.fileno())
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    log.warning("%s had schema %s, newer than this release reads (%s): the router is back on an older "
                "system slot. Restored %s (the state from before the update); the newer database is "
                "kept as %s", path, newer, migrations.LATEST, usable[0].name, aside.name)
    return True


class StateStore:
    """Thread-safe wrapper around one SQLite database in WAL mode."""

    def __init__(self, path: Path | str):
        path = Path(path)
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
            # Root only: besides leases it holds the admin password's hash, token hashes
            # and webhook secrets (which an HMAC needs in the clear). SQLite gives its -wal
            # and -shm files the database file's mode.
            path.touch(mode=0o600, exist_ok=True)
            os.chmod(path, 0o600)
        self._lock = threading.RLock()
        self.db = self._open(path)
        try:
            migrations.migrate(self.db, str(path))
        except migrations.StateVersionError:
            # A rollback to this release after an update migrated state.db: go back to the
            # copy the update made before it, or refuse as before.
            self.db.close()
            if not restore_pre_update_copy(path):
                raise
            self.db = self._open(path)
            migrations.migrate(self.db, str(path))
        # Devices are read on every DHCP message: keep them in memory, write through.
        self._devices = {row["mac"]: Device(**dict(row)) for row in self.db.execute("SELECT * FROM devices")}
        self._seen_written: dict[str, float] = {}
        self._deferred: list[tuple[str, tuple]] = []
        # Write health: "" while writes go through, else the error that stopped them.
        self.clock = time.monotonic          # for the retry pacing (tests replace it)
        self._failure = ""
        self._failure_full = False
        self._failing_since = 0.0
        self._retry_at = 0.0
        self._dropped = 0
        self._watchers: list[Callable[[dict], None]] = []

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL keeps committed data across a process crash; only power loss may lose
        # the last transactions, which a DHCP client recovers from by re-requesting.
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    # -- generic -------------------------------------------------------------------
    def execute(self, sql: str, args=()) -> list[sqlite3.Row]:
        """Run one statement after the queued writes. While writes fail, a read sees what
        is on disk (queued writes not yet), and a write raises StorageError rather than
        overtake the queue."""
        reading = _is_read(sql)
        with self._lock:
            # Retries stay paced (flush() without force): a busy writer must not re-run a
            # long failing queue on every call. A read of tables no queued write touches
            # does not wait for the queue: the event handlers' reads of settings and
            # webhooks committed a new device's lease and last-seen writes once per device.
            if reading and self._deferred and not self._waits_for_queue(sql):
                pass
            elif not self.flush() and not reading:
                raise StorageError(self._refusal())
            try:
                return self.db.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                if reading or not _retryable(exc):
                    raise
                self._rollback()
                if not self._deferred:
                    self._deferred.append((_PROBE, (time.time(),)))
                self._write_failed(exc)
                raise StorageError(self._refusal()) from exc

    def _waits_for_queue(self, sql: str) -> bool:
        """Does this read name a table a queued write changes (or one we cannot tell)?"""
        tables = _read_tables(sql)
        if tables is None:
            return True
        for queued, _args in self._deferred:
            written = _written_table(queued)
            if written is None or written in tables:
                return True
        return False

    def defer(self, sql: str, args=()) -> None:
        """Queue a write for the next flush (see WRITE_BEHIND_SECONDS)."""
        with self._lock:
            if len(self._deferred) >= MAX_QUEUED:
                self._dropped += 1
                if self._dropped == 1 or self._dropped % 1000 == 0:
                    log.error("state write queue full (%d, writes failing: %s): %d writes dropped",
                              MAX_QUEUED, self._failure, self._dropped)
                return
            self._deferred.append((sql, args))

    def flush(self, force: bool = False) -> bool:
        """Write the queued statements in one transaction; True when nothing is left queued.
        A statement that is wrong (a constraint, a bug) is logged and skipped; the others
        still commit. When the write fails for a reason that passes (disk full), the whole
        batch stays queued, in order, and is tried again at the next flush at least
        RETRY_SECONDS later (at once with force=True)."""
        with self._lock:
            if not self._deferred:
                return True
            if self._failure and not force and self.clock() < self._retry_at:
                return False
            pending, self._deferred = self._deferred, []
            try:
                self._write_batch(pending)
            except BaseException as exc:
                self._deferred[:0] = pending
                if not _retryable(exc):
                    raise
                self._write_failed(exc)
                return False
            self._write_succeeded()
            return True

    def _write_batch(self, pending: list[tuple[str, tuple]]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for sql, args in pending:
                try:
                    self.db.execute(sql, args)
                except sqlite3.Error as exc:
                    if _retryable(exc):
                        raise
                    log.error("state write skipped (%s): %s %r", exc, sql.split(" (")[0], args)
            self.db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        # After SQLITE_FULL SQLite may already have rolled back on its own.
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    # -- write health ------------------------------------------------------------------
    def storage(self) -> dict:
        """Whether state writes reach the disk: shown by the API (GET /ws.v1/session)."""
        with self._lock:
            return {"full": self._failure_full, "writable": not self._failure, "error": self._failure,
                    "since": self._failing_since, "queued_writes": len(self._deferred),
                    "dropped_writes": self._dropped}

    def watch_storage(self, callback: Callable[[dict], None]) -> None:
        """Call `callback(storage())` each time writes start failing or work again."""
        self._watchers.append(callback)

    def _refusal(self) -> str:
        what = ("the router's storage is full" if self._failure_full
                else f"the state database cannot be written ({self._failure})")
        return (f"{what}: this change was not saved; {len(self._deferred)} earlier writes are kept "
                f"and saved when it can be written again (reading still works)")

    def _write_failed(self, exc: BaseException) -> None:
        self._retry_at = self.clock() + RETRY_SECONDS
        first = not self._failure
        self._failure = str(exc) or type(exc).__name__
        self._failure_full = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_FULL \
            or "full" in self._failure
        if first:
            self._failing_since = time.time()
            log.error("state writes failing (%s): %d writes kept queued, retried every %.0f s",
                      self._failure, len(self._deferred), RETRY_SECONDS)
            self._notify()

    def _write_succeeded(self) -> None:
        if self._failure:
            log.warning("state writes work again after %.0f s; queued writes saved",
                        time.time() - self._failing_since)
            self._failure, self._failure_full, self._failing_since = "", False, 0.0
            self._notify()

    def _notify(self) -> None:
        status = self.storage()
        for callback in list(self._watchers):
            try:
                callback(status)
            except Exception:
                log.exception("storage watcher failed")

    def transaction(self):
        """Context manager: one atomic write of several statements."""
        return _Transaction(self)

    def close(self) -> None:
        with self._lock:
            if not self.flush(force=True):
                log.error("state closed with %d writes not saved (%s)", len(self._deferred), self._failure)
            self.db.close()

    # -- devices ---------------------------------------------------------------------
    def _reload_device(self, mac: str) -> Device | None:
        rows = self.db.execute("SELECT * FROM devices WHERE mac=?", (mac,)).fetchall()
        if rows:
            self._devices[mac] = Device(**dict(rows[0]))
        else:
            self._devices.pop(mac, None)
        return self._devices.get(mac)

    def reload_devices(self, macs: list[str]) -> None:
        """Read these devices' kept copies again from the database (after a rollback)."""
        with self._lock:
            for mac in macs:
                self._reload_device(mac)

    def get_device(self, mac: str) -> Device | None:
        with self._lock:
            device = self._devices.get(mac)
            return dataclasses.replace(device) if device else None

    def device_state(self, mac: str) -> str | None:
        """Just the state (no copy of the record): read for every DHCP message."""
        device = self._devices.get(mac)
        return device.state if device else None

    def devices(self) -> list[Device]:
        with self._lock:
            return sorted((dataclasses.replace(d) for d in self._devices.values()), key=lambda d: d.first_seen)

    def touch_device(self, mac: str, hostname: str = "", now: float | None = None) -> tuple[Device, bool]:
        """Record that a device was seen; returns (device, created)."""
        now = time.time() if now is None else now
        with self._lock:
            existing = self._devices.get(mac)
            if existing is None:
                device = self._devices[mac] = Device(mac, "pending", hostname, first_seen=now, last_seen=now)
                self.defer("INSERT INTO devices (mac,state,hostname,first_seen,last_seen) VALUES (?,?,?,?,?) "
                           "ON CONFLICT(mac) DO NOTHING", (mac, "pending", hostname, now, now))
                self._seen_written[mac] = now
                return dataclasses.replace(device), True
            existing.last_seen = now
            if not existing.first_seen:      # pre-approved: this is its first visit
                existing.first_seen = now
                self.defer("UPDATE devices SET first_seen=? WHERE mac=?", (now, mac))
            if hostname and hostname != existing.hostname:
                existing.hostname = hostname
                self.defer("UPDATE devices SET hostname=?, last_seen=? WHERE mac=?", (hostname, now, mac))
                self._seen_written[mac] = now
            elif now - self._seen_written.get(mac, 0) >= LAST_SEEN_WRITE_SECONDS:
                self.defer("UPDATE devices SET last_seen=? WHERE mac=?", (now, mac))
                self._seen_written[mac] = now
            return dataclasses.replace(existing), False

    def set_device_state(self, mac: str, state: str, now: float | None = None) -> Device:
        if state not in DEVICE_STATES:
            raise ValueError(f"unknown device state {state!r}")
        now = time.time() if now is None else now
        with self._lock:
            self.execute("INSERT INTO devices (mac,state,first_seen,last_seen) VALUES (?,?,?,?) "
                         "ON CONFLICT(mac) DO UPDATE SET state=excluded.state", (mac, state, now, now))
            device = self._reload_device(mac)
            assert device is not None       # just written
            return dataclasses.replace(device)

    def set_device_meta(self, mac: str, **fields: str) -> Device | None:
        """The device as it is now; None if it is gone (forgotten meanwhile)."""
        allowed = {"name", "owner", "type"}
        with self._lock:
            for key, value in fields.items():
                if key not in allowed:
                    raise ValueError(f"unknown device field {key!r}")
                self.execute(f"UPDATE devices SET {key}=? WHERE mac=?", (value, mac))
            device = self._reload_device(mac)
            return dataclasses.replace(device) if device else None

    # -- leases ----------------------------------------------------------------------
    def leases(self) -> list[dict]:
        """The stored columns (mac, block, expires, port, hostname, relay): DHCP makes its
        Leases from them at start; nobody else reads them."""
        return [dict(r) for r in self.execute("SELECT mac, block, expires, port, hostname, relay FROM leases")]

    def save_lease(self, lease: Lease) -> None:
        self.defer("INSERT INTO leases (mac,block,expires,port,hostname,relay) VALUES (?,?,?,?,?,?) "
                   "ON CONFLICT(mac) DO UPDATE SET block=excluded.block, expires=excluded.expires, "
                   "port=excluded.port, hostname=excluded.hostname, relay=excluded.relay",
                   (lease.mac, lease.index, lease.expires, lease.port, lease.hostname, lease.relay))

    def delete_lease(self, mac: str) -> None:
        # Queued like the lease rows themselves: a full disk must not fail a DHCP handler.
        self.defer("DELETE FROM leases WHERE mac=?", (mac,))

    # -- forgetting ------------------------------------------------------------------
    def forget_device(self, mac: str) -> bool:
        """Remove everything the controller core keeps about a MAC (device row and lease).
        Returns whether the device was known."""
        with self._lock:
            # Queued, in order with everything else about this MAC (a full disk keeps it).
            self.defer("DELETE FROM devices WHERE mac=?", (mac,))
            self.defer("DELETE FROM leases WHERE mac=?", (mac,))
            self._seen_written.pop(mac, None)
            return self._devices.pop(mac, None) is not None

    # -- blocks held back (dhcp allocator): declined, forgotten, reserved --------------
    def quarantine(self) -> dict[int, float]:
        return {r["block"]: r["until"] for r in self.execute("SELECT block, until FROM quarantine")}

    def save_quarantine(self, block: int, until: float) -> None:
        self.defer("INSERT INTO quarantine (block, until) VALUES (?, ?) "
                   "ON CONFLICT(block) DO UPDATE SET until=excluded.until", (block, until))

    def drop_quarantine(self, block: int) -> None:
        self.defer("DELETE FROM quarantine WHERE block=?", (block,))


class _Transaction:
    def __init__(self, store: StateStore):
        self.store = store

    def __enter__(self):
        store = self.store
        store._lock.acquire()
        try:
            if not store.flush():
                raise StorageError(store._refusal())
            store.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            store._lock.release()
            raise
        return store

    def __exit__(self, exc_type, exc, tb):
        store = self.store
        try:
            if exc_type is None:
                try:
                    store.db.execute("COMMIT")
                    return False
                except sqlite3.OperationalError as commit_error:
                    exc = commit_error
            store._rollback()
            if _retryable(exc) and not isinstance(exc, StorageError):
                if not store._deferred:
                    store._deferred.append((_PROBE, (time.time(),)))
                store._write_failed(exc)
                raise StorageError(store._refusal()) from exc
            if exc_type is None:
                raise exc
            return False
        finally:
            store._lock.release()
