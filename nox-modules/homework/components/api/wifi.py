"""The Wi-Fi network in the ws.v1 API (homework/wifi.py):

    GET  /ws.v1/wifi   -> {ssid, interfaces, passphrase_set, apply_command, last_apply}
    POST /ws.v1/wifi   {"ssid": "...", "passphrase": "..."}  (admin) -> the same + {applying, note}
                       (no "passphrase": rename only, the passphrase stays)

The passphrase is never returned, not even to the admin: whoever needs it sets a new one,
and a leaked session cannot read it. A bad SSID or passphrase is a 400 and changes nothing.
"""
from __future__ import annotations


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module

    def info(call):
        return json_response(app.command("wifi-info"))

    def change(call):
        data = app.body(call)
        if set(data) not in ({"ssid"}, {"ssid", "passphrase"}):
            raise ApiError(400, 'send {"ssid": "network name", "passphrase": "8-63 characters"} '
                                '(without passphrase: keep the current one)')
        return json_response(app.command("set-wifi", ssid=data["ssid"], passphrase=data.get("passphrase")))

    app._add("GET", "/wifi/?", info, "read")
    app._add("POST", "/wifi/?", change, "admin")
