"""Usage bytes per device per local hour: summed in memory, written in batches.

Events on the hot path only add to a dict; `flush` turns the dict into one upsert per
(device, hour) queued on the state store's write-behind, which commits them in one
transaction. A controller restart loses what was not flushed yet: at most
usage.flush_interval seconds plus one routing.flow_stats_interval of bytes.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import tzinfo

from . import periods

UPSERT = ("INSERT INTO usage_hours (mac, hour, up, down) VALUES (?, ?, ?, ?) "
          "ON CONFLICT (mac, hour) DO UPDATE SET up = up + excluded.up, down = down + excluded.down")


class UsageBook:
    def __init__(self, state, tz: tzinfo, keep_months: int = 13):
        self.state = state
        self.tz = tz
        self.keep_months = keep_months
        self._pending: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
        self._pruned_month = 0

    def add(self, mac: str, up: int, down: int, now: float) -> None:
        """Bytes counted in the polling interval that ended at `now`."""
        if up <= 0 and down <= 0:
            return
        cell = self._pending[(mac, periods.hour_start(now, self.tz))]
        cell[0] += max(up, 0)
        cell[1] += max(down, 0)

    def flush(self, now: float) -> int:
        """Queue the pending sums as upserts (one batch); returns how many rows."""
        pending, self._pending = self._pending, defaultdict(lambda: [0, 0])
        for (mac, hour), (up, down) in pending.items():
            self.state.defer(UPSERT, (mac, hour, up, down))
        self._prune(now)
        return len(pending)

    def _prune(self, now: float) -> None:
        # Keep `keep_months` months before the current one; checked at most once a month.
        cutoff = periods.months_back(now, self.tz, self.keep_months)
        if cutoff != self._pruned_month:
            self._pruned_month = cutoff
            self.state.defer("DELETE FROM usage_hours WHERE hour < ?", (cutoff,))

    # -- reads (pending sums included, so a read right after traffic sees it) ------------------
    def device_sum(self, mac: str, start: int, end: int) -> tuple[int, int]:
        """(up, down) bytes of one device over the hours in [start, end): its rows only
        (the table's key starts with the MAC), pending sums included."""
        up = down = 0
        for r in self.state.execute("SELECT up, down FROM usage_hours WHERE mac = ? AND hour >= ? AND hour < ?",
                                    (mac, start, end)):
            up += r["up"]
            down += r["down"]
        for (who, hour), (u, d) in list(self._pending.items()):
            if who == mac and start <= hour < end:
                up += u
                down += d
        return up, down

    def rows(self, start: int, end: int) -> list[tuple[str, int, int, int]]:
        """(mac, hour, up, down) for the hours in [start, end)."""
        sums: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
        for r in self.state.execute("SELECT mac, hour, up, down FROM usage_hours WHERE hour >= ? AND hour < ?",
                                    (start, end)):
            cell = sums[(r["mac"], r["hour"])]
            cell[0] += r["up"]
            cell[1] += r["down"]
        for (mac, hour), (up, down) in list(self._pending.items()):
            if start <= hour < end:
                cell = sums[(mac, hour)]
                cell[0] += up
                cell[1] += down
        return [(mac, hour, up, down) for (mac, hour), (up, down) in sorted(sums.items(), key=lambda kv: kv[0][1])]
