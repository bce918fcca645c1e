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

Every change answers with the GET body. Bad input (an unknown class, a rate of 0 or over
10,000,000 kbit/s, a malformed port) is a 400 naming the problem; nothing is stored.
"""
from __future__ import annotations

from typing import Any, Literal
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
    agents: list[str] = field(optional=True, doc="the computers (MACs) whose agents say which application owns "
                                                 "each connection")


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


class EdgeStatus(Model):
    """The household's priorities at the ISP's edge ([isp] edge): whether an edge is configured and answers,
    connections wanted and placed there, how many carried traffic (honoured), refusals, the edge queues."""
    configured: bool
    edge: str = field(doc="the edge's URL ('' when none is configured)")
    error: str = field(doc="why the edge cannot be used; '' when it can")
    reachable: bool | None = field(optional=True, doc="null: not asked yet")
    epoch: str = field(optional=True)
    wanted: int = field(optional=True, doc="prioritised connections now")
    placed: int = field(optional=True, doc="connections placed at the edge")
    honoured: int = field(optional=True, doc="placed connections that carried traffic")
    refused: list[str] = field(optional=True)
    budget: int = field(optional=True, doc="how many connections the edge lets this home place")
    queues: dict[str, Any] = field(optional=True, doc="the edge queues' packets and drops, by class")
    placed_at: dict[str, str] = field(optional=True, doc="'proto src:port dst:port' -> the queue it is in")
    at: float = field(optional=True, doc="epoch seconds of the last round")


class AgentSecret(Model):
    """A computer's agent: its secret, shown only now."""
    mac: str
    token: str = field(doc="the agent's secret, for /etc/homework-agent.conf on that computer")
    note: str


class HostApp(Model):
    name: str
    class_: Class = field(key="class")
    last_seen: float | None = field(doc="epoch seconds the agent last reported it; null: never")
    connections: int = field(doc="its connections in the agent's last report")


class HostApps(Model):
    """The applications a computer's agent reported, and their priorities on it."""
    mac: str
    agent: bool = field(doc="the computer has an agent")
    reported_at: float | None = field(doc="epoch seconds of its agent's last report; null: none yet")
    reporting: bool = field(doc="its agent reported recently")
    apps: list[HostApp]


class HostAppBody(Model):
    usage = '{"name": "an application", "class": "high" | "medium" | "default"}'
    name: str = field(example="zoom")
    class_: str = field(key="class", doc="high, medium or default (default removes it)")


class AgentFlow(Model):
    """One connection and the application that owns it."""
    proto: str = field(doc="tcp or udp")
    src: str = field(doc="the computer's own address")
    sport: int
    dst: str = field(doc="the peer's address, or * (with dport 0) for an unconnected UDP socket")
    dport: int
    app: str


class AgentReport(Model):
    usage = '{"flows": [{"proto", "src", "sport", "dst", "dport", "app"}]}'
    flows: list[AgentFlow]


class ReportTaken(Model):
    mac: str
    connections: int


class QosRoutes(RouteGroup):
    tag = "qos"

    @get("/qos", Access.READ, "Priorities and shaping: the link's rates, the classes, every device's and "
         "application's class (read)", name="getQos", answer=QosView, needs=QOS, board="qos")
    def show(self, call):
        return self.api.command("qos")

    @get("/qos/stats", Access.READ, "The last second's bytes, drops and rate per class and per device, both "
         "directions (read)", name="getQosStats", answer=QosStats, needs=QOS, board="qosStats")
    def stats(self, call):
        return self.api.command("qos-stats")

    @post("/qos/link", Access.ADMIN, "Set the line's rates (kbit/s) and shaping on or off; any subset (admin)",
          name="setQosLink", body=LinkBody, answer=QosView, needs=QOS,
          errors={400: "a rate of 0, negative, not a whole number or over 10,000,000"}, board="qosLink")
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
          errors={400: "unknown class (the message names the classes), bad window or MAC", 404: NOT_SEEN},
          board="qosDevice")
    def device(self, call, mac, body):
        window = body.window.given_items() if body.window is not None else None
        return self.api.command("qos-device", mac=mac, cls=body.class_, window=window)

    @post("/qos/apps", Access.ADMIN, "Create or replace (by name) an application: ports and/or domains, a class, a "
          "window (admin)", name="setQosApp", body=AppBody, answer=QosView, needs=QOS,
          errors={400: "unknown class, bad ports, domains, name or window"}, board="qosApp")
    def app_set(self, call, body):
        window = body.window.given_items() if body.window is not None else None
        return self.api.command("qos-app", name=body.name, cls=body.class_, ports=body.ports,
                                domains=body.domains, window=window)

    @delete("/qos/apps/{name}", Access.ADMIN, "Remove an application (admin)", name="deleteQosApp", answer=QosView,
            needs=QOS, params={"name": APP_NAME}, errors={404: "no application of that name"})
    def app_delete(self, call, name):
        return self.api.command("qos-app-delete", name=unquote(name))

    @get("/qos/edge", Access.READ, "The household's priorities at the ISP's edge: whether an edge is configured "
         "and answers, connections wanted and placed there, how many carried traffic (honoured), refusals, and the "
         "edge queues' packets and drops (read)", name="getQosEdge", answer=EdgeStatus, needs=QOS, board="qosEdge")
    def edge(self, call):
        return self.api.command("qos-edge")

    @post("/qos/agents/{mac}", Access.ADMIN, "Add the agent of a computer: its secret, shown only now (admin)",
          name="addQosAgent", answer=AgentSecret, needs=QOS, params={"mac": KNOWN_MAC}, own_access="mac",
          errors={404: NOT_SEEN})
    def agent_add(self, call, mac):
        return self.api.command("qos-agent-add", mac=mac)

    @delete("/qos/agents/{mac}", Access.ADMIN, "Remove a computer's agent (admin)", name="removeQosAgent",
            answer=HostApps, needs=QOS, params={"mac": KNOWN_MAC}, own_access="mac",
            errors={404: NOT_SEEN})
    def agent_remove(self, call, mac):
        return self.api.command("qos-agent-remove", mac=mac)

    @get("/qos/devices/{mac}/apps", Access.READ, "The applications a computer's agent reported and their "
         "priorities on it (read)", name="getQosHostApps", answer=HostApps, needs=QOS, params={"mac": KNOWN_MAC},
         errors={404: NOT_SEEN}, board="qosHostApps")
    def host_apps(self, call, mac):
        return self.api.command("qos-host-apps", mac=mac)

    @post("/qos/devices/{mac}/apps", Access.ADMIN, "An application's priority on that computer; default removes "
          "it (admin)", name="setQosHostApp", body=HostAppBody, body_required=True, answer=HostApps, needs=QOS,
          params={"mac": KNOWN_MAC}, own_access="mac", errors={400: "unknown class or a bad name", 404: NOT_SEEN})
    def host_app_set(self, call, mac, body):
        return self.api.command("qos-host-app", mac=mac, name=body.name, cls=body.class_)

    # a computer's agent: no session or token, its own secret (hostapps.py), from its own address
    @post("/agent/report", Access.PUBLIC, "A computer's agent reports which application owns each of its "
          "connections; its secret in X-Homework-Agent, sent from that computer's own address (public)",
          name="agentReport", body=AgentReport, body_required=True, answer=ReportTaken, needs=QOS,
          max_body=1024 * 1024, errors={400: "a connection that is not the computer's own, or malformed",
                                         403: "an unknown agent, or a report not from the agent's own computer"})
    def agent_report(self, call, body):
        return self.api.command("qos-agent-report", token=call.req.headers.get("X-Homework-Agent", ""),
                                caller_mac=call.caller.mac, flows=[f.given_items() for f in body.flows])
