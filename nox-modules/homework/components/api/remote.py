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

from .devices import KNOWN_MAC, NOT_SEEN
from .http import ApiError
from .model import Model, field
from .routes import Access, RouteGroup, get, needs, post
from .views import Away

REMOTE = needs("remote-add", "remote access is", "remote")


class RemoteDevice(Away):
    """A device away from home: its key, its address at home and where it connects from."""
    mac: str
    name: str
    public_key: str
    created: float
    state: str = field(doc="its decision, or 'forgotten'")
    file_name: str = field(doc="the configuration file's name")
    address: str
    ipv6_prefix: str


class RemoteStatus(Model):
    """The router's side of remote access, and every device away from home."""
    backend: str = field(doc="kernel (WireGuard in the kernel) or wireguard-go")
    listen_port: int
    endpoint: str = field(doc="the address devices connect to")
    running: bool
    error: str
    away_namespace_pid: int | None
    interface: str
    devices: list[RemoteDevice]


class RemoteBody(Model):
    usage = '{"name": "Dad\'s phone", "owner"?: "Dad"}'
    name: str | None = field(optional=True, doc="the device's name, up to 64 characters", example="Dad's phone")
    owner: str | None = field(optional=True)


class RemoteConfig(RemoteDevice):
    """A new device away from home with its configuration (it holds the private key)."""
    config: str = field(doc="the WireGuard configuration file's text")
    qr_svg: str | None = field(doc="the same as a QR code (SVG); null without qrencode")


class RemoteRoutes(RouteGroup):
    tag = "remote"

    @get("/remote", Access.ADMIN, "Remote access: the router's side and every device away from home (admin)",
         name="remote", answer=RemoteStatus, needs=REMOTE)
    def show(self, call):
        return {**self.api.command("remote-status"), "devices": self.api.command("remote-list")}

    @post("/remote", Access.ADMIN, "A new device away from home: its keys, and its configuration (admin)",
          name="addRemote", body=RemoteBody, answer=RemoteConfig, needs=REMOTE)
    def add(self, call, body):
        return self.api.command("remote-add", name=body.name, owner=body.owner)

    @get("/remote/{mac}/config", Access.ADMIN, "A device's WireGuard configuration as a file (admin)",
         name="remoteConfig", answer=str, content_type="text/plain", needs=REMOTE, params={"mac": KNOWN_MAC},
         errors={404: NOT_SEEN})
    def config_file(self, call, mac):
        view = self.api.command("remote-config", mac=mac)
        resp = Response(body=view["config"].encode(), content_type="text/plain", charset="utf-8")
        resp.headers["Content-Disposition"] = f'attachment; filename="{view["file_name"]}"'
        return resp

    @get("/remote/{mac}/qr.svg", Access.ADMIN, "A device's WireGuard configuration as a QR code (admin)",
         name="remoteQr", answer=str, content_type="image/svg+xml", needs=REMOTE, params={"mac": KNOWN_MAC},
         slash=False, errors={404: NOT_SEEN, 503: "no QR code: qrencode is not installed on the router"})
    def qr(self, call, mac):
        view = self.api.command("remote-config", mac=mac)
        if not view["qr_svg"]:
            raise ApiError(503, "no QR code: qrencode is not installed on the router")
        return Response(body=view["qr_svg"].encode(), content_type="image/svg+xml", charset=None)
