"""Per-device rate limit for DnsQueries rows (603k queries in 40 s from one
pending device flooded hwdb).

Each device gets `rows_per_device` rows per interval, one per query (or per dnsd-merged
event), as before. Past that budget, the device's further queries in the interval are
counted per (name, qtype, verdict) and written as one row each when the interval ends, with
`count` = the queries it stands for and `latency_us` = their mean. A device flooding with
many distinct names gets at most `names_per_device` such rows; the rest fold into one row
per verdict named OTHER_NAMES. So counts stay honest and rows per device stay bounded.

Rows are value tuples in DnsQueries column order:
(mac, name, qtype, verdict, latency_us, count).
"""
from __future__ import annotations

from collections.abc import Callable

INTERVAL = 1.0
ROWS_PER_DEVICE = 50
NAMES_PER_DEVICE = 100
# Cannot be a name dnsd reports: its event lines are space-separated.
OTHER_NAMES = "(other names)"
OTHER_QTYPE = "*"


class DnsLimiter:
    def __init__(self, clock: Callable[[], float], interval: float = INTERVAL,
                 rows_per_device: int = ROWS_PER_DEVICE, names_per_device: int = NAMES_PER_DEVICE):
        if interval <= 0 or rows_per_device < 0 or names_per_device < 0:
            raise ValueError("interval must be > 0 and the budgets >= 0")
        self._clock = clock
        self.interval = interval
        self.rows_per_device = rows_per_device
        self.names_per_device = names_per_device
        self._window_start: float | None = None
        self._rows: dict[str, int] = {}                       # mac -> rows written this interval
        self._agg: dict[str, dict[tuple, list]] = {}          # mac -> key -> [count, latency sum]
        self._ready: list[tuple] = []
        self.aggregated = 0                                    # queries folded into count rows

    def admit(self, row: tuple) -> list[tuple]:
        """The rows to write now for one query row (itself, or none while aggregating)."""
        self._roll()
        mac, name, qtype, verdict, latency, count = row
        written = self._rows.get(mac, 0)
        if written < self.rows_per_device:
            self._rows[mac] = written + 1
            return [row]
        per_name = self._agg.setdefault(mac, {})
        key = (name, qtype, verdict)
        if key not in per_name and len(per_name) >= self.names_per_device:
            key = (OTHER_NAMES, OTHER_QTYPE, verdict)
        slot = per_name.setdefault(key, [0, 0])
        slot[0] += count
        slot[1] += latency * count
        self.aggregated += count
        return []

    def due(self, final: bool = False) -> list[tuple]:
        """Count rows of the intervals that ended (all of them when `final`)."""
        self._roll(force=final)
        ready, self._ready = self._ready, []
        return ready

    def _roll(self, force: bool = False) -> None:
        now = self._clock()
        if self._window_start is None:
            self._window_start = now
            return
        if not force and now - self._window_start < self.interval:
            return
        for mac, per_name in self._agg.items():
            for (name, qtype, verdict), (count, latency_sum) in per_name.items():
                self._ready.append((mac, name, qtype, verdict, latency_sum // max(count, 1), count))
        self._agg.clear()
        self._rows.clear()
        self._window_start = now
