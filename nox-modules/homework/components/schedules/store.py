"""Schedules and one-shot pauses in state.db (tables `schedules` and `pauses`, migration 8),
mirrored in memory. Writes go straight to disk (not write-behind): a pause set just
before a restart must still hold after it."""
from __future__ import annotations

from dataclasses import dataclass

from .windows import Window, days_text, hhmm

OWNER = "owner:"
ACTIONS = ("pause", "dns-strict")


@dataclass(frozen=True)
class Schedule:
    id: int
    target: str          # a device's MAC, or "owner:NAME"
    window: Window
    action: str          # pause | dns-strict

    def as_dict(self) -> dict:
        out = {"id": self.id, "action": self.action, "days": days_text(self.window.days),
               "from": hhmm(self.window.start), "to": hhmm(self.window.end), "window": self.window.text()}
        if self.target.startswith(OWNER):
            out["owner"] = self.target[len(OWNER):]
        else:
            out["mac"] = self.target
        return out


@dataclass(frozen=True)
class Pause:
    """A one-shot override of one device: `pause` cuts it, `resume` keeps it open
    through its schedules' windows; either only while since <= now < until."""
    mac: str
    kind: str            # pause | resume
    since: float
    until: float

    def holds(self, now: float) -> bool:
        return self.since <= now < self.until


class ScheduleStore:
    def __init__(self, state):
        self.state = state
        self.schedules: dict[int, Schedule] = {}
        self.pauses: dict[str, Pause] = {}
        for r in state.execute("SELECT id, target, days, start_min, end_min, action FROM schedules"):
            days = tuple(int(d) for d in r["days"].split(",") if d)
            window = Window(days, r["start_min"], r["end_min"])
            self.schedules[r["id"]] = Schedule(r["id"], r["target"], window, r["action"])
        for r in state.execute("SELECT mac, kind, since, until FROM pauses"):
            self.pauses[r["mac"]] = Pause(r["mac"], r["kind"], r["since"], r["until"])

    def add(self, target: str, window: Window, action: str, now: float) -> Schedule:
        rows = self.state.execute(
            "INSERT INTO schedules (target, days, start_min, end_min, action, created) VALUES (?,?,?,?,?,?) "
            "RETURNING id",
            (target, ",".join(str(d) for d in window.days), window.start, window.end, action, now))
        schedule = Schedule(rows[0]["id"], target, window, action)
        self.schedules[schedule.id] = schedule
        return schedule

    def remove(self, schedule_id: int) -> Schedule | None:
        schedule = self.schedules.pop(schedule_id, None)
        if schedule is not None:
            self.state.execute("DELETE FROM schedules WHERE id=?", (schedule_id,))
        return schedule

    def set_pause(self, pause: Pause) -> None:
        self.state.execute("INSERT INTO pauses (mac, kind, since, until) VALUES (?,?,?,?) ON CONFLICT (mac) "
                           "DO UPDATE SET kind=excluded.kind, since=excluded.since, until=excluded.until",
                           (pause.mac, pause.kind, pause.since, pause.until))
        self.pauses[pause.mac] = pause

    def clear_pause(self, mac: str) -> None:
        if self.pauses.pop(mac, None) is not None:
            self.state.execute("DELETE FROM pauses WHERE mac=?", (mac,))
