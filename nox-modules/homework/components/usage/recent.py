"""The last hour of each device's bytes per minute, in memory, for the device panel's
"last hour" chart (state.db keeps whole hours only). Lost on a controller restart: the
chart then starts empty and fills minute by minute."""
from __future__ import annotations

MINUTE = 60
KEEP = 60           # minutes kept per device


class RecentMinutes:
    def __init__(self):
        self._minutes: dict[str, dict[int, list[int]]] = {}   # MAC -> minute start -> [up, down]
        self._pruned = 0

    def add(self, mac: str, up: int, down: int, now: float) -> None:
        if up <= 0 and down <= 0:
            return
        minute = int(now // MINUTE * MINUTE)
        cell = self._minutes.setdefault(mac, {}).setdefault(minute, [0, 0])
        cell[0] += max(up, 0)
        cell[1] += max(down, 0)
        if minute != self._pruned:          # at most once a minute: drop what is older than an hour
            self._pruned = minute
            self._prune(minute - KEEP * MINUTE)

    def _prune(self, oldest: int) -> None:
        for mac in list(self._minutes):
            cells = {m: c for m, c in self._minutes[mac].items() if m >= oldest}
            if cells:
                self._minutes[mac] = cells
            else:
                del self._minutes[mac]

    def rows(self, mac: str) -> list[tuple[str, int, int, int]]:
        """(mac, minute start, up, down) of the minutes kept, in the book's row shape."""
        return [(mac, m, up, down) for m, (up, down) in sorted(self._minutes.get(mac, {}).items())]
