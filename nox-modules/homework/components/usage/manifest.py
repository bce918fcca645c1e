"""Usage's manifest (homework/manifest.py): the hourly byte counts (measurement, not
backed up), the household cap and the per-device or per-owner limits (backed up), the
alerts it raises and its counters."""
from __future__ import annotations

from ... import events, rowcheck
from ...manifest import Manifest, NotBackedUp, Settings
from .bursts import row_check as burst_row
from .limits import ACTIONS as LIMIT_ACTIONS


def limit_row(r: dict) -> None:
    rowcheck.target(r["target"])
    rowcheck.choice(r["period"], "period", ("day", "month"))
    rowcheck.number(r["allowance"], "allowance", 0, whole=True)
    rowcheck.choice(r["action"], "action", LIMIT_ACTIONS)
    rowcheck.number(r.get("rate", 0), "rate", 0, whole=True)


def cap_row(r: dict) -> None:
    rowcheck.number(r.get("id", 1), "id", 1, 1, whole=True)
    rowcheck.number(r["cap"], "cap", 0, whole=True)
    rowcheck.number(r["billing_day"], "billing_day", 1, 31, whole=True)


K = events.AlertKind

MANIFEST = Manifest(
    component="usage",
    tables=(
        NotBackedUp("usage_hours", (4,), "usage history is measurement, not a setting (and large)"),
        Settings("usage_limits", (4, 6), ("target", "period", "allowance", "action", "rate"), limit_row,
                 left_out={"reached": "this period's state, not a setting",
                           "lifted": "this period's state, not a setting"}),
        Settings("usage_cap", (4,), ("id", "cap", "billing_day"), cap_row,
                 left_out={"alerted_period": "alert state: the restored router alerts afresh",
                           "alerted": "alert state"}),
        Settings("usage_bursts", (18,), ("mac", "bytes", "minutes"), burst_row),
    ),
    publishes=(events.Alert,),
    hears=(events.Bandwidth, events.Lease, events.Ipv6Plan, events.Device, events.Timezone),
    alerts=(K.USAGE_80, K.USAGE_100, K.USAGE_LIMIT, K.USAGE_BURST),
    counters={
        "usage.rows_written": "hourly usage rows written to state.db",
        "usage.alerts_80": "alerts that the household used 80% of its cap",
        "usage.alerts_100": "alerts that the household used all of its cap",
        "usage.limit_notify": "limits reached whose action is to tell the household",
        "usage.limit_slow": "limits reached that slowed a device down",
        "usage.limit_block": "limits reached that cut a device off",
        "usage.burst_alerts": "alerts that a device moved more than its burst alert's amount in its minutes",
    },
    carries={"usage_limits": "allowance (its own; its owner's follow the owner)", "usage_bursts": "burst alert"},
)
