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


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module
    from .ratelimit import LoginLimiter

    # A limiter of its own: a box asking to pair must not lock its address out of logging
    # in, nor failed logins keep a satellite from asking.
    limiter = LoginLimiter(app.ctx.now, limit=PAIR_REQUESTS, window=PAIR_WINDOW)

    def ask(call):
        wait = limiter.begin(call.caller.key)      # every request counts, per device or cable
        if wait:
            raise ApiError(429, f"too many pairing requests from {call.client}; try again in {int(wait) + 1} s",
                           {"Retry-After": str(int(wait) + 1)})
        data = app.body(call)
        if (not {"dpid", "csr"} <= set(data) <= {"dpid", "csr", "uplink"}
                or not all(isinstance(v, str) for v in data.values())):
            raise ApiError(400, 'send {"dpid": "<16 hex digits>", "csr": "<PEM certificate request>"'
                                '[, "uplink": "<its uplink port\'s name>"]}')
        log.info("pairing request for datapath %s from %s", str(data["dpid"])[:16], call.caller.describe())
        return json_response(app.command("satellite-request", dpid=data["dpid"], csr=data["csr"],
                                         origin=origin(call), uplink=data.get("uplink", ""),
                                         requester=call.caller.key))

    def origin(call) -> dict | None:
        """The LAN port and MAC of the device calling, from its lease and the switch's port
        list (the request's own words never name a port); None if it is not a device on a
        port of the router (the management link, the router itself, a relayed lease)."""
        if not call.client_mac:
            return None
        lease, dp = app.ctx.leases.get(call.client_mac), app.ctx.datapath
        if lease is None or not lease.local or dp is None:
            return None
        name = dp.port_name(lease.port)
        return {"port": name, "mac": call.client_mac} if name else None

    def poll(call, dpid):
        return json_response(app.command("satellite-ticket", dpid=dpid,
                                         ticket=call.req.headers.get("X-Pairing-Ticket", "")))

    def listing(call):
        return json_response(app.command("satellites"))

    def decide(what):
        def handler(call, dpid):
            if what != "permit":
                return json_response(app.command(f"satellite-{what}", dpid=dpid))
            # the code the household compared (the board sends the one it showed)
            data = app.fields(call, {"code"})
            if "code" in data and not isinstance(data["code"], str):
                raise ApiError(400, "code must be the 6 characters shown with the request")
            return json_response(app.command("satellite-permit", dpid=dpid, **data))
        return handler

    def sharing(sat: dict) -> int:
        """Permitted devices other than the satellite's own stack on the port it asked from."""
        dp = app.ctx.datapath
        port_no = dp.ports.get(sat.get("router_port") or "") if dp is not None and sat.get("found") else None
        if port_no is None or sat["state"] != "pending":
            return 0
        return sum(1 for lease in app.ctx.leases.active()
                   if lease.local and lease.port == port_no and lease.mac != sat.get("device_mac")
                   and app.ctx.state.device_state(lease.mac) == "permitted")

    def extra_views(views: list[dict]) -> list[dict]:
        return [board_view(s, sharing(s)) for s in app.ctx.pairing.all()]

    def on_satellite(topic: str, ev) -> None:
        dpid = f"{ev.dpid:016x}"
        sat = app.ctx.pairing.get(ev.dpid)
        view = board_view(sat, sharing(sat)) if sat else None
        app.stream.publish("device", {"mac": AP_PREFIX + dpid, "state": sat["state"] if sat else None,
                                      "reason": "satellite-" + ev.what, "view": view})

    app.board.extra_views.append(extra_views)
    app.ctx.bus.subscribe("satellite", on_satellite)
    dpid = r"(?P<dpid>[^/]+)"     # pairing.parse_dpid says what is wrong with a bad one
    app._add("POST", "/satellites/pair/?", ask, "asking", max_body=16 * 1024)
    app._add("GET", f"/satellites/pair/{dpid}/?", poll, "asking")
    app._add("GET", "/satellites/?", listing, "read")
    for what in ("permit", "deny", "forget"):
        app._add("POST", f"/satellites/{dpid}/{what}/?", decide(what), "admin")
