"""Schedules' manifest (homework/manifest.py): bedtime windows and pauses (backed up),
the events it publishes when they begin and end."""
from __future__ import annotations

from ... import events, rowcheck
from ...manifest import Manifest, Settings
from .store import ACTIONS


def schedule_row(r: dict) -> None:
    rowcheck.target(r["target"])
    rowcheck.text(r["days"], "days", empty=False)
    for day in r["days"].split(","):
        if not day.isdigit() or int(day) > 6:
            raise ValueError(f"days must be weekday numbers 0-6, got {r['days']!r}")
    rowcheck.number(r["start_min"], "start_min", 0, 1439, whole=True)
    rowcheck.number(r["end_min"], "end_min", 0, 1439, whole=True)
    rowcheck.choice(r["action"], "action", ACTIONS)
    rowcheck.number(r.get("created", 0), "created")


def pause_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    rowcheck.choice(r["kind"], "kind", ("pause", "resume"))
    rowcheck.number(r["since"], "since")
    rowcheck.number(r["until"], "until")


MANIFEST = Manifest(
    component="schedules",
    tables=(
        Settings("schedules", (8,), ("target", "days", "start_min", "end_min", "action", "created"), schedule_row,
                 left_out={"id": "row ids are given anew"}),
        Settings("pauses", (8,), ("mac", "kind", "since", "until"), pause_row),
    ),
    routes=("schedules",),
    publishes=(events.Schedule, events.ScheduleStrict),
    hears=(events.Lease, events.Device, events.Ipv6Plan, events.Timezone),
    carries={"schedules": "schedules (its own; its owner's follow the owner)"},
    stays={"pauses": "a pause is for the moment, not a setting of the device"},
)
