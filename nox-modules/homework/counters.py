"""One registry for every counter of the controller: `ctx.count("dhcp.offers")`.

Names are "part.what"; `homework stats` and `GET /ws.v1/stats` show them all, grouped by
part, so nothing is counted where nobody can see it (and nothing is counted twice).
"""
from __future__ import annotations

from collections import Counter


class Counters:
    def __init__(self):
        self._counts: Counter = Counter()

    def count(self, name: str, n: int = 1) -> None:
        # No lock: counting is on every packet's path, the controller's green threads
        # switch only at I/O, and under eventlet threading.Lock is a green semaphore that
        # cost more than the count (the profile of a burst).
        self._counts[name] += n

    def get(self, name: str) -> int:
        return self._counts.get(name, 0)

    def snapshot(self) -> dict[str, dict[str, int]]:
        """{"dhcp": {"offers": 3, ...}, "core": {...}, ...}"""
        items = list(self._counts.items())
        grouped: dict[str, dict[str, int]] = {}
        for name, value in sorted(items):
            part, _, what = name.partition(".")
            grouped.setdefault(part, {})[what or part] = value
        return grouped
