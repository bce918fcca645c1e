"""The controller's persistent state (SQLite): devices, leases and anything a component
registers. One source of truth per fact: decisions and leases live here; hwdb is only the log.

Other components add their own tables with `StateStore.ensure_schema`, so each keeps its
schema next to its logic.
"""
from __future__ import annotations

import dataclasses
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS devices (
    mac TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('pending','permitted','denied','blacklisted')),
    hostname TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL DEFAULT '',
    type TEXT NOT NULL DEFAULT '',
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    mac TEXT PRIMARY KEY,
    block INTEGER NOT NULL UNIQUE,      -- index of the /30 inside the pool
    expires REAL NOT NULL,              -- epoch seconds; 0 = offered only / released
    port INTEGER NOT NULL DEFAULT 0,    -- OpenFlow port the device was last seen on
    hostname TEXT NOT NULL DEFAULT '',
    relay TEXT NOT NULL DEFAULT ''      -- giaddr of the relay agent it came through; '' = on our port
);
"""


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


@dataclass
class LeaseRow:
    mac: str
    block: int
    expires: float
    port: int
    hostname: str
    relay: str = ""


class StateStore:
    """Thread-safe wrapper around one SQLite database in WAL mode."""

    def __init__(self, path: Path | str):
        path = Path(path)
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self.db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        # NORMAL keeps committed data across a process crash; only power loss may lose
        # the last transactions, which a DHCP client recovers from by re-requesting.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.ensure_schema(_SCHEMA)
        self._migrate()
        # Devices are read on every DHCP message: keep them in memory, write through.
        self._devices = {row["mac"]: Device(**dict(row)) for row in self.db.execute("SELECT * FROM devices")}
        self._seen_written: dict[str, float] = {}
        self._deferred: list[tuple[str, tuple]] = []

    # -- generic -------------------------------------------------------------------
    def ensure_schema(self, sql: str) -> None:
        with self._lock:
            self.db.executescript(sql)

    def _migrate(self) -> None:
        """Columns added after a database was created."""
        columns = {row["name"] for row in self.db.execute("PRAGMA table_info(leases)")}
        if "relay" not in columns:
            self.db.execute("ALTER TABLE leases ADD COLUMN relay TEXT NOT NULL DEFAULT ''")

    def execute(self, sql: str, args=()) -> list[sqlite3.Row]:
        with self._lock:
            self.flush()     # every read and write sees the queued writes, in order
            return self.db.execute(sql, args).fetchall()

    def defer(self, sql: str, args=()) -> None:
        """Queue a write for the next flush (see WRITE_BEHIND_SECONDS)."""
        with self._lock:
            self._deferred.append((sql, args))

    def flush(self) -> None:
        """Write the queued statements in one transaction. A statement that fails (say a
        constraint) is logged and skipped; the others still commit."""
        with self._lock:
            if not self._deferred:
                return
            pending, self._deferred = self._deferred, []
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in pending:
                    try:
                        self.db.execute(sql, args)
                    except sqlite3.IntegrityError as exc:
                        log.error("state write skipped (%s): %s %r", exc, sql.split(" (")[0], args)
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def transaction(self):
        """Context manager: one atomic write of several statements."""
        return _Transaction(self)

    def close(self) -> None:
        with self._lock:
            self.flush()
            self.db.close()

    # -- devices ---------------------------------------------------------------------
    def _reload_device(self, mac: str) -> Device | None:
        rows = self.db.execute("SELECT * FROM devices WHERE mac=?", (mac,)).fetchall()
        if rows:
            self._devices[mac] = Device(**dict(rows[0]))
        else:
            self._devices.pop(mac, None)
        return self._devices.get(mac)

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
            return dataclasses.replace(self._reload_device(mac))

    def set_device_meta(self, mac: str, **fields: str) -> Device:
        allowed = {"name", "owner", "type"}
        with self._lock:
            for key, value in fields.items():
                if key not in allowed:
                    raise ValueError(f"unknown device field {key!r}")
                self.execute(f"UPDATE devices SET {key}=? WHERE mac=?", (value, mac))
            device = self._reload_device(mac)
            return dataclasses.replace(device) if device else None

    # -- leases ----------------------------------------------------------------------
    def leases(self) -> list[LeaseRow]:
        return [LeaseRow(**dict(r)) for r in self.execute("SELECT * FROM leases")]

    def save_lease(self, row: LeaseRow) -> None:
        self.defer("INSERT INTO leases (mac,block,expires,port,hostname,relay) VALUES (?,?,?,?,?,?) "
                   "ON CONFLICT(mac) DO UPDATE SET block=excluded.block, expires=excluded.expires, "
                   "port=excluded.port, hostname=excluded.hostname, relay=excluded.relay",
                   (row.mac, row.block, row.expires, row.port, row.hostname, row.relay))

    def delete_lease(self, mac: str) -> None:
        self.execute("DELETE FROM leases WHERE mac=?", (mac,))


class _Transaction:
    def __init__(self, store: StateStore):
        self.store = store

    def __enter__(self):
        self.store._lock.acquire()
        self.store.flush()
        self.store.db.execute("BEGIN IMMEDIATE")
        return self.store

    def __exit__(self, exc_type, exc, tb):
        try:
            self.store.db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self.store._lock.release()
        return False
