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

from ...values import BadValue, row_id

ADD_FIELDS = {"mac", "owner", "days", "from", "to", "action"}


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module
    mac = r"(?P<mac>[^/]+)"

    def need() -> None:
        if "schedules" not in app.ctx.commands.names():
            raise ApiError(503, "schedules are not available: the schedules component is not loaded "
                                "(add \"schedules\" to [controller] components)")

    def schedules(call):
        need()
        target = call.req.GET.get("mac")
        return json_response(app.command("schedules", mac=app.mac(target) if target else None))

    def add(call):
        need()
        data = app.fields(call, ADD_FIELDS)
        for key, value in data.items():
            if value is not None and not isinstance(value, str):
                raise ApiError(400, f"{key} must be a string")
        if data.get("mac"):
            data["mac"] = app.known_mac(data["mac"])
            app.not_self(call, data["mac"])
        app.not_own_owner(call, data.get("owner"))
        return json_response(app.command("schedule-add", mac=data.get("mac"), owner=data.get("owner"),
                                         days=data.get("days"), start=data.get("from"), end=data.get("to"),
                                         action=data.get("action") or "pause"))

    def remove(call, schedule_id):
        need()
        try:
            number = row_id(schedule_id, "schedule")
        except BadValue as exc:
            raise ApiError(400, str(exc)) from None
        return json_response(app.command("schedule-remove", id=number))

    def pause(call, mac):
        need()
        mac = app.known_mac(mac)
        app.not_self(call, mac)
        minutes = app.body(call).get("minutes", 60)
        if isinstance(minutes, bool) or not isinstance(minutes, int):
            raise ApiError(400, "minutes must be a whole number (1 to 10080)")
        return json_response(app.command("pause", mac=mac, minutes=minutes))

    def resume(call, mac):
        need()
        mac = app.known_mac(mac)
        app.not_self(call, mac)
        return json_response(app.command("resume", mac=mac))

    app._add("GET", "/schedules/?", schedules, "read")
    app._add("POST", "/schedules/?", add, "admin")
    app._add("POST", r"/schedules/(?P<schedule_id>[^/]+)/remove/?", remove, "admin")
    app._add("POST", f"/pause/{mac}/?", pause, "admin")
    app._add("POST", f"/resume/{mac}/?", resume, "admin")
