"""What each device is (components/identify) in the ws.v1 API:

    GET  /ws.v1/identity/{mac}              the guess (type, os, os_version, model, label, confidence,
                                            level, why) or the household's correction, and the evidence
    POST /ws.v1/identity/{mac}              {"type"?, "os"?, "label"?}: the household says what it is
    POST /ws.v1/identity/{mac}/clear        back to the router's guess
    POST /ws.v1/identity/{mac}/join         {"as": MAC}: a pending device with a new private address that
                                            looks like that permitted device is let in as it (409 when it
                                            does not look like it)
    GET  /ws.v1/identity-catalog            how many fingerprint rules, and their sources
    GET  /ws.v1/identity/{mac}/story        the device's story: first seen, who let it in and when, ports and
                                            radios, top names today, usage today and this week, alerts, and
                                            a timeline of events; ?format=csv: the timeline as a CSV download

A correction changes what the board calls the device, never its access: a guess decides
nothing. Still, a device may not correct itself (it would be telling the board what to
call it). A bad type or an over-long label is a 400 naming it; nothing is stored.
"""
from __future__ import annotations

CORRECTION_FIELDS = {"type", "os", "label"}


def add_routes(app) -> None:
    from webob import Response

    from .app import ApiError, json_response     # here: app.py imports this module

    def need() -> None:
        if "identity" not in app.ctx.commands.names():
            raise ApiError(503, "device identification is not available: the identify component is not loaded "
                                "(add \"identify\" to [controller] components)")

    def identity(call, mac):
        need()
        return json_response(app.command("identity", mac=app.known_mac(mac)))

    def correct(call, mac):
        need()
        mac = app.known_mac(mac)
        app.not_self(call, mac)
        data = app.fields(call, CORRECTION_FIELDS)
        for key, value in data.items():
            if not isinstance(value, str):
                raise ApiError(400, f"{key} must be text")
        return json_response(app.command("identify-correct", mac=mac, **data))

    def clear(call, mac):
        need()
        mac = app.known_mac(mac)
        app.not_self(call, mac)
        return json_response(app.command("identify-clear", mac=mac))

    def join(call, mac):
        need()
        mac = app.known_mac(mac)
        app.not_self(call, mac)
        data = app.fields(call, {"as"})
        if not isinstance(data.get("as"), str):
            raise ApiError(400, "as is required: the MAC of the device it looks like")
        twin = app.known_mac(data["as"])
        app.not_self(call, twin)
        return json_response(app.command("identify-join", mac=mac, as_mac=twin))

    def device_story(call, mac):
        need()
        fmt = call.req.GET.get("format", "json")
        told = app.command("device-story", mac=app.known_mac(mac), format=fmt)
        if fmt != "csv":
            return json_response(told)
        resp = Response(told["csv"], content_type="text/csv", charset="utf-8")
        resp.headers["Content-Disposition"] = f'attachment; filename="{told["filename"]}"'
        return resp

    def catalog(call):
        need()
        return json_response(app.command("identify-catalog"))

    mac = r"(?P<mac>[^/]+)"
    app._add("GET", f"/identity/{mac}/?", identity, "read")
    app._add("POST", f"/identity/{mac}/?", correct, "admin")
    app._add("POST", f"/identity/{mac}/clear/?", clear, "admin")
    app._add("POST", f"/identity/{mac}/join/?", join, "admin")
    app._add("GET", "/identity-catalog/?", catalog, "read")
    app._add("GET", f"/identity/{mac}/story/?", device_story, "read")
