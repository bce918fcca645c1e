"""CSV export of a month of usage: one row per local day and device."""
from __future__ import annotations

import csv
import io
from datetime import tzinfo

from . import report

COLUMNS = ("day", "mac", "name", "owner", "type", "up_bytes", "down_bytes", "total_bytes")


def _cell(value: str) -> str:
    # A name from the LAN starting like a formula must not run in a spreadsheet.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def month_csv(rows, devices: dict, tz: tzinfo) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(COLUMNS)
    for r in sorted(report.group(rows, devices, "device", "day", tz), key=lambda r: (r["period"], r["who"])):
        dev = devices.get(r["who"])
        w.writerow((r["period"], r["who"], _cell(getattr(dev, "name", "") if dev else ""),
                    _cell((getattr(dev, "owner", "") if dev else "") or report.UNASSIGNED),
                    _cell((getattr(dev, "type", "") if dev else "") or report.UNASSIGNED),
                    r["up"], r["down"], r["total"]))
    return out.getvalue()
