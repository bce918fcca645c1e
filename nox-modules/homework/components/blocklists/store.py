"""Where subscriptions live: their metadata in state.db (table blocklists, migration 7),
their names in one file per list under the state dir, so a restart loads them from disk
without fetching. The file is what homework-dnsd reads (`list ID MACS PATH`): exception
lines (`@@name`) first, then the blocked names, sorted, one per line.

SortedNames answers "is this name listed?" for the controller's twin of dnsd's policy by
binary search in the mmapped file: a million names cost the page cache, not the heap.
"""
from __future__ import annotations

import mmap
import os
import secrets
from pathlib import Path

from ..dns.names import suffixes
from ..dns.options import DnsOptions

COLUMNS = ("id", "url", "owner", "enabled", "added", "fetched", "checked", "rules", "exceptions", "skipped", "error",
           "allow_local")


class SortedNames:
    def __init__(self, path: Path):
        self.path = Path(path)
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        data = self._map
        start, exceptions = 0, set()
        while data[start:start + 2] == b"@@":
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            exceptions.add(data[start + 2:end].decode())
            start = end + 1
        self.exceptions = frozenset(exceptions)
        self._start = start

    def __contains__(self, name: str) -> bool:
        key, data = name.encode(), self._map
        lo, hi = self._start, len(data)
        while lo < hi:
            mid = (lo + hi) // 2
            begin = max(data.rfind(b"\n", lo, mid) + 1, lo)
            end = data.find(b"\n", mid)
            end = len(data) if end < 0 or end > hi else end
            line = data[begin:end]
            if line == key:
                return True
            if line < key:
                lo = end + 1
            else:
                hi = begin
        return False

    def covers(self, name: str) -> bool:
        """Listed, itself or a parent, with no more specific exception (as dnsd decides)."""
        for suffix in suffixes(name):
            if suffix in self.exceptions:
                return False
            if suffix in self:
                return True
        return False

    def __len__(self) -> int:
        return self._map[self._start:].count(b"\n") if self._map else 0


class Store:
    def __init__(self, state, directory: Path):
        self.state = state
        self.dir = Path(directory)

    def path(self, list_id: int) -> Path:
        return self.dir / f"{list_id}.list"

    def all(self) -> list[dict]:
        return [dict(r) for r in self.state.execute(f"SELECT {', '.join(COLUMNS)} FROM blocklists ORDER BY id")]

    def get(self, list_id: int) -> dict | None:
        rows = self.state.execute(f"SELECT {', '.join(COLUMNS)} FROM blocklists WHERE id=?", (list_id,))
        return dict(rows[0]) if rows else None

    def find(self, url: str, owner: str) -> dict | None:
        rows = self.state.execute("SELECT id FROM blocklists WHERE url=? AND owner=?", (url, owner))
        return self.get(rows[0]["id"]) if rows else None

    def staging_path(self) -> Path:
        return self.dir / f"new-{os.getpid()}-{secrets.token_hex(4)}.list"

    def add(self, url: str, owner: str, compiled, now: float, staged: Path, allow_local: bool = False) -> int:
        """A new subscription whose names are already written to `staged` (compile.py's
        Compiled counts them): the row and the file's final name in one transaction (a
        failure leaves neither)."""
        try:
            with self.state.transaction() as tx:
                cur = tx.db.execute("INSERT INTO blocklists (url, owner, enabled, added, fetched, checked, rules, "
                                    "exceptions, skipped, error, allow_local) VALUES (?,?,1,?,?,?,?,?,?,'',?)",
                                    (url, owner, now, now, now, compiled.rules, compiled.exceptions,
                                     compiled.skipped, int(allow_local)))
                list_id = cur.lastrowid
                os.replace(staged, self.path(list_id))
        finally:
            staged.unlink(missing_ok=True)
        return list_id

    def refreshed(self, list_id: int, compiled, now: float, staged: Path) -> None:
        os.replace(staged, self.path(list_id))
        self.state.execute("UPDATE blocklists SET fetched=?, checked=?, rules=?, exceptions=?, skipped=?, error='' "
                           "WHERE id=?", (now, now, compiled.rules, compiled.exceptions, compiled.skipped, list_id))

    def total_names(self, besides: int | None = None) -> int:
        """Names of every subscription (but `besides`): what dnsd holds."""
        rows = self.state.execute("SELECT COALESCE(SUM(rules), 0) FROM blocklists WHERE id IS NOT ?", (besides,))
        return rows[0][0]

    def failed(self, list_id: int, error: str, now: float) -> None:
        """A refresh failed: the previous names stay in force; the error is shown."""
        self.state.execute("UPDATE blocklists SET checked=?, error=? WHERE id=?", (now, error[:500], list_id))

    def remove(self, list_id: int) -> None:
        self.state.execute("DELETE FROM blocklists WHERE id=?", (list_id,))
        self.path(list_id).unlink(missing_ok=True)

    def option(self, key: str) -> str | None:
        return DnsOptions(self.state).get(key)

    def set_option(self, key: str, value: str) -> None:
        DnsOptions(self.state).set(key, value)
