"""Priorities and shaping in the ws.v1 API (components/qos):

    GET    /ws.v1/qos                 the link, the classes, every device's and app's priority
    POST   /ws.v1/qos/link            {"enabled", "down_kbit", "up_kbit", "high_share"} (any subset)
    POST   /ws.v1/qos/devices/{mac}   {"class": "high", "window"?: {"days", "start", "end"}}; "default" removes
    POST   /ws.v1/qos/apps            {"name", "class", "ports", "domains", "window"?}: create or replace by name
    DELETE /ws.v1/qos/apps/{name}
    GET    /ws.v1/qos/stats           the last second's per class and per device counters

Every change answers with the GET body. Bad input (an unknown class, a rate of 0 or over
10,000,000 kbit/s, a malformed port) is a 400 naming the problem; nothing is stored.
"""
from __future__ import annotations

from typing import Literal
from urllib.parse import unquote

from .http import ApiError
from .model import Model, field
from .routes import Access, Param, RouteGroup, delete, get, needs, post
from .devices import KNOWN_MAC, NOT_SEEN

QOS = needs("qos", "priorities are", "qos", 'set [qos] enabled = true or add "qos" to [controller] components')
APP_NAME = Param(str, "an application's name (URL-encoded)", example="video calls")
Class = Literal["high", "medium", "default"]


class WindowBody(Model):
    """Only in this weekly window (local time; end before start: the next morning)."""
    days: list[str] | str = field(doc="mon..sun, or a range such as mon-fri", example=["mon", "tue"])
    start: str = field(doc="HH:MM", example="09:00")
    end: str = field(doc="HH:MM", example="17:00")


class Window(Model):
    days: list[str]
    start: str
    end: str


class DeviceClass(Model):
    class_: Class = field(key="class")
    window: Window | None


class App(Model):
    """An application: its traffic (by ports and/or domains) goes in a class."""
    name: str
    class_: Class = field(key="class")
    ports: list[str] = field(doc="e.g. udp/3478-3481")
    domains: list[str]
    window: Window | None


class QosView(Model):
    """Priorities and shaping: the line, the classes, every device's and application's class."""
    enabled: bool
    down_kbit: int = field(doc="0 = unset")
    up_kbit: int = field(doc="0 = unset")
    high_share: int = field(doc="percent of the line the high class gets first")
    classes: list[str]
    devices: dict[str, DeviceClass] = field(doc="MAC -> its class")
    apps: list[App]
    active: bool = field(doc="shaping is in force now")
    leaf: str = field(doc="the queue discipline of each class")
    shape_percent: int
    down_percent: int
    wan_interface: str
    lan_interface: str


class LinkBody(Model):
    enabled: bool | None = field(optional=True)
    down_kbit: int | None = field(optional=True, minimum=64, maximum=10_000_000, enforce=False)
    up_kbit: int | None = field(optional=True, minimum=64, maximum=10_000_000, enforce=False)
    high_share: int | None = field(optional=True, minimum=5, maximum=90, enforce=False)


class DeviceBody(Model):
    class_: str = field(key="class", doc="high, medium or default (default removes the device's rule)")
    window: WindowBody | None = field(optional=True)


class AppBody(Model):
    name: str = field(example="video calls")
    class_: str = field(key="class", doc="high, medium or default")
    ports: list[str] | str | None = field(optional=True, example=["udp/3478-3481"])
    domains: list[str] | str | None = field(optional=True, example=["zoom.us"])
    window: WindowBody | None = field(optional=True)


class ClassStats(Model):
    direction: str
    class_: str = field(key="class")
    rate_bps: int
    bytes: int
    drops: int
    packets: int


class DeviceStats(ClassStats):
    mac: str


class AppStats(Model):
    name: str
    direction: str
    class_: str = field(key="class")
    rate_bps: int
    bytes: int
    packets: int


class QosStats(Model):
    """The last second's bytes, drops and rate per class, device and application."""
    at: float
    apps: list[AppStats] = field(optional=True)
    classes: list[ClassStats]
    devices: list[DeviceStats]


class QosRoutes(RouteGroup):
    tag = "qos"

    @get("/qos", Access.READ, "Priorities and shaping: the link's rates, the classes, every device's and "
         "application's class (read)", name="getQos", answer=QosView, needs=QOS)
    def show(self, call):
        return self.api.command("qos")

    @get("/qos/stats", Access.READ, "The last second's bytes, drops and rate per class and per device, both "
         "directions (read)", name="getQosStats", answer=QosStats, needs=QOS)
    def stats(self, call):
        return self.api.command("qos-stats")

    @post("/qos/link", Access.ADMIN, "Set the line's rates (kbit/s) and shaping on or off; any subset (admin)",
          name="setQosLink", body=LinkBody, answer=QosView, needs=QOS,
          errors={400: "a rate of 0, negative, not a whole number or over 10,000,000"})
    def link(self, call, body):
        data = body.given_items()
        if not data:
            raise ApiError(400, "give at least one of down_kbit, enabled, high_share, up_kbit")
        for key, value in data.items():
            if value is None:
                raise ApiError(400, f"{key} must not be null")
        return self.api.command("qos-link", **data)

    @post("/qos/devices/{mac}", Access.ADMIN, "Put a device's whole traffic in a class, optionally only in a weekly "
          "window; default removes its rule (admin)", name="setQosDevice", body=DeviceBody, answer=QosView,
          needs=QOS, params={"mac": KNOWN_MAC}, own_access="mac",
          errors={400: "unknown class (the message names the classes), bad window or MAC", 404: NOT_SEEN})
    def device(self, call, mac, body):
        window = body.window.given_items() if body.window is not None else None
        return self.api.command("qos-device", mac=mac, cls=body.class_, window=window)

    @post("/qos/apps", Access.ADMIN, "Create or replace (by name) an application: ports and/or domains, a class, a "
          "window (admin)", name="setQosApp", body=AppBody, answer=QosView, needs=QOS,
          errors={400: "unknown class, bad ports, domains, name or window"})
    def app_set(self, call, body):
        window = body.window.given_items() if body.window is not None else None
        return self.api.command("qos-app", name=body.name, cls=body.class_, ports=body.ports,
                                domains=body.domains, window=window)

    @delete("/qos/apps/{name}", Access.ADMIN, "Remove an application (admin)", name="deleteQosApp", answer=QosView,
            needs=QOS, params={"name": APP_NAME}, errors={404: "no application of that name"})
    def app_delete(self, call, name):
        return self.api.command("qos-app-delete", name=unquote(name))
