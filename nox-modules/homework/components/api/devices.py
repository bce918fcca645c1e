"""Devices: the decisions of seed Table 4.1 (one MAC or a list), their status, names, and
what the Guest Board shows (every label, one device's panel, the live event stream).

    POST /ws.v1/permit|deny|whitelist|blacklist|forget/{mac}
    POST /ws.v1/permit|deny|blacklist|forget   {"macs": [...]} or a bare list: all or nothing
    GET  /ws.v1/status[/{mac}] | /dhcp-status | /blacklist-status | /stats
    POST /ws.v1/meta/{mac}      {"name", "owner", "type"}
    GET  /ws.v1/devices[/{mac}] | /events

A MAC never seen is pre-approved by permit, deny and blacklist (devices.py).
"""
from __future__ import annotations

import re
from typing import Annotated, Any

from webob import Response

from .auth import PANEL
from .http import ApiError
from .model import Field, Model, field
from .routes import MAC_PATTERN, Access, Param, RouteGroup, get, needs, post
from .stream import StreamLimit, format_event
from .views import BoardDevice, Device, DevicePanel, Lease, Metrics

NOT_SEEN = "no device with that MAC has been seen"
MAX_HWDB_QUERY = 4000
SELECT = re.compile(r"^\s*select\s", re.IGNORECASE)
METRICS = needs("metrics", "metrics are", "metrics")
ANY_MAC = Param(Annotated[str, Field(pattern=MAC_PATTERN)], "MAC address, ':' or '-' separated",
                read=lambda api, text: api.mac(text), example="02:68:77:01:00:01")
KNOWN_MAC = Param(Annotated[str, Field(pattern=MAC_PATTERN)], "MAC address of a device the router has seen, "
                  "':' or '-' separated", read=lambda api, text: api.known_mac(text), example="02:68:77:01:00:01")
GROUP = ("permit", "deny", "blacklist", "forget")
DECISIONS = {
    "permit": "Permit access by the client (seed Table 4.1)",
    "deny": "Deny access by the client",
    "whitelist": "Accept associations from the client again (lift a blacklist: back to pending)",
    "blacklist": "Deny association to the client (EAPOL dropped, all traffic dropped)",
}


class LabelFacts(Model):
    """What a label says of a MAC the radio hears before it asks for an address."""
    label: str
    label_source: str
    vendor: str
    private: bool


class SnapshotEvent(Model):
    """First on every stream: every label, as GET /devices has them."""
    devices: list[BoardDevice]


class DeviceEvent(Model):
    """A device was seen, decided on, renamed, paused, slowed or forgotten (view: null)."""
    extra = "allow"
    mac: str
    state: str | None = field(doc="null: forgotten, or a MAC no longer heard")
    reason: str = field(optional=True, doc="seen, decision, meta, forgotten, schedule, cutoff, identity, "
                                           "flow-limit, usage-limit, nearby, out-of-range, satellite-...")
    view: BoardDevice | None


class LeaseEvent(Model):
    """A lease was granted, renewed or ended."""
    extra = "allow"
    mac: str
    view: BoardDevice | None


class LinkEvent(Model):
    """The radio's or the link simulator's report of a station."""
    mac: str
    metrics: Metrics
    label: LabelFacts = field(optional=True, doc="for a MAC that is no device yet")


class BandwidthEvent(Model):
    """The bytes a device moved in the last interval."""
    mac: str
    metrics: Metrics


class AlertEvent(Model):
    """An alert (mac '' for the router itself)."""
    extra = "allow"
    mac: str
    kind: str
    detail: str
    at: float


class RestartEvent(Model):
    """The controller restarts in place now: every open board says so, and when it is back."""
    why: str = field(doc="in words: 'factory reset', 'settings restored from a backup', ...")
    back_in: int | None = field(doc="seconds, the router's estimate from its last restart; null: not known")
    at: float


STREAM_EVENTS = {"snapshot": SnapshotEvent, "device": DeviceEvent, "lease": LeaseEvent, "link": LinkEvent,
                 "bandwidth": BandwidthEvent, "alert": AlertEvent, "restart": RestartEvent}


class HwdbQuery(Model):
    extra = "ignore"
    query: str = field("", max_length=MAX_HWDB_QUERY, doc="one SELECT",
                       example="select mac, rssi from Links [range 10 seconds]")


class HwdbResult(Model):
    columns: list[str]
    types: list[str]
    rows: list[dict[str, Any]] = field(doc="one object per row, by column name")


class Forgotten(Model):
    mac: str
    forgotten: bool


class GroupMacs(Model):
    """MACs to decide on together."""
    usage = 'the MACs as JSON: {"macs": ["aa:bb:cc:dd:ee:ff", ...]} or a bare list'
    macs: list[str] = field(min_items=1, enforce=False, doc="up to 256 MACs",
                            example=["02:68:77:01:00:01", "02:68:77:01:00:02"])


class GroupAnswer(Model):
    """One result per MAC, in the order given: the device after the change (forget: {mac, forgotten})."""
    decision: str
    results: list[Device | Forgotten]


class Meta(Model):
    """A device's name, owner and type (any subset; null leaves one as it is)."""
    name: str | None = field(optional=True, max_length=64, example="Anna's laptop")
    owner: str | None = field(optional=True, max_length=64, example="Anna")
    type: str | None = field(optional=True, max_length=64, doc="laptop, desktop, phone, tablet, tv, other")


class DecisionRoutes(RouteGroup):
    tag = "devices"

    def decide(self, call, decision: str, mac: str):
        if call.principal is not None and call.principal.role == PANEL and not self.api.auth.password_chosen():
            # The first hour belongs to the household's own password (setup.py): a panel's
            # decision would close the set-up offer for it.
            raise ApiError(409, "set this router up first: plug a computer into one of its ports and open "
                                "any web page on it; the panel lets devices in after that")
        return self.api.command(decision, mac=mac)

    @post("/permit/{mac}", Access.PANEL, DECISIONS["permit"], answer=Device, own_access="mac",
          params={"mac": ANY_MAC}, description="A MAC never seen is pre-approved. A panel may call it too.",
          errors={409: "a panel's decision before the household has set the router up"})
    def permit(self, call, mac):
        return self.decide(call, "permit", mac)

    @post("/deny/{mac}", Access.PANEL, DECISIONS["deny"], answer=Device, own_access="mac",
          params={"mac": ANY_MAC}, description="A MAC never seen is pre-approved. A panel may call it too.",
          errors={409: "a panel's decision before the household has set the router up"})
    def deny(self, call, mac):
        return self.decide(call, "deny", mac)

    @post("/whitelist/{mac}", Access.ADMIN, DECISIONS["whitelist"], answer=Device, own_access="mac",
          params={"mac": ANY_MAC}, errors={404: NOT_SEEN})
    def whitelist(self, call, mac):
        return self.decide(call, "whitelist", mac)

    @post("/blacklist/{mac}", Access.ADMIN, DECISIONS["blacklist"], answer=Device, own_access="mac",
          params={"mac": ANY_MAC})
    def blacklist(self, call, mac):
        return self.decide(call, "blacklist", mac)

    @post("/forget/{mac}", Access.ADMIN, "Forget a device: its decision, name, lease and address (it asks to "
          "join again if it comes back)", answer=Forgotten, own_access="mac", params={"mac": ANY_MAC},
          errors={404: NOT_SEEN, 409: "the device is blacklisted: whitelist it first"})
    def forget(self, call, mac):
        return self.decide(call, "forget", mac)

    def group(self, call, decision: str, body):
        macs = body.macs if isinstance(body, GroupMacs) else body
        results = self.api.command("decide-group", decision=decision, macs=macs)
        return {"decision": decision, "results": results}

    GROUP_TEXT = ("Every MAC is checked first; one bad MAC (or the caller's own, or for forget a blacklisted "
                  "or unknown one) refuses the whole list and nothing changes.")

    @post("/permit", Access.ADMIN, "Permit several devices at once: all or nothing", name="group_permit",
          body=GroupMacs | list[str], body_required=True, answer=GroupAnswer, own_access="body.macs",
          description=GROUP_TEXT + " MACs not seen yet are pre-approved.")
    def group_permit(self, call, body):
        return self.group(call, "permit", body)

    @post("/deny", Access.ADMIN, "Deny several devices at once: all or nothing", name="group_deny",
          body=GroupMacs | list[str], body_required=True, answer=GroupAnswer, own_access="body.macs",
          description=GROUP_TEXT + " MACs not seen yet are pre-approved.")
    def group_deny(self, call, body):
        return self.group(call, "deny", body)

    @post("/blacklist", Access.ADMIN, "Blacklist several devices at once: all or nothing",
          name="group_blacklist", body=GroupMacs | list[str], body_required=True, answer=GroupAnswer,
          own_access="body.macs", description=GROUP_TEXT + " MACs not seen yet are pre-approved.")
    def group_blacklist(self, call, body):
        return self.group(call, "blacklist", body)

    @post("/forget", Access.ADMIN, "Forget several devices at once: all or nothing", name="group_forget",
          body=GroupMacs | list[str], body_required=True, answer=GroupAnswer, own_access="body.macs",
          errors={404: "a MAC never seen", 409: "a blacklisted MAC"}, description=GROUP_TEXT)
    def group_forget(self, call, body):
        return self.group(call, "forget", body)

    @post("/meta/{mac}", Access.PANEL, "Set a device's name, owner and type (a panel too: the name a device "
          "is let in with)", body=Meta, answer=Device,
          params={"mac": ANY_MAC}, errors={404: NOT_SEEN})
    def meta(self, call, mac, body):
        return self.api.command("set-meta", mac=mac, **{k: getattr(body, k) for k in body.given()})


class StatusRoutes(RouteGroup):
    tag = "devices"

    @get("/status", Access.READ, "Currently permitted clients", name="status_all", answer=list[Device])
    def status_all(self, call):
        return self.api.command("status")

    @get("/status/{mac}", Access.READ, "Status of one client", name="status_one", answer=Device,
         params={"mac": ANY_MAC}, errors={404: NOT_SEEN})
    def status_one(self, call, mac):
        return self.api.command("status", mac=mac)

    @get("/dhcp-status", Access.READ, "Current MAC-IP mappings (active leases)", name="dhcp_status",
         answer=list[Lease])
    def dhcp_status(self, call):
        return self.api.command("dhcp-status")

    @get("/blacklist-status", Access.READ, "Currently blacklisted clients", name="blacklist_status",
         answer=list[Device])
    def blacklist_status(self, call):
        return self.api.command("blacklist-status")

    @get("/stats", Access.READ, "Every counter of the controller, grouped by part (the same as `homework stats`)",
         answer=dict[str, dict[str, float]],
         description='Counters by part, e.g. {"dhcp": {"offers": 3}, "devices": {"pending": 2, "forgotten": 0}}.')
    def stats(self, call):
        return self.api.command("stats")

    @get("/metrics", Access.READ, "The controller's counters, per-device bytes and packets, devices per state, "
         "active leases and hwdbd/dnsd health in the Prometheus text exposition format 0.0.4 (read-only token "
         "or better)", answer=str, content_type="text/plain", needs=METRICS)
    def metrics(self, call):
        resp = Response(self.api.command("metrics").encode())
        resp.headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
        return resp

    @get("/hwdb", Access.READ, "Read-only hwdb query (one SELECT)", query=HwdbQuery, answer=HwdbResult,
         errors={400: "not a single SELECT, or hwdb rejected it", 503: "hwdb not enabled or unreachable",
                 504: "hwdb did not answer"})
    def hwdb(self, call, query):
        api = self.api
        text = query.query
        if not text:
            raise ApiError(400, "send the query in ?query=SELECT ...")
        text = text.strip().rstrip(";").strip()
        if not SELECT.match(text + " ") or ";" in text:
            raise ApiError(400, "only one read-only SELECT query is allowed")
        if not api.ctx.config.hwdb_enabled or api.hwdb_client_factory is None:
            raise ApiError(503, "hwdb is not enabled on this router ([hwdb] enabled = false)")
        try:
            client = api.hwdb_client_factory()
        except Exception as exc:  # the client package missing or broken
            raise ApiError(503, f"hwdb client unavailable: {exc}") from None
        try:
            result = client.query(text)
        except Exception as exc:
            timeout = type(exc).__name__ == "HwdbTimeout"
            raise ApiError(504 if timeout else 400, f"hwdb: {getattr(exc, 'message', exc)}") from None
        return {"columns": list(result.columns), "types": list(result.types), "rows": list(result.rows)}


class BoardRoutes(RouteGroup):
    tag = "board"

    @get("/devices", Access.READ, "Every device as the Guest Board shows it", answer=list[BoardDevice])
    def devices(self, call):
        return self.api.board.all_views()

    @get("/devices/{mac}", Access.READ, "One device's panel: board view, recent alerts, DNS rules",
         name="device", answer=DevicePanel, params={"mac": ANY_MAC}, errors={404: NOT_SEEN})
    def device(self, call, mac):
        api = self.api
        device = api.ctx.state.get_device(mac)
        if device is None:
            raise ApiError(404, f"no device with MAC {mac} has been seen")
        view = api.board.view(device)
        view["alerts"] = api.board.alerts(mac)
        view["dns_rules"] = api.command("dns-rules", mac=mac) if api.has("dns-rules") else None
        return view

    @get("/events", Access.READ, "Live Server-Sent Events: snapshot, device, lease, link, bandwidth, alert, end",
         content_type="text/event-stream", answer=str, events=STREAM_EVENTS,
         errors={429: "too many event streams open: at most 8 per token or session, 64 in all (of which 16 "
                      "only for admin credentials); see Retry-After"})
    def events(self, call):
        api, principal = self.api, call.principal
        # The snapshot is built only for a stream the limits let in (it is the costly part).
        snapshot = lambda: [format_event("snapshot", {"devices": api.board.all_views()})]  # noqa: E731
        try:
            body = api.stream.open(snapshot, lambda: api.auth.still_valid(principal),
                                   owner=f"{principal.kind}:{principal.ident}", admin=principal.is_admin)
        except StreamLimit as exc:
            raise ApiError(429, str(exc), {"Retry-After": "30"}) from None
        # eventlet's WSGI server would otherwise buffer small writes.
        call.req.environ["eventlet.minimum_write_chunk_size"] = 0
        resp = Response(app_iter=body, content_type="text/event-stream", charset=None)
        resp.headers["Cache-Control"] = "no-cache"
        resp.headers["X-Accel-Buffering"] = "no"
        return resp
