"""Schedules ("bedtime") and pauses in the ws.v1 API (components/schedules):

    GET  /ws.v1/schedules?mac=               every schedule, or those of one device (its own and its owner's)
    POST /ws.v1/schedules                    {"mac"|"owner", "days", "from", "to", "action"} -> the schedule
    POST /ws.v1/schedules/{id}/remove
    POST /ws.v1/pause/{mac}                  {"minutes": 60} (default 60) -> the device's pause facts
    POST /ws.v1/resume/{mac}

Overlapping windows of the same target and action, bad days or times: 400 with the
reason, nothing stored. A device may not pause or resume itself, nor add schedules for
itself (it would be changing its own access).
"""
from __future__ import annotations

from typing import Literal

from ...values import BadValue, row_id
from .http import ApiError
from .model import Model, field
from .routes import Access, Param, RouteGroup, get, needs, post
from .devices import KNOWN_MAC, NOT_SEEN

SCHEDULES = needs("schedules", "schedules are", "schedules")
SCHEDULE_ID = Param(str, "a schedule's id", example="1")
Action = Literal["pause", "dns-strict"]


class ScheduleQuery(Model):
    extra = "ignore"
    mac: str = field("", doc="only this device's schedules (its own and its owner's)")


class Schedule(Model):
    """A weekly window in which a device (or every device of an owner) has no internet
    (pause) or only its allowed websites (dns-strict)."""
    id: int
    mac: str = field(optional=True, doc="the device (or owner)")
    owner: str = field(optional=True, doc="every device whose owner is this")
    action: Action
    days: str = field(doc="mon..sun, a range (mon-fri, fri-mon), a list (sat,sun), daily, weekdays or weekends")
    from_: str = field(key="from", doc="local time HH:MM")
    to: str = field(doc="local time HH:MM; not after from: the next day")
    window: str = field(doc="the window in words, e.g. 'sun-thu 21:30-07:00'")


class ScheduleBody(Model):
    mac: str | None = field(optional=True, doc="the device (give mac or owner)")
    owner: str | None = field(optional=True, doc="every device whose owner is this")
    days: str | None = field(optional=True, doc="mon..sun, a range (mon-fri, fri-mon), a list (sat,sun), daily, "
                                                "weekdays or weekends", example="sun-thu")
    from_: str | None = field(optional=True, key="from", doc="local time HH:MM ([router] timezone)",
                              example="21:30")
    to: str | None = field(optional=True, doc="local time HH:MM; not after from: the next day", example="07:00")
    action: str | None = field(optional=True, doc="pause (default) or dns-strict")


class ScheduleRemoved(Model):
    removed: int


class PauseBody(Model):
    minutes: int = field(60, minimum=1, maximum=10080, enforce=False, doc="minutes from now")


class PauseFacts(Model):
    """The device's pause facts after the change."""
    mac: str
    paused: bool
    paused_by: Literal["", "pause", "schedule"]
    paused_until: float = field(doc="epoch seconds the cut ends; 0 = not cut")
    in_schedule: Literal["", "pause", "dns-strict"]


class ScheduleRoutes(RouteGroup):
    tag = "schedules"

    @get("/schedules", Access.READ, "Schedules (bedtime windows): every one, or a device's own and its owner's",
         name="listSchedules", query=ScheduleQuery, answer=list[Schedule], needs=SCHEDULES, board="schedules")
    def schedules(self, call, query):
        return self.api.command("schedules", mac=self.api.mac(query.mac) if query.mac else None)

    @post("/schedules", Access.ADMIN, "Add a schedule for a device or an owner's devices (admin); overlapping "
          "one of the same target and action: 400", name="addSchedule", body=ScheduleBody, answer=Schedule,
          needs=SCHEDULES, own_access="body.mac", errors={404: NOT_SEEN})
    def add(self, call, body):
        mac = self.api.known_mac(body.mac) if body.mac else body.mac
        return self.api.command("schedule-add", mac=mac, owner=body.owner, days=body.days, start=body.from_,
                                end=body.to, action=body.action or "pause")

    @post("/schedules/{id}/remove", Access.ADMIN, "Remove a schedule (admin)", name="removeSchedule",
          answer=ScheduleRemoved, needs=SCHEDULES, params={"id": SCHEDULE_ID}, errors={404: "no such schedule"})
    def remove(self, call, id):  # noqa: A002 - the path's name
        try:
            number = row_id(id, "schedule")
        except BadValue as exc:
            raise ApiError(400, str(exc)) from None
        return self.api.command("schedule-remove", id=number)

    @post("/pause/{mac}", Access.ADMIN, "Pause a device's internet for some minutes (admin; default 60, the "
          "board's one tap)", name="pauseDevice", body=PauseBody, answer=PauseFacts, own_access="mac",
          needs=SCHEDULES, params={"mac": KNOWN_MAC}, errors={404: NOT_SEEN}, board="pause")
    def pause(self, call, mac, body):
        return self.api.command("pause", mac=mac, minutes=body.minutes)

    @post("/resume/{mac}", Access.ADMIN, "Resume a paused device now (admin); inside a pause window it stays open "
          "until the window ends", name="resumeDevice", answer=PauseFacts, own_access="mac", needs=SCHEDULES,
          params={"mac": KNOWN_MAC}, errors={404: NOT_SEEN}, board="resume")
    def resume(self, call, mac):
        return self.api.command("resume", mac=mac)
