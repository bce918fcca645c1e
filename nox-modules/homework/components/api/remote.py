"""Remote access over WireGuard (components/remote) in the ws.v1 API:

    GET  /ws.v1/remote                  the router's side (port, endpoint, backend, running) and every
                                        device away from home with where it connects from
    POST /ws.v1/remote                  {"name", "owner"?}: a new device away from home; answers with its
                                        configuration (text, file name, QR code as SVG). It is pending
                                        until let in, as any device.
    GET  /ws.v1/remote/{mac}/config     its configuration as a file (text/plain, attachment)
    GET  /ws.v1/remote/{mac}/qr.svg     the same as a QR code (image/svg+xml), for the WireGuard app

Forgetting the device (POST /ws.v1/forget/{mac}) removes it with its keys. The
configuration holds the device's private key: these routes need the admin role.
"""
from __future__ import annotations

from webob import Response

ADD_FIELDS = {"name", "owner"}


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module

    def need() -> None:
        if "remote-add" not in app.ctx.commands.names():
            raise ApiError(503, "remote access is not available: the remote component is not loaded "
                                "(add \"remote\" to [controller] components)")

    def show(call):
        need()
        return json_response({**app.command("remote-status"), "devices": app.command("remote-list")})

    def add(call):
        need()
        data = app.fields(call, ADD_FIELDS)
        return json_response(app.command("remote-add", name=data.get("name"), owner=data.get("owner")))

    def config_file(call, mac):
        need()
        view = app.command("remote-config", mac=app.known_mac(mac))
        resp = Response(body=view["config"].encode(), content_type="text/plain", charset="utf-8")
        resp.headers["Content-Disposition"] = f'attachment; filename="{view["file_name"]}"'
        return resp

    def qr(call, mac):
        need()
        view = app.command("remote-config", mac=app.known_mac(mac))
        if not view["qr_svg"]:
            raise ApiError(503, "no QR code: qrencode is not installed on the router")
        return Response(body=view["qr_svg"].encode(), content_type="image/svg+xml", charset=None)

    app._add("GET", "/remote/?", show, "admin")
    app._add("POST", "/remote/?", add, "admin")
    app._add("GET", r"/remote/(?P<mac>[^/]+)/config/?", config_file, "admin")
    app._add("GET", r"/remote/(?P<mac>[^/]+)/qr\.svg", qr, "admin")
