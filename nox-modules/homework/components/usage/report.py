"""Usage grouped by time (hour/day/month) and by who (device, owner, device type)."""
from __future__ import annotations

from collections import defaultdict
from datetime import tzinfo

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
    out = [{"period": p, "who": w, "up": u, "down": d, "total": u + d} for (p, w), (u, d) in sums.items()]
    out.sort(key=lambda r: (r["period"], -r["total"], r["who"]))
    return out


def totals(rows, devices: dict, by: str) -> dict[str, int]:
    sums: dict[str, int] = defaultdict(int)
    for mac, _hour, up, down in rows:
        sums[who(mac, devices, by)] += up + down
    return dict(sums)
