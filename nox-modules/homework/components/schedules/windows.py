"""Weekly time windows ("school nights 21:30-07:00") in local wall-clock time.

A window is a set of weekdays and a start and end minute of the day. A window whose end
is not after its start crosses midnight and belongs to the day it starts on: "mon
21:30-07:00" runs from Monday 21:30 to Tuesday 07:00. Whether a window is open is
decided from the local wall clock alone (no "elapsed since"), so a clock that jumps
(NTP at boot) gives the right answer at the next look. DST days need nothing special:
01:30 on a 23-hour day is simply never seen.

The text form, used by the CLI, the API and a DNS rule's `schedule` column:
    DAYS HH:MM-HH:MM [; DAYS HH:MM-HH:MM ...]
DAYS: mon..sun, a range (mon-fri, fri-mon wraps), a list (sat,sun), or daily,
weekdays, weekends.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
NAMED = {"daily": tuple(range(7)), "weekdays": tuple(range(5)), "weekends": (5, 6)}
_TIME = re.compile(r"^(\d{1,2}):(\d{2})$")
WEEK = 7 * 1440


class WindowError(ValueError):
    """A day list or a time that is not understood; the message says what is expected."""


def parse_days(text) -> tuple[int, ...]:
    """'mon-fri', 'sat,sun', 'fri-mon', 'daily' -> sorted weekday numbers (Monday = 0)."""
    if isinstance(text, (list, tuple)):
        text = ",".join(str(t) for t in text)
    if not isinstance(text, str) or not text.strip():
        raise WindowError("days: give at least one day (mon..sun, mon-fri, sat,sun, daily, weekdays, weekends)")
    days: set[int] = set()
    for part in text.lower().replace(" ", "").split(","):
        if part in NAMED:
            days.update(NAMED[part])
            continue
        first, _, last = part.partition("-")
        if first not in DAYS or (last and last not in DAYS):
            raise WindowError(f"days: {part!r} is not a day or a range of days (mon..sun, e.g. mon-fri)")
        a, b = DAYS.index(first), DAYS.index(last or first)
        days.update((a + i) % 7 for i in range((b - a) % 7 + 1))
    return tuple(sorted(days))


def parse_time(text, what: str = "time") -> int:
    """'21:30' -> minute of the day (0..1439)."""
    found = _TIME.match(str(text).strip()) if isinstance(text, str) else None
    if not found or int(found.group(1)) > 23 or int(found.group(2)) > 59:
        raise WindowError(f"{what}: {text!r} is not a time of day HH:MM (00:00 to 23:59)")
    return int(found.group(1)) * 60 + int(found.group(2))


def hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def days_text(days: tuple[int, ...]) -> str:
    for name, named in NAMED.items():
        if days == named:
            return name
    return ",".join(DAYS[d] for d in days)


@dataclass(frozen=True)
class Window:
    days: tuple[int, ...]    # weekdays it starts on, Monday = 0
    start: int               # minute of the day
    end: int                 # minute of the day; <= start: crosses midnight

    @classmethod
    def make(cls, days, start, end) -> Window:
        window = cls(parse_days(days), parse_time(start, "from"), parse_time(end, "to"))
        if window.start == window.end:
            raise WindowError(f"from and to are both {hhmm(window.start)}: the window would be empty")
        return window

    @property
    def crosses_midnight(self) -> bool:
        return self.end <= self.start

    def text(self) -> str:
        return f"{days_text(self.days)} {hhmm(self.start)}-{hhmm(self.end)}"

    def is_open(self, t: float, tz: tzinfo) -> bool:
        local = datetime.fromtimestamp(t, tz)
        minute = local.hour * 60 + local.minute
        today = local.weekday()
        if not self.crosses_midnight:
            return today in self.days and self.start <= minute < self.end
        return (today in self.days and minute >= self.start) or \
            ((today - 1) % 7 in self.days and minute < self.end)

    def end_after(self, t: float, tz: tzinfo) -> float:
        """Epoch second at which the window open at `t` closes (the next end time)."""
        local = datetime.fromtimestamp(t, tz)
        day = local.date()
        for add in range(0, 9):
            d = day + timedelta(days=add)
            at = datetime(d.year, d.month, d.day, self.end // 60, self.end % 60, tzinfo=tz).timestamp()
            if at > t:
                return at
        return t

    def spans(self) -> list[tuple[int, int]]:
        """The minutes of the week it covers, as [a, b) spans (split at the week's end)."""
        out = []
        for day in self.days:
            a = day * 1440 + self.start
            b = day * 1440 + self.end + (1440 if self.crosses_midnight else 0)
            if b > WEEK:
                out += [(a, WEEK), (0, b - WEEK)]
            else:
                out.append((a, b))
        return out

    def overlaps(self, other: Window) -> bool:
        return any(a < d and c < b for a, b in self.spans() for c, d in other.spans())


def parse_spec(text: str) -> tuple[Window, ...]:
    """'sun-thu 21:30-07:00; sat 23:00-08:00' -> windows (the DNS rule form)."""
    if not isinstance(text, str) or not text.strip():
        raise WindowError("schedule: give DAYS HH:MM-HH:MM, e.g. 'sun-thu 21:30-07:00'")
    windows = []
    for part in text.split(";"):
        words = part.split()
        if len(words) != 2 or "-" not in words[1]:
            raise WindowError(f"schedule: {part.strip()!r} is not DAYS HH:MM-HH:MM (e.g. 'sun-thu 21:30-07:00')")
        start, _, end = words[1].partition("-")
        windows.append(Window.make(words[0], start, end))
    return tuple(windows)


def spec_text(windows: tuple[Window, ...]) -> str:
    return "; ".join(w.text() for w in windows)


def any_open(windows, t: float, tz: tzinfo) -> bool:
    return any(w.is_open(t, tz) for w in windows)
