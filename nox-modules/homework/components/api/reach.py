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

from ...values import BadValue, row_id
from .devices import KNOWN_MAC, NOT_SEEN
from .http import ApiError
from .model import Model, field
from .routes import Access, Param, RouteGroup, get, needs, post
from .views import Forward, Mapping, OpenMapping, OpenPorts

REACH = needs("forwards", "opening ports is", "reach")
FORWARD_ID = Param(str, "a port forward's id", example="1")


class MacQuery(Model):
    extra = "ignore"
    mac: str = field("", doc="only this device's")


class ForwardBody(Model):
    usage = '{"mac", "ports": "8080" or "27015-27030", "protocol"?: "tcp" | "udp" | "both", "to_port"?, "description"?}'
    mac: str = field(doc="the device the port goes to")
    ports: str | int | None = field(optional=True, doc="an external port or range, e.g. 8080 or 27015-27030")
    protocol: str | None = field(optional=True, doc="tcp (default), udp or both")
    to_port: int | str | None = field(optional=True, doc="the device's port (default: the same)")
    description: str | None = field(optional=True, doc="what for, up to 64 characters")


class ForwardRemoved(Model):
    removed: int


class DevicePorts(OpenPorts):
    """A device's forwards and the ports it opened itself."""
    mac: str
    device: str = field(doc="its name as the board shows it")
    may_open_ports: bool


class MayOpenBody(Model):
    usage = '{"allowed": true | false}'
    allowed: bool


class MayOpen(Model):
    """The device's ports after the change (its facts)."""
    may_open_ports: bool
    open_ports: OpenPorts


class UpnpStatus(Model):
    """miniupnpd: whether it runs, why it cannot open ports if so, and every mapping."""
    enabled: bool
    running: bool
    note: str
    wan_addresses: list[str]
    address: str
    http_port: int
    mappings: list[Mapping]


class CloseBody(Model):
    usage = '{"key": "the mapping\'s key as GET upnp lists it"}'
    key: str


class Closed(Model):
    closed: list[OpenMapping] = field(doc="the mappings closed")


class ReachRoutes(RouteGroup):
    tag = "reach"

    @get("/forwards", Access.READ, "Every port forward, or one device's, each open or why it is closed",
         name="listForwards", query=MacQuery, answer=list[Forward], needs=REACH, errors={404: NOT_SEEN},
         board="forwards")
    def forwards(self, call, query):
        return self.api.command("forwards", mac=self.api.known_mac(query.mac) if query.mac else None)

    @post("/forwards", Access.ADMIN, "Forward a port of the router's internet address to a device (admin)",
          name="addForward", body=ForwardBody, body_required=True, answer=Forward, needs=REACH,
          own_access="body.mac", errors={404: NOT_SEEN, 409: "a port another forward or the router uses"})
    def add(self, call, body):
        mac = self.api.known_mac(body.mac)
        return self.api.command("forward-add", mac=mac, ports=body.ports, protocol=body.protocol,
                                to_port=body.to_port, description=body.description)

    @post("/forwards/{forward_id}/remove", Access.ADMIN, "Remove a port forward (admin)", name="removeForward",
          answer=ForwardRemoved, needs=REACH, params={"forward_id": FORWARD_ID}, errors={404: "no such forward"})
    def remove(self, call, forward_id):
        try:
            number = row_id(forward_id, "forward")
        except BadValue as exc:
            raise ApiError(400, str(exc)) from None
        return self.api.command("forward-remove", id=number)

    @get("/open-ports", Access.READ, "Per device: its forwards, the ports it opened itself (UPnP, NAT-PMP, PCP) "
         "and whether it may", name="openPorts", query=MacQuery, answer=list[DevicePorts], needs=REACH,
         errors={404: NOT_SEEN})
    def open_ports(self, call, query):
        return self.api.command("open-ports", mac=self.api.known_mac(query.mac) if query.mac else None)

    @post("/open-ports/{mac}", Access.ADMIN, "Let a device open ports itself, or not (admin)", name="setMayOpenPorts",
          body=MayOpenBody, body_required=True, answer=MayOpen, needs=REACH, own_access="mac",
          params={"mac": KNOWN_MAC}, errors={404: NOT_SEEN})
    def may_open(self, call, mac, body):
        return self.api.command("may-open-ports", mac=mac, allowed=body.allowed)

    @get("/upnp", Access.READ, "miniupnpd: running, a note when it cannot open ports, every mapping",
         name="upnpStatus", answer=UpnpStatus, needs=REACH)
    def upnp(self, call):
        return self.api.command("upnp-status")

    @post("/upnp/close", Access.ADMIN, "Close one mapping a device opened (admin)", name="closeMapping",
          body=CloseBody, body_required=True, answer=Closed, needs=REACH, errors={404: "no such mapping"})
    def close(self, call, body):
        return self.api.command("upnp-close", key=body.key)
