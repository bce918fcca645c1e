"""Priorities and shaping in the ws.v1 API (components/qos):

    GET    /ws.v1/qos                 the link, the classes, every device's and app's priority
    POST   /ws.v1/qos/link            {"enabled", "down_kbit", "up_kbit", "high_share"} (any subset)
    POST   /ws.v1/qos/devices/{mac}   {"class": "high", "window"?: {"days", "start", "end"}}; "default" removes
    POST   /ws.v1/qos/apps            {"name", "class", "ports", "domains", "window"?}: create or replace by name
    DELETE /ws.v1/qos/apps/{name}
    GET    /ws.v1/qos/stats           the last second's per class and per device counters
    GET    /ws.v1/qos/edge            the priorities at the ISP's edge ([isp] edge): placed, honoured, drops
    POST   /ws.v1/qos/agents/{mac}    add a computer's agent: its secret, shown once; DELETE removes it
    GET    /ws.v1/qos/devices/{mac}/apps   the applications that computer's agent reported, their priorities
    POST   /ws.v1/qos/devices/{mac}/apps   {"name", "class"}: an application's priority on that computer
    POST   /ws.v1/agent/report        a computer's agent: {"flows": [{proto, src, sport, dst, dport, app}]},
                                      its secret in X-Homework-Agent, from that computer's own address

Every POST answers with the GET body. Bad input (an unknown class, a rate of 0 or over
10,000,000 kbit/s, a malformed port) is a 400 naming the problem; nothing is stored.
"""
from __future__ import annotations

import hmac
from urllib.parse import unquote

LINK_FIELDS = {"enabled", "down_kbit", "up_kbit", "high_share"}
DEVICE_FIELDS = {"class", "window"}
APP_FIELDS = {"name", "class", "ports", "domains", "window"}


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module

    def need() -> None:
        if "qos" not in app.ctx.commands.names():
            raise ApiError(503, "priorities are not available: the qos component is not loaded "
                                "(set [qos] enabled = true or add \"qos\" to [controller] components)")

    def show(call):
        need()
        return json_response(app.command("qos"))

    def stats(call):
        need()
        return json_response(app.command("qos-stats"))

    def edge(call):
        need()
        return json_response(app.command("qos-edge"))

    def agent_add(call, mac):
        need()
        return json_response(app.command("qos-agent-add", mac=app.known_mac(mac)))

    def agent_remove(call, mac):
        need()
        if call.principal.kind == "session" and not hmac.compare_digest(
                call.req.headers.get("X-CSRF-Token", "").encode(), call.principal.csrf.encode()):
            raise ApiError(403, "missing or wrong X-CSRF-Token for this session")
        return json_response(app.command("qos-agent-remove", mac=app.known_mac(mac)))

    def host_apps(call, mac):
        need()
        return json_response(app.command("qos-host-apps", mac=app.known_mac(mac)))

    def host_app_set(call, mac):
        need()
        data = app.fields(call, {"name", "class"})
        for key in ("name", "class"):
            if key not in data:
                raise ApiError(400, f"{key} is required")
        return json_response(app.command("qos-host-app", mac=app.known_mac(mac), name=data["name"], cls=data["class"]))

    def agent_report(call):
        need()
        data = app.fields(call, {"flows"})
        return json_response(app.command("qos-agent-report", token=call.req.headers.get("X-Homework-Agent", ""),
                                         caller_mac=call.caller.mac, flows=data.get("flows")))

    def link(call):
        need()
        data = app.fields(call, LINK_FIELDS)
        if not data:
            raise ApiError(400, f"give at least one of {', '.join(sorted(LINK_FIELDS))}")
        for key, value in data.items():
            if value is None:
                raise ApiError(400, f"{key} must not be null")
        return json_response(app.command("qos-link", **data))

    def device(call, mac):
        need()
        mac = app.known_mac(mac)
        data = app.fields(call, DEVICE_FIELDS)
        if "class" not in data:
            raise ApiError(400, "class is required (high, medium or default)")
        return json_response(app.command("qos-device", mac=mac, cls=data["class"], window=data.get("window")))

    def app_set(call):
        need()
        data = app.fields(call, APP_FIELDS)
        for key in ("name", "class"):
            if key not in data:
                raise ApiError(400, f"{key} is required")
        return json_response(app.command("qos-app", name=data["name"], cls=data["class"], ports=data.get("ports"),
                                         domains=data.get("domains"), window=data.get("window")))

    def app_delete(call, name):
        need()
        # app.py checks the CSRF token of POSTs only; this is the first DELETE route
        if call.principal.kind == "session" and not hmac.compare_digest(
                call.req.headers.get("X-CSRF-Token", "").encode(), call.principal.csrf.encode()):
            raise ApiError(403, "missing or wrong X-CSRF-Token for this session")
        return json_response(app.command("qos-app-delete", name=unquote(name)))

    app._add("GET", "/qos/?", show, "read")
    app._add("GET", "/qos/stats/?", stats, "read")
    app._add("GET", "/qos/edge/?", edge, "read")
    app._add("POST", r"/qos/agents/(?P<mac>[^/]+)/?", agent_add, "admin")
    app._add("DELETE", r"/qos/agents/(?P<mac>[^/]+)/?", agent_remove, "admin")
    app._add("GET", r"/qos/devices/(?P<mac>[^/]+)/apps/?", host_apps, "read")
    app._add("POST", r"/qos/devices/(?P<mac>[^/]+)/apps/?", host_app_set, "admin")
    # a computer's agent: no session or token, its own secret (hostapps.py), from its own address
    app._add("POST", "/agent/report/?", agent_report, "public", max_body=1024 * 1024)
    app._add("POST", "/qos/link/?", link, "admin")
    app._add("POST", r"/qos/devices/(?P<mac>[^/]+)/?", device, "admin")
    app._add("POST", "/qos/apps/?", app_set, "admin")
    app._add("DELETE", r"/qos/apps/(?P<name>[^/]+)/?", app_delete, "admin")
