"""The household cap: the plan's bytes per billing period, how much of it is used, where
the period is heading, and the 80 % / 100 % alerts (each once per period, remembered in
state.db so a restart does not repeat them)."""
from __future__ import annotations

import re

from ...commands import CommandError
from ...values import BadValue, whole_number

LEVELS = (80, 100)
SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)[bB]?\s*$")
UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}   # ISPs count in powers of ten


def parse_size(value) -> int:
    """Bytes from 500000000, "500000000", "500G", "1.5TB" (decimal units, as ISPs bill)."""
    if isinstance(value, bool):
        raise CommandError(f"usage-cap: not a size: {value!r}")
    if isinstance(value, int):
        n = value
    else:
        m = SIZE.match(str(value))
        if not m:
            raise CommandError(f"usage-cap: not a size: {value!r} (bytes, or a number with K, M, G or T)")
        n = int(float(m.group(1)) * UNITS[m.group(2).lower()])
    if not 0 <= n <= 10**18:
        raise CommandError(f"usage-cap: cap must be between 0 and 10^18 bytes, got {n}")
    return n


def parse_day(value) -> int:
    try:
        return whole_number(value, "usage-cap: billing_day (a day of the month)", 1, 31)
    except BadValue as exc:
        raise CommandError(str(exc)) from None


class Cap:
    def __init__(self, state, default_cap: int, default_day: int):
        self.state = state
        rows = state.execute("SELECT cap, billing_day, alerted_period, alerted FROM usage_cap WHERE id = 1")
        if rows:
            r = rows[0]
            self.cap, self.billing_day = r["cap"], r["billing_day"]
            self.alerted_period, self.alerted = r["alerted_period"], r["alerted"]
        else:
            self.cap, self.billing_day = default_cap, default_day
            self.alerted_period, self.alerted = 0, 0

    def set(self, cap: int | None, billing_day: int | None) -> None:
        if cap is not None:
            self.cap = cap
        if billing_day is not None:
            self.billing_day = billing_day
        self._save()

    def due_alerts(self, period_start: int, used: int) -> list[int]:
        """The alert levels `used` has newly reached in this period (each once)."""
        if self.alerted_period != period_start:
            self.alerted_period, self.alerted = period_start, 0
        if self.cap <= 0:
            return []
        percent = used * 100 / self.cap
        due = [level for level in LEVELS if percent >= level > self.alerted]
        if due:
            self.alerted = due[-1]
            self._save()
        return due

    def _save(self) -> None:
        self.state.defer("INSERT INTO usage_cap (id, cap, billing_day, alerted_period, alerted) "
                         "VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET cap = excluded.cap, "
                         "billing_day = excluded.billing_day, alerted_period = excluded.alerted_period, "
                         "alerted = excluded.alerted",
                         (self.cap, self.billing_day, self.alerted_period, self.alerted))

    def status(self, start: int, end: int, now: float, used: int) -> dict:
        elapsed = max(now - start, 1.0)
        projected = int(used * (end - start) / elapsed)
        return {"cap": self.cap, "billing_day": self.billing_day, "start": start, "end": end,
                "used": used, "percent": round(used * 100 / self.cap, 1) if self.cap else None,
                "projected": projected,
                "projected_percent": round(projected * 100 / self.cap, 1) if self.cap else None}
