"""The router's own settings in the ws.v1 API (homework/system.py, factory_reset.py):

    GET  /ws.v1/system           -> {version, uptime, timezone, timezone_source, schema, update_slot}
    POST /ws.v1/system/timezone  {"timezone": "Europe/London"}  -> {timezone, restarting, note}
    POST /ws.v1/password         {"old", "new"}                 -> {password_changed, sessions_ended}
    POST /ws.v1/factory-reset    {"confirm": "erase everything"} -> {restarting, note}

Changes are admin only. A wrong old password counts as a failed login (the same limit);
a password is never echoed. Any other factory-reset body: 400 naming the phrase.
"""
from __future__ import annotations

from typing import Any, Literal

from ...factory_reset import CONFIRM
from .auth import check_new_password
from .http import ApiError
from .model import Model, field
from .routes import Access, RouteGroup, get, post


class WanLease(Model):
    """The router's internet address, from its DHCP client's lease file."""
    up: bool
    interface: str = field(optional=True)
    address: str = field(optional=True)
    gateway: str = field(optional=True)
    dns: list[str] = field(optional=True)
    lease_seconds: int | None = field(optional=True)
    up_since: int | None = field(optional=True, doc="epoch seconds")
    up_for: int | None = field(optional=True, doc="seconds")


class SystemInfo(Model):
    """The router: software version, uptime, time zone, state schema and update slot."""
    version: str
    uptime: int = field(doc="seconds since the controller started")
    timezone: str
    timezone_source: Literal["board", "config"] = field(doc="set on the board, or from the config file")
    timezone_config: str = field(doc="[router] timezone in the config file")
    schema: int = field(doc="the state database's schema version")
    update_slot: str = field(doc="the slot the router runs from; '' off the image")
    wan: WanLease | None = field(doc="the internet link; null off the image (no lease file)")
    hardware: dict[str, Any] | None = field(doc="ports, radios, unusable, problems (each {severity, subject, "
                                                "message}), kernel, regdomain, gathered_at: docs/hardware.md")


class TimezoneBody(Model):
    usage = '{"timezone": "Europe/London"} (an IANA time zone name)'
    timezone: str = field(example="Europe/London")


class Restarting(Model):
    timezone: str = field(optional=True)
    restarting: bool
    note: str


class ResetDone(Model):
    """The state is erased; the controller restarts in place."""
    restarting: bool
    note: str
    setup_code: str | None = field(doc="with it a device on the Wi-Fi sets the reset router up again")
    back_in: int | None = field(doc="seconds until the router answers again, its estimate from its last restart; "
                                    "null: not known")


class PasswordBody(Model):
    usage = '{"old": "current password", "new": "new password"}'
    old: str = field(secret=True)
    new: str = field(secret=True, doc="8 to 256 characters")


class PasswordChanged(Model):
    password_changed: bool
    sessions_ended: bool


class ResetBody(Model):
    usage = f'{{"confirm": "{CONFIRM}"}} to erase every device, rule and token'
    confirm: str = field(example=CONFIRM)


class SystemRoutes(RouteGroup):
    tag = "system"

    @get("/system", Access.READ, "The router: software version, uptime, time zone, state schema version and update "
         "slot", name="getSystem", answer=SystemInfo, board="system")
    def system(self, call):
        return self.api.command("system-info")

    @post("/system/timezone", Access.ADMIN, "Set the router's time zone (admin); kept in state.db over [router] "
          "timezone; the controller restarts in place to use it", name="setTimezone", body=TimezoneBody,
          body_required=True, answer=Restarting, errors={400: "not an IANA time zone name"})
    def timezone(self, call, body):
        return self.api.command("set-timezone", timezone=body.timezone)

    @post("/password", Access.ADMIN, "Change the admin password (admin): the current one is checked; every "
          "session ends", name="changePassword", body=PasswordBody, body_required=True, answer=PasswordChanged,
          errors={400: "the current password is wrong, or the new one is not 8 to 256 characters",
                  429: "too many wrong passwords from this device (or address); see Retry-After",
                  503: "too many password checks under way; see Retry-After"}, board="password")
    def password(self, call, body):
        api = self.api
        if not api.password_ok(call, body.old):
            raise ApiError(400, "the current password is wrong: nothing changed")
        try:
            new = check_new_password(body.new)
        except ValueError as exc:
            raise ApiError(400, f"new {exc}") from None
        if new == body.old:
            raise ApiError(400, "the new password is the current one")
        return api.command("set-password", password=new)

    @post("/factory-reset", Access.ADMIN, "Erase the controller's state (devices, rules, tokens, settings; not the "
          "admin password file) and restart it in place (admin)", name="factoryReset", body=ResetBody,
          body_required=True, answer=ResetDone, errors={400: f'the body is not {{"confirm": "{CONFIRM}"}}'})
    def factory_reset(self, call, body):
        if body.confirm != CONFIRM:
            raise ApiError(400, f"send {ResetBody.usage}")
        return self.api.command("factory-reset", confirm=CONFIRM)
