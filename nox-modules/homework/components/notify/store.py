"""The notification list in state.db (table `notifications`, migration step 5): the newest
`keep` are kept. Inserts go through the state store's write-behind (a new device's
notification is made inside its DHCP packet-in); ids are assigned here so the insert
need not wait for SQLite."""
from __future__ import annotations

import threading
from collections.abc import Sequence


class NotificationStore:
    def __init__(self, state, keep: int):
        self.state = state
        self.keep = keep
        self._lock = threading.Lock()
        [row] = state.execute("SELECT COALESCE(MAX(id), 0) FROM notifications")
        self._last_id = row[0]

    def add(self, at: float, kind: str, mac: str, title: str, detail: str) -> dict:
        with self._lock:
            self._last_id += 1
            nid = self._last_id
        self.state.defer("INSERT INTO notifications (id, at, kind, mac, title, detail, read) "
                         "VALUES (?,?,?,?,?,?,0)", (nid, at, kind, mac, title, detail))
        self.state.defer("DELETE FROM notifications WHERE id <= ?", (nid - self.keep,))
        return {"id": nid, "at": at, "kind": kind, "mac": mac, "title": title, "detail": detail, "read": False}

    def list(self, limit: int = 100, unread_only: bool = False) -> list[dict]:
        where = "WHERE read = 0 " if unread_only else ""
        rows = self.state.execute(f"SELECT id, at, kind, mac, title, detail, read FROM notifications {where}"
                                  "ORDER BY id DESC LIMIT ?", (limit,))
        return [{**dict(r), "read": bool(r["read"])} for r in rows]

    def unread(self) -> int:
        return self.state.execute("SELECT COUNT(*) FROM notifications WHERE read = 0")[0][0]

    def mark_read(self, ids: Sequence[int] | None) -> int:
        """Mark these (None: all) read; returns how many changed."""
        if ids is None:
            before = self.unread()
            self.state.execute("UPDATE notifications SET read = 1 WHERE read = 0")
            return before
        changed = 0
        for nid in ids:
            before = self.state.execute("SELECT read FROM notifications WHERE id = ?", (nid,))
            if before and not before[0]["read"]:
                self.state.execute("UPDATE notifications SET read = 1 WHERE id = ?", (nid,))
                changed += 1
        return changed
