"""Satellite switches in the ws.v1 API (homework/pairing.py):

    POST /ws.v1/satellites/pair          {"dpid", "csr"[, "uplink"]}  (public: the satellite asks)
                                         -> {dpid, code, ticket}
    GET  /ws.v1/satellites/pair/{dpid}   X-Pairing-Ticket: <ticket>  (public: the satellite polls)
                                         -> {dpid, state, code} (+ certificate, ca once permitted)
    GET  /ws.v1/satellites               (read)  -> [{dpid, state, code, index, uplink, router_port, ...}]
    POST /ws.v1/satellites/{dpid}/permit|deny|forget   (admin); permit takes {"code"}: the one the
                                         household compared (409 if the request shows another)

Asking is public, as a new satellite has no credentials; it decides nothing (the household
permits it on the Guest Board) and it is rate-limited per address (10 requests in 10
minutes, a limiter apart from the logins', counted per device or cable: homework/callers.py),
so no one floods the board with access points. The ticket travels in a header, not in the
URL, so no access log keeps it.

The two pairing paths are the only ones a *pending* device may call (access "asking"):
a satellite plugged into a LAN port asks as a device, through the captive page's server
(conf/lighttpd-captive.conf proxies exactly these paths). The router then records the
port of the caller's lease, never a port the request names, and keeps one pending request
per port (pairing.py). On the board a satellite is a label of its own kind
(`kind: "access-point"`, `mac: "ap-<dpid>"`) that is dragged like a device.
"""
from __future__ import annotations

import logging
from typing import Literal

from .http import ApiError
from .model import Model, field
from .ratelimit import LoginLimiter
from .routes import Access, Param, RouteGroup, get, post

log = logging.getLogger("homework.api.satellites")
AP_PREFIX = "ap-"
ZONES = {"pending": "asking", "permitted": "permitted", "denied": "outside"}


def board_view(sat: dict, sharing: int = 0) -> dict:
    """`sharing`: the permitted devices on the port a pending found satellite asked from;
    they lose their link when it is permitted (the port becomes its cable), so the label
    says so before the household decides."""
    name = f"satellite {sat['index']}" if sat.get("index") else "satellite"
    where = f" · plugged into {sat['router_port']}" if sat.get("found") and sat.get("router_port") else ""
    if where and sat["state"] == "pending" and sharing:
        where += (f" · permitting it cuts off {sharing} permitted device{'s' if sharing > 1 else ''} "
                  f"on {sat['router_port']}")
    return {"mac": AP_PREFIX + sat["dpid"], "kind": "access-point", "dpid": sat["dpid"], "state": sat["state"],
            "zone": ZONES[sat["state"]], "label": f"Access point: {name} · code {sat['code']}{where}",
            "label_source": "access-point", "code": sat["code"], "name": "", "owner": "", "type": "access-point",
            "hostname": "", "vendor": "", "private": False, "first_seen": sat["requested"],
            "last_seen": sat["requested"], "lease": None, "metrics": {}}


PAIR_REQUESTS = 10           # pairing requests one address may make ...
PAIR_WINDOW = 600.0          # ... in this many seconds


DPID = Param(str, "the satellite switch's datapath id (16 hex digits)", example="00000000000000a1")
SatState = Literal["pending", "permitted", "denied"]


class PairBody(Model):
    usage = ('{"dpid": "<16 hex digits>", "csr": "<PEM certificate request>"'
             '[, "uplink": "<its uplink port\'s name>"]}')
    dpid: str = field(doc="its datapath id, 16 hex digits", example="00000000000000a1")
    csr: str = field(doc="a PEM certificate request for its TLS key")
    uplink: str = field("", doc="its uplink port's name (a satellite found on a LAN port)")


class PermitBody(Model):
    usage = '{"code": "the 6 characters shown with the request"} or nothing'
    code: str = field(optional=True, doc="the code the household compared with the satellite's console; if the "
                                          "request now shows another, nothing is signed (409)")


class PairAsked(Model):
    """The request is recorded: the household compares the code on the Guest Board."""
    dpid: str
    code: str = field(doc="the code to compare before permitting")
    ticket: str = field(doc="poll with it (X-Pairing-Ticket); shown only now")


class PairStatus(Model):
    dpid: str
    state: SatState
    code: str
    certificate: str = field(optional=True, doc="once permitted: its certificate (PEM)")
    ca: str = field(optional=True, doc="once permitted: the household CA (PEM)")


class Satellite(Model):
    """A satellite switch that asked to pair, and the household's decision."""
    dpid: str
    state: SatState
    code: str
    requested: float
    decided: float | None
    paired: bool = field(doc="a certificate was issued")
    index: int | None = field(doc="its number on the router (satellite N)")
    uplink: str | None
    router_port: str | None = field(doc="the router port its cable is on")
    found: bool = field(doc="it asked from a LAN port instead of being listed in [satellites] switches")
    cabled: bool = field(doc="the controller drives its cable now")
    device_mac: str | None = field(doc="the MAC its own stack asked from")
    restarting: bool = field(optional=True, doc="the decision changes the cables: the controller restarts in place")
    back_in: int | None = field(optional=True, doc="with restarting: seconds until it answers again (its estimate)")


class SatelliteForgotten(Model):
    dpid: str
    forgotten: bool
    restarting: bool = field(optional=True)
    back_in: int | None = field(optional=True)


class SatelliteRoutes(RouteGroup):
    tag = "satellites"

    def __init__(self, api):
        super().__init__(api)
        # A limiter of its own: a box asking to pair must not lock its address out of logging
        # in, nor failed logins keep a satellite from asking.
        self.limiter = LoginLimiter(api.ctx.now, limit=PAIR_REQUESTS, window=PAIR_WINDOW)
        api.board.extra_views.append(self.extra_views)
        api.ctx.bus.subscribe("satellite", self.on_satellite)

    def throttle(self, call) -> None:
        wait = self.limiter.begin(call.caller.key)      # every request counts, per device or cable; a bad one too
        if wait:
            raise ApiError(429, f"too many pairing requests from {call.client}; try again in {int(wait) + 1} s",
                           {"Retry-After": str(int(wait) + 1)})

    @post("/satellites/pair", Access.ASKING, "A satellite switch asks to pair: public, rate-limited, also open to a "
          "pending device (a satellite found on a LAN port asks as one; the router records the port of its "
          "lease); it decides nothing, the household permits it on the Guest Board", name="askSatellitePairing",
          body=PairBody, body_required=True, answer=PairAsked, max_body=16 * 1024, before="throttle",
          errors={404: "an unlisted datapath asking from elsewhere than a LAN port",
                  409: "already paired, another device already asking under this id, or a Wi-Fi port",
                  429: "too many pairing requests from this address; see Retry-After"})
    def ask(self, call, body):
        log.info("pairing request for datapath %s from %s", body.dpid[:16], call.caller.describe())
        return self.api.command("satellite-request", dpid=body.dpid, csr=body.csr, origin=self.origin(call),
                                uplink=body.uplink, requester=call.caller.key)

    def origin(self, call) -> dict | None:
        """The LAN port and MAC of the device calling, from its lease and the switch's port
        list (the request's own words never name a port); None if it is not a device on a
        port of the router (the management link, the router itself, a relayed lease)."""
        if not call.client_mac:
            return None
        ctx = self.api.ctx
        lease, dp = ctx.leases.get(call.client_mac), ctx.datapath
        if lease is None or not lease.local or dp is None:
            return None
        name = dp.port_name(lease.port)
        return {"port": name, "mac": call.client_mac} if name else None

    @get("/satellites/pair/{dpid}", Access.ASKING, "The satellite polls its request with the header "
         "X-Pairing-Ticket (public)", name="getSatellitePairing", answer=PairStatus, params={"dpid": DPID},
         errors={404: "no pairing request with this ticket"})
    def poll(self, call, dpid):
        return self.api.command("satellite-ticket", dpid=dpid, ticket=call.req.headers.get("X-Pairing-Ticket", ""))

    @get("/satellites", Access.READ, "Satellite switches that asked to pair and the household's decisions (read)",
         name="listSatellites", answer=list[Satellite])
    def listing(self, call):
        return self.api.command("satellites")

    @post("/satellites/{dpid}/permit", Access.ADMIN, "Permit a satellite (admin): the household CA signs its "
          "request; it connects over TLS", name="permitSatellite", body=PermitBody, answer=Satellite,
          params={"dpid": DPID},
          errors={404: "it has not asked to pair", 409: "its port already carries another satellite, there is no "
                                                        "place for another, or the request now shows another "
                                                        "code than the one named"})
    def permit(self, call, dpid, body):
        return self.api.command("satellite-permit", dpid=dpid, **body.given_items())

    @post("/satellites/{dpid}/deny", Access.ADMIN, "Deny a satellite (admin): its certificate stops admitting it; if "
          "connected, its table is emptied, its ports leave the router and the session is closed",
          name="denySatellite", answer=Satellite, params={"dpid": DPID}, errors={404: "it has not asked to pair"})
    def deny(self, call, dpid):
        return self.api.command("satellite-deny", dpid=dpid)

    @post("/satellites/{dpid}/forget", Access.ADMIN, "Forget a satellite (admin): as deny, and its request is "
          "removed (it may ask again)", name="forgetSatellite", answer=SatelliteForgotten, params={"dpid": DPID},
          errors={404: "it has not asked to pair"})
    def forget(self, call, dpid):
        return self.api.command("satellite-forget", dpid=dpid)

    def sharing(self, sat: dict) -> int:
        """Permitted devices other than the satellite's own stack on the port it asked from."""
        ctx = self.api.ctx
        dp = ctx.datapath
        port_no = dp.ports.get(sat.get("router_port") or "") if dp is not None and sat.get("found") else None
        if port_no is None or sat["state"] != "pending":
            return 0
        return sum(1 for lease in ctx.leases.active()
                   if lease.local and lease.port == port_no and lease.mac != sat.get("device_mac")
                   and ctx.state.device_state(lease.mac) == "permitted")

    def extra_views(self, views: list[dict]) -> list[dict]:
        return [board_view(s, self.sharing(s)) for s in self.api.ctx.pairing.all()]

    def on_satellite(self, topic: str, ev) -> None:
        """ev: events.Satellite."""
        dpid = f"{ev.dpid:016x}"
        sat = self.api.ctx.pairing.get(ev.dpid)
        view = board_view(sat, self.sharing(sat)) if sat else None
        self.api.stream.publish("device", {"mac": AP_PREFIX + dpid, "state": sat["state"] if sat else None,
                                           "reason": "satellite-" + ev.what, "view": view})
