"""The Wi-Fi network in the ws.v1 API (homework/wifi.py):

    GET  /ws.v1/wifi   -> {ssid, interfaces, passphrase_set, apply_command, last_apply}
    POST /ws.v1/wifi   {"ssid": "...", "passphrase": "..."}  (admin) -> the same + {applying, note}
                       (no "passphrase": rename only, the passphrase stays)

The passphrase is never returned, not even to the admin: whoever needs it sets a new one,
and a leaked session cannot read it. A bad SSID or passphrase is a 400 and changes nothing.
"""
from __future__ import annotations

from .model import Model, field
from .routes import Access, RouteGroup, get, post


class LastApply(Model):
    """How the last change reached the access point."""
    at: float
    ok: bool
    error: str


class WifiInfo(Model):
    """The Wi-Fi network's name and the interfaces it is served on (never the passphrase)."""
    ssid: str
    interfaces: list[str]
    passphrase_set: bool
    apply_command: bool = field(doc="whether a command restarts the access point after a change")
    last_apply: LastApply | None
    applying: bool = field(optional=True, doc="after a change: the access point restarts now")
    note: str = field(optional=True)


class WifiBody(Model):
    usage = ('{"ssid": "network name", "passphrase": "8-63 characters"} '
             '(without passphrase: keep the current one)')
    ssid: str = field(doc="1 to 32 bytes", example="Our home")
    passphrase: str = field(optional=True, secret=True, doc="8 to 63 characters; absent: keep the current one")


class WifiRoutes(RouteGroup):
    tag = "system"

    @get("/wifi", Access.READ, "The Wi-Fi network name and the interfaces it is served on; whether a passphrase "
         "is set (the passphrase itself is never returned)", name="getWifi", answer=WifiInfo, board="wifi")
    def info(self, call):
        return self.api.command("wifi-info")

    @post("/wifi", Access.ADMIN, "Set the Wi-Fi SSID and passphrase (admin); kept in the state dir's wifi.env, "
          "then [wifi] apply_command restarts the access point (stations re-associate)", name="setWifi",
          body=WifiBody, body_required=True, answer=WifiInfo, errors={400: "a bad SSID or passphrase"})
    def change(self, call, body):
        return self.api.command("set-wifi", ssid=body.ssid, passphrase=body.passphrase)
