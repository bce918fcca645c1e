"""Panels: the Guest Board on the router's own screen and on wall tablets, signed in with
the panel role (they see the board and let devices in or out, and change nothing else),
so nobody types the admin password on a screen the whole household shares.

    POST /ws.v1/panels/pair               (admin)  {"name"?} -> {code, url, qr_svg, expires_in}
    POST /ws.v1/panels/session            (public) {"code"}  -> a panel session (cookie, csrf)
    GET  /ws.v1/panels                    (admin)  -> [{id, kind, name, mac, device, created, last_used}]
    POST /ws.v1/panels/{id}/revoke        (admin)  -> {revoked}
    GET  /ws.v1/panels/display            (read)   -> {dim, brightness, enabled, from, to, ...} (paneldisplay.py)
    POST /ws.v1/panels/night              (admin)  {"from": "22:00", "to": "07:00", "brightness": 30}
                                                   or {"enabled": false} -> the same

A pairing code is used once, within TABLET_SECONDS, by a device that is let in (the
board over HTTPS is out of a pending device's reach); the board shows it as a QR code of
https://<the board's address>/#panel-code=<code>. The router's screen gets its code from
`homework panel pair --screen` (image/guest/homework-kiosk, as root, at each start of the kiosk),
redeemable only from the router itself (loopback), within SCREEN_SECONDS; a new screen
session ends the screen's old one. Codes are 256-bit random strings kept as hashes, in
memory: a controller restart voids them (the kiosk asks again). Wrong codes count as
failed logins (the login limiter, per device).
"""
from __future__ import annotations

import hashlib
import logging
import re
import secrets
import threading
from typing import Literal

from ...commands import CommandError
from ...qrsvg import qr_svg
from .auth import PANEL
from .http import ApiError
from .model import Model, field
from .routes import Access, Param, RouteGroup, get, post
from .sessions import LoginAnswer

log = logging.getLogger("homework.api.panels")

TABLET_SECONDS = 600.0
# The screen's code is used by the router itself only (loopback), by a kiosk that may take
# minutes to start its browser on a slow box: as long as a tablet's.
SCREEN_SECONDS = 600.0
MAX_CODES = 16
MAX_NAME = 40
KINDS = ("screen", "tablet")
HOST = re.compile(r"^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$")
LOOPBACK = ("127.0.0.1", "::1")


def _key(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def check_name(name, kind: str) -> str:
    if name is None or name == "":
        return "The router's screen" if kind == "screen" else "Wall tablet"
    if not isinstance(name, str) or len(name.strip()) > MAX_NAME or any(ord(c) < 0x20 for c in name):
        raise CommandError(f"a panel's name is at most {MAX_NAME} printable characters", 400)
    return name.strip() or ("The router's screen" if kind == "screen" else "Wall tablet")


class Pairing:
    """One-time pairing codes, by their hashes, each with its kind, name and deadline."""

    def __init__(self, clock):
        self.now = clock
        self._codes: dict[str, tuple[str, str, float]] = {}
        self._lock = threading.Lock()

    def issue(self, kind: str, name=None) -> dict:
        if kind not in KINDS:
            raise CommandError(f"a panel is one of {', '.join(KINDS)}, not {kind!r}", 400)
        name = check_name(name, kind)
        code = secrets.token_urlsafe(32)
        seconds = SCREEN_SECONDS if kind == "screen" else TABLET_SECONDS
        with self._lock:
            now = self.now()
            for k in [k for k, (_, _, exp) in self._codes.items() if exp < now]:
                del self._codes[k]
            while len(self._codes) >= MAX_CODES:
                self._codes.pop(next(iter(self._codes)))
            self._codes[_key(code)] = (kind, name, now + seconds)
        return {"code": code, "kind": kind, "name": name, "expires_in": int(seconds)}

    def redeem(self, code) -> tuple[str, str] | None:
        """(kind, name) for a valid code, used up now; None otherwise."""
        if not isinstance(code, str) or not 16 <= len(code) <= 128:
            return None
        with self._lock:
            found = self._codes.get(_key(code))
            if found is None or found[2] < self.now():
                return None
            del self._codes[_key(code)]
        return found[0], found[1]


def register_commands(ctx, auth, pairing: Pairing, label) -> None:
    """The CLI's and the API's panel commands (the kiosk's `homework panel pair --screen`);
    `label(mac, name, hostname)` is the board's label of a device (board.py)."""
    def pair(kind="tablet", name=None):
        return pairing.issue(kind, name)

    def panels():
        out = []
        for p in auth.panels():
            device = ctx.state.get_device(p["mac"]) if p["mac"] else None
            shown = label(device.mac, device.name, device.hostname)["label"] if device else ""
            out.append({**p, "device": shown})
        return out

    def revoke(id=""):
        if not auth.end_panels(panel_id=str(id)):
            raise CommandError(f"no panel with id {id!r}", 404)
        log.info("panel %s unpaired", id)
        return {"revoked": str(id)}

    ctx.commands.register("panel-pair", pair)
    ctx.commands.register("panels", panels)
    ctx.commands.register("panel-revoke", revoke)


class PanelPairBody(Model):
    usage = '{"name": "Kitchen tablet"} (optional)'
    name: str | None = field(optional=True, doc=f"the panel's name, at most {MAX_NAME} characters", enforce=False,
                             max_length=MAX_NAME)


class PanelCode(Model):
    """A one-time pairing code and the address a tablet opens with it (as a QR code)."""
    code: str
    kind: Literal["screen", "tablet"]
    name: str
    expires_in: int = field(doc="seconds the code may be used")
    url: str = field(doc="https://<the board's address>/#panel-code=<code>")
    qr_svg: str = field(doc="the url as a QR code (SVG)")


class CodeBody(Model):
    usage = '{"code": "..."}'
    code: str = field(secret=True, doc="the pairing code")


class Panel(Model):
    """A paired panel: the router's screen or a wall tablet."""
    id: str = field(doc="16 hex digits")
    kind: Literal["screen", "tablet"]
    name: str
    mac: str = field(doc="the device it paired from; '' for the router's screen")
    device: str = field(doc="that device's label")
    created: float
    last_used: float
    expires: float


class Revoked(Model):
    revoked: str


class PanelDisplay(Model):
    """Whether panels' screens are dimmed now, and the night window."""
    extra = "allow"
    dim: bool
    brightness: int = field(doc="percent now")
    enabled: bool = field(doc="dim at night")
    from_: str = field(key="from", doc="HH:MM")
    to: str = field(doc="HH:MM")
    night_brightness: int
    backlight: bool = field(doc="the router has a screen whose backlight it sets")


class NightBody(Model):
    usage = '{"from": "22:00", "to": "07:00", "brightness": 30} or {"enabled": false}'
    enabled: bool = field(True)
    from_: str | None = field(optional=True, key="from", example="22:00")
    to: str | None = field(optional=True, example="07:00")
    brightness: int | str | None = field(optional=True, doc="5-100 percent", example=30)


PANEL_ID = Param(str, "a panel's id (16 hex digits)", example="0123456789abcdef")


class PanelRoutes(RouteGroup):
    tag = "panels"
    description = "The Guest Board on the router's own screen and on wall tablets (the panel role)"

    def __init__(self, api):
        super().__init__(api)
        self.pairing = Pairing(api.ctx.now)       # the codes issued, in memory

    @post("/panels/pair", Access.ADMIN, "A one-time code that makes a wall tablet a panel: its address and QR "
          "code", name="pairPanel", body=PanelPairBody, answer=PanelCode,
          errors={400: "a name too long, or a Host a tablet cannot open"})
    def pair(self, call, body):
        issued = self.api.command("panel-pair", kind="tablet", name=body.name)
        host = call.req.host or ""
        if not HOST.match(host):
            raise ApiError(400, "the board's address (Host) is not one a tablet can open")
        url = f"https://{host}/#panel-code={issued['code']}"
        return {**issued, "url": url, "qr_svg": qr_svg(url)}

    def refuse_locked_out(self, call) -> None:
        wait = self.api.limiter.retry_after(call.caller.key)
        if wait:
            raise ApiError(429, f"too many wrong pairing codes from this device; try again in {int(wait) + 1} s",
                           {"Retry-After": str(int(wait) + 1)})

    @post("/panels/session", Access.PUBLIC, "Open a panel's session with a pairing code (public; once; the "
          "screen's code from the router itself only)", name="panelSession", body=CodeBody, body_required=True,
          answer=LoginAnswer, before="refuse_locked_out",
          errors={401: "the code was used, has expired or is the screen's from elsewhere",
                  429: "too many wrong codes from this device"})
    def session(self, call, body):
        api = self.api
        found = self.pairing.redeem(body.code)
        if found is not None and found[0] == "screen" and call.client not in LOOPBACK:
            found = None            # the screen's code works on the router itself only
        if found is None:
            api.limiter.failed(call.caller.key)
            raise ApiError(401, "this pairing code has been used or has expired: show a new one on the Guest "
                                "Board (Settings, Panels: Pair a wall tablet)")
        kind, name = found
        api.limiter.succeeded(call.caller.key)
        if kind == "screen":
            api.auth.end_panels(kind="screen")       # the screen has one session: the newest
        mac = call.client_mac or ""
        log.info("panel paired: %s (%s) from %s", name, kind, call.caller.describe())
        return api.new_session(call, role=PANEL, kind=kind, label=name, mac=mac)

    @get("/panels", Access.ADMIN, "The paired panels (the same as `homework panels`)", name="panels",
         answer=list[Panel])
    def panels(self, call):
        return self.api.command("panels")

    @post("/panels/{panel_id}/revoke", Access.ADMIN, "Unpair a panel: its session ends", name="revokePanel",
          answer=Revoked, params={"panel_id": PANEL_ID}, errors={404: "no panel with that id"})
    def revoke(self, call, panel_id):
        return self.api.command("panel-revoke", id=panel_id)

    @get("/panels/display", Access.READ, "Whether panels' screens are dimmed now, and the night window",
         name="panelDisplay", answer=PanelDisplay)
    def display(self, call):
        return self.api.command("panel-display")

    @post("/panels/night", Access.ADMIN, "Dim panels' screens at night, or not", name="setPanelNight",
          body=NightBody, answer=PanelDisplay, errors={400: "a time that is not HH:MM, a brightness not 5-100"})
    def night(self, call, body):
        return self.api.command("panel-night", **body.given_items())
