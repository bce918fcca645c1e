"""Local hours, days, months and billing periods as epoch-second windows.

Usage is stored per *local* hour (the epoch second at which the hour began in the
configured zone), so that a day or a month is exactly a set of stored hours, even in
zones offset by a half hour and across DST changes (a DST day has 23 or 25 hours).
"""
from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

LOCALTIME = Path("/etc/localtime")


def zone(name: str) -> tzinfo:
    """The configured IANA zone; '' = the system's /etc/localtime (UTC when absent)."""
    if name:
        return ZoneInfo(name)
    if LOCALTIME.exists():
        with LOCALTIME.open("rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    return ZoneInfo("UTC")


def hour_start(t: float, tz: tzinfo) -> int:
    """Epoch second at which the local hour holding `t` began."""
    local = datetime.fromtimestamp(t, tz)
    return int(local.replace(minute=0, second=0, microsecond=0).timestamp())


def _midnight(year: int, month: int, day: int, tz: tzinfo) -> int:
    return int(datetime(year, month, day, tzinfo=tz).timestamp())


def day_window(t: float, tz: tzinfo) -> tuple[int, int]:
    """[start, end) of the local day holding `t`."""
    d = datetime.fromtimestamp(t, tz).date()
    n = d + timedelta(days=1)
    return _midnight(d.year, d.month, d.day, tz), _midnight(n.year, n.month, n.day, tz)


def week_start(t: float, tz: tzinfo) -> int:
    """Epoch second of the local Monday midnight that began the week holding `t`."""
    d = datetime.fromtimestamp(t, tz).date()
    d -= timedelta(days=d.weekday())
    return _midnight(d.year, d.month, d.day, tz)


def _add_months(year: int, month: int, n: int) -> tuple[int, int]:
    i = year * 12 + (month - 1) + n
    return i // 12, i % 12 + 1


def _billing_start(year: int, month: int, billing_day: int, tz: tzinfo) -> int:
    # A billing day past the month's end (31 in April) means the month's last day.
    day = min(billing_day, calendar.monthrange(year, month)[1])
    return _midnight(year, month, day, tz)


def month_window(t: float, tz: tzinfo, billing_day: int = 1) -> tuple[int, int]:
    """[start, end) of the billing period holding `t`: from local midnight of the billing
    day to the next one (billing_day 1 = the calendar month)."""
    local = datetime.fromtimestamp(t, tz)
    y, m = local.year, local.month
    start = _billing_start(y, m, billing_day, tz)
    if t < start:
        y, m = _add_months(y, m, -1)
        start = _billing_start(y, m, billing_day, tz)
    ny, nm = _add_months(y, m, 1)
    return start, _billing_start(ny, nm, billing_day, tz)


def months_back(t: float, tz: tzinfo, n: int) -> int:
    """Local midnight of the first day of the calendar month `n` months before `t`'s."""
    local = datetime.fromtimestamp(t, tz)
    y, m = _add_months(local.year, local.month, -n)
    return _midnight(y, m, 1, tz)


FORMATS = {"hour": "%Y-%m-%dT%H:00%z", "day": "%Y-%m-%d", "month": "%Y-%m"}


def label(hour: int, tz: tzinfo, period: str, billing_day: int = 1) -> str:
    """The local name of the hour, day or billing period (named by the month it starts
    in) that a stored hour belongs to."""
    if period == "month":
        hour = month_window(hour, tz, billing_day)[0]
    return datetime.fromtimestamp(hour, tz).strftime(FORMATS[period])


MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def calendar_month(text: str, tz: tzinfo) -> tuple[int, int]:
    """[start, end) of the local calendar month named YYYY-MM."""
    from ...commands import CommandError
    m = MONTH.match(text or "")
    if not m or not 1 <= int(m.group(2)) <= 12 or int(m.group(1)) < 1970:
        raise CommandError(f"usage: month must be YYYY-MM, got {text!r}")
    y, mo = int(m.group(1)), int(m.group(2))
    ny, nm = _add_months(y, mo, 1)
    return _midnight(y, mo, 1, tz), _midnight(ny, nm, 1, tz)
