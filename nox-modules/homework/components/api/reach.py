"""Reaching in (components/reach) in the ws.v1 API:

    GET  /ws.v1/forwards?mac=               every port forward, or one device's, each with open/why_closed
    POST /ws.v1/forwards                    {"mac", "ports": "8080" | "27015-27030", "protocol"?: tcp|udp|both,
                                             "to_port"?, "description"?} -> the forward
    POST /ws.v1/forwards/{id}/remove
    GET  /ws.v1/open-ports?mac=             per device: its forwards, its UPnP/NAT-PMP/PCP mappings, may_open_ports
    POST /ws.v1/open-ports/{mac}            {"allowed": true|false}: the panel's "may open ports"
    GET  /ws.v1/upnp                        miniupnpd: running, a note when it cannot open ports, every mapping
    POST /ws.v1/upnp/close                  {"key"}: close one mapping

A device may not open its own ports from the API (a forward to itself, or its own tick):
that is changing its own access. Bad ports, protocols or descriptions are a 400 naming the
problem; a port another forward or the router already uses is a 409; nothing is stored.
"""
from __future__ import annotations

FORWARD_FIELDS = {"mac", "ports", "protocol", "to_port", "description"}


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module

    def need() -> None:
        if "forwards" not in app.ctx.commands.names():
            raise ApiError(503, "opening ports is not available: the reach component is not loaded "
                                "(add \"reach\" to [controller] components)")

    def forwards(call):
        need()
        target = call.req.GET.get("mac")
        return json_response(app.command("forwards", mac=app.known_mac(target) if target else None))

    def add(call):
        need()
        data = app.fields(call, FORWARD_FIELDS)
        if not data.get("mac"):
            raise ApiError(400, "mac is required: the device the port goes to")
        mac = app.known_mac(data["mac"])
        app.not_self(call, mac)
        return json_response(app.command("forward-add", mac=mac, ports=data.get("ports"),
                                         protocol=data.get("protocol"), to_port=data.get("to_port"),
                                         description=data.get("description")))

    def remove(call, forward_id):
        need()
        if not forward_id.isdigit():
            raise ApiError(400, f"forward id must be a number, got {forward_id!r}")
        return json_response(app.command("forward-remove", id=int(forward_id)))

    def open_ports(call):
        need()
        target = call.req.GET.get("mac")
        return json_response(app.command("open-ports", mac=app.known_mac(target) if target else None))

    def may_open(call, mac):
        need()
        mac = app.known_mac(mac)
        app.not_self(call, mac)
        data = app.fields(call, {"allowed"})
        if not isinstance(data.get("allowed"), bool):
            raise ApiError(400, "allowed must be true or false")
        return json_response(app.command("may-open-ports", mac=mac, allowed=data["allowed"]))

    def upnp(call):
        need()
        return json_response(app.command("upnp-status"))

    def close(call):
        need()
        data = app.fields(call, {"key"})
        if not isinstance(data.get("key"), str):
            raise ApiError(400, "key is required: the mapping's key as GET upnp lists it")
        return json_response(app.command("upnp-close", key=data["key"]))

    app._add("GET", "/forwards/?", forwards, "read")
    app._add("POST", "/forwards/?", add, "admin")
    app._add("POST", r"/forwards/(?P<forward_id>[^/]+)/remove/?", remove, "admin")
    app._add("GET", "/open-ports/?", open_ports, "read")
    app._add("POST", r"/open-ports/(?P<mac>[^/]+)/?", may_open, "admin")
    app._add("GET", "/upnp/?", upnp, "read")
    app._add("POST", "/upnp/close/?", close, "admin")
