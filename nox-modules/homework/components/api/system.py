"""The router's own settings in the ws.v1 API (homework/system.py, factory_reset.py):

    GET  /ws.v1/system           -> {version, uptime, timezone, timezone_source, schema, update_slot}
    POST /ws.v1/system/timezone  {"timezone": "Europe/London"}  -> {timezone, restarting, note}
    POST /ws.v1/password         {"old", "new"}                 -> {password_changed, sessions_ended}
    POST /ws.v1/factory-reset    {"confirm": "erase everything"} -> {restarting, note}

Changes are admin only. A wrong old password counts as a failed login (the same limit);
a password is never echoed. Any other factory-reset body: 400 naming the phrase.
"""
from __future__ import annotations


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module
    from .auth import check_new_password
    from ...factory_reset import CONFIRM

    def exactly(call, keys: set[str], usage: str) -> dict:
        data = app.body(call)
        if set(data) != keys:
            raise ApiError(400, f"send {usage}")
        return data

    def system(call):
        return json_response(app.command("system-info"))

    def timezone(call):
        data = exactly(call, {"timezone"}, '{"timezone": "Europe/London"} (an IANA time zone name)')
        return json_response(app.command("set-timezone", timezone=data["timezone"]))

    def password(call):
        data = exactly(call, {"old", "new"}, '{"old": "current password", "new": "new password"}')
        if not isinstance(data["old"], str) or not app.password_ok(call, data["old"]):
            raise ApiError(400, "the current password is wrong: nothing changed")
        try:
            new = check_new_password(data["new"])
        except ValueError as exc:
            raise ApiError(400, f"new {exc}") from None
        if new == data["old"]:
            raise ApiError(400, "the new password is the current one")
        return json_response(app.command("set-password", password=new))

    def factory_reset(call):
        data = app.body(call)
        if set(data) != {"confirm"} or data["confirm"] != CONFIRM:
            raise ApiError(400, f"send {{\"confirm\": \"{CONFIRM}\"}} to erase every device, rule and token")
        return json_response(app.command("factory-reset", confirm=CONFIRM))

    app._add("GET", "/system/?", system, "read")
    app._add("POST", "/system/timezone/?", timezone, "admin")
    app._add("POST", "/password/?", password, "admin")
    app._add("POST", "/factory-reset/?", factory_reset, "admin")
