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

from ...commands import CommandError
from ...qrsvg import qr_svg
from .auth import PANEL

log = logging.getLogger("homework.api.panels")

TABLET_SECONDS = 600.0
SCREEN_SECONDS = 120.0
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


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module

    pairing = app.panel_pairing

    def pair(call):
        data = app.fields(call, {"name"})
        issued = app.command("panel-pair", kind="tablet", name=data.get("name"))
        host = call.req.host or ""
        if not HOST.match(host):
            raise ApiError(400, "the board's address (Host) is not one a tablet can open")
        url = f"https://{host}/#panel-code={issued['code']}"
        return json_response({**issued, "url": url, "qr_svg": qr_svg(url)})

    def session(call):
        wait = app.limiter.retry_after(call.caller.key)
        if wait:
            raise ApiError(429, f"too many wrong pairing codes from this device; try again in {int(wait) + 1} s",
                           {"Retry-After": str(int(wait) + 1)})
        data = app.fields(call, {"code"})
        found = pairing.redeem(data.get("code"))
        if found is not None and found[0] == "screen" and call.client not in LOOPBACK:
            found = None            # the screen's code works on the router itself only
        if found is None:
            app.limiter.failed(call.caller.key)
            raise ApiError(401, "this pairing code has been used or has expired: show a new one on the Guest "
                                "Board (Settings, Panels: Pair a wall tablet)")
        kind, name = found
        app.limiter.succeeded(call.caller.key)
        if kind == "screen":
            app.auth.end_panels(kind="screen")       # the screen has one session: the newest
        mac = call.client_mac or ""
        log.info("panel paired: %s (%s) from %s", name, kind, call.caller.describe())
        return app.new_session(call, role=PANEL, kind=kind, label=name, mac=mac)

    def panels(call):
        return json_response(app.command("panels"))

    def revoke(call, panel_id):
        return json_response(app.command("panel-revoke", id=panel_id))

    def display(call):
        return json_response(app.command("panel-display"))

    def night(call):
        data = app.fields(call, {"from", "to", "brightness", "enabled"})
        return json_response(app.command("panel-night", **data))

    app._add("GET", "/panels/display/?", display, "read")
    app._add("POST", "/panels/night/?", night, "admin")
    app._add("POST", "/panels/pair/?", pair, "admin")
    app._add("POST", "/panels/session/?", session, "public")
    app._add("GET", "/panels/?", panels, "admin")
    app._add("POST", r"/panels/(?P<panel_id>[^/]+)/revoke/?", revoke, "admin")
