"""Usage grouped by time (hour/day/month) and by who (device, owner, device type), and one
device's series over the last hour/day/month for the panel's chart."""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from datetime import datetime, tzinfo
from typing import Any

from . import periods

UNASSIGNED = "unassigned"
PERIODS = ("hour", "day", "month")
GROUPS = ("device", "owner", "type")


def who(mac: str, devices: dict, by: str) -> str:
    """The group a device's bytes count under; devices without owner/type: 'unassigned'."""
    if by == "device":
        return mac
    dev = devices.get(mac)
    value = getattr(dev, by, "") if dev is not None else ""
    return value or UNASSIGNED


def group(rows, devices: dict, by: str, period: str, tz: tzinfo, billing_day: int = 1) -> list[dict]:
    """[{"period", "who", "up", "down", "total"}] sorted by period then by most bytes."""
    sums: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for mac, hour, up, down in rows:
        cell = sums[(periods.label(hour, tz, period, billing_day), who(mac, devices, by))]
        cell[0] += up
        cell[1] += down
    out: list[dict[str, Any]] = [{"period": p, "who": w, "up": u, "down": d, "total": u + d}
                                 for (p, w), (u, d) in sums.items()]
    out.sort(key=lambda r: (r["period"], -r["total"], r["who"]))
    return out


def totals(rows, devices: dict, by: str) -> dict[str, int]:
    sums: dict[str, int] = defaultdict(int)
    for mac, _hour, up, down in rows:
        sums[who(mac, devices, by)] += up + down
    return dict(sums)


# -- one device's traffic over the last hour / day / month, for the panel's chart -------------
RANGES = ("hour", "day", "month")
STEPS = {"hour": "minute", "day": "hour", "month": "day"}
MINUTES, HOURS, DAYS = 60, 24, 30      # buckets per range
LABELS = {"minute": "%H:%M", "hour": "%H:00", "day": "%Y-%m-%d"}


def range_edges(span: str, now: float, tz: tzinfo) -> list[int]:
    """Bucket boundaries (epoch seconds, one more than buckets) of the last hour in minutes,
    the last day in local hours, or the last month in local days; the last bucket holds `now`."""
    if span == "hour":
        minute = int(now // 60 * 60)        # every zone's offset is whole minutes
        return [minute - 60 * k for k in range(MINUTES - 1, -2, -1)]
    if span == "day":
        hour = periods.hour_start(now, tz)
        return [hour - 3600 * k for k in range(HOURS - 1, -2, -1)]
    start, end = periods.day_window(now, tz)
    edges = [end, start]
    for _ in range(DAYS - 1):               # step back a local day at a time (23 or 25 h at DST)
        edges.append(periods.day_window(edges[-1] - 1, tz)[0])
    return edges[::-1]


def bucket(rows, edges: list[int]) -> tuple[list[int], list[int]]:
    """Sum (mac, t, up, down) rows into the buckets [edges[i], edges[i+1]): (ups, downs)."""
    n = len(edges) - 1
    ups, downs = [0] * n, [0] * n
    for _mac, t, up, down in rows:
        i = bisect_right(edges, t) - 1
        if 0 <= i < n:
            ups[i] += up
            downs[i] += down
    return ups, downs


def device_series(mac: str, span: str, rows, edges: list[int], tz: tzinfo) -> dict:
    """The panel chart's data: parallel labels/up/down lists, one entry per bucket."""
    ups, downs = bucket([r for r in rows if r[0] == mac], edges)
    fmt = LABELS[STEPS[span]]
    return {"mac": mac, "range": span, "step": STEPS[span], "start": edges[0], "end": edges[-1],
            "starts": edges[:-1], "labels": [datetime.fromtimestamp(t, tz).strftime(fmt) for t in edges[:-1]],
            "up": ups, "down": downs, "total": sum(ups) + sum(downs)}


def step_labels(start: int, now: float, step: str, tz: tzinfo) -> list[str]:
    """The names of every hour or local day from `start` to the one holding `now`, so a
    chart shows the quiet ones as zero instead of leaving them out."""
    out, t = [], start
    while t <= now:
        out.append(periods.label(t, tz, step))
        t = t + 3600 if step == "hour" else periods.day_window(t, tz)[1]
    return out
