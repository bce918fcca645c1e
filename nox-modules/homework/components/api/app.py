"""The ws.v1 web service (seed Table 4.1) as a WSGI application (WebOb for requests and
responses). Every method calls the controller's command table, the same calls the CLI
makes over the control socket; responses are what `homework --json ...` prints.

Access, checked in this order for every request:
1. the caller: its address (behind lighttpd, X-Forwarded-For) is resolved to a device
   once (homework/callers.py: the .2 of its /30 or any address of its /64), and a LAN
   device that is not permitted gets 403 for everything (the routing layer should
   already keep it away from the router's HTTPS port), whichever family it uses;
2. credentials: `Authorization: Bearer <token>` or the Guest Board's session cookie;
   none -> 401;
3. role: `read-only` may only use GET methods; a panel (the router's screen, a wall
   tablet: panels.py) may also let devices in or out (`panel` routes); everything else
   needs `admin` -> 403;
4. a session-authenticated POST must carry the session's CSRF token in X-CSRF-Token -> 403;
5. a device may not change anything about itself (its access, DNS rules, pauses,
   schedules, limits, priority): any change whose path names the caller's own MAC is a
   403 here, and routes that take MACs in the body check them with `not_self`.
"""
from __future__ import annotations

import hmac
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

from webob import Request, Response

from ... import actor, wording
from ...callers import DEVICE, STRANGER, Caller
from ...commands import CommandError
from ...macaddr import BadMac, normalize
from ...state import StorageError
from ...values import BadValue, parse_json
from .auth import PANEL, Busy, Principal
from . import querylog
from . import blocklists as blocklist_routes
from . import schedules as schedule_routes
from . import parity
from . import backup as backup_routes
from . import system as system_routes
from . import qos as qos_routes
from . import nearby as nearby_routes
from . import wifi as wifi_routes
from . import update as update_routes
from . import satellites as satellite_routes
from . import resolver as resolver_routes
from . import setup as setup_routes
from . import reach as reach_routes
from . import remote as remote_routes
from . import identify as identify_routes
from . import captive as captive_routes
from . import panels as panel_routes
from .stream import StreamLimit

log = logging.getLogger("homework.api")

PREFIX = "/ws.v1"
COOKIE = "hw_session"
MAX_BODY = 16 * 1024
MAX_HWDB_QUERY = 4000
OPENAPI = Path(__file__).with_name("openapi.json")
DOMAIN = re.compile(r"^(?=.{1,253}$)(\*\.)?([A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)"
                    r"(\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$")
SELECT = re.compile(r"^\s*select\s", re.IGNORECASE)
DNS_COMMANDS = {"permit-dns", "deny-dns", "remove-dns-rule", "dns-rules"}
HOUSEHOLD = "household"     # in place of a MAC in the DNS rule routes: the household's rules


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass
class Route:
    method: str
    pattern: re.Pattern
    handler: Callable
    # public | read | panel | admin | asking (pending devices too) | caller (any device, about itself)
    access: str
    max_body: int = MAX_BODY


# Changes about a device that the device itself may make (naming is not access).
SELF_ALLOWED = frozenset({"meta"})


@dataclass
class Call:
    """One request, after the access checks."""
    req: Request
    principal: Principal | None
    caller: Caller              # who is calling (homework/callers.py)

    @property
    def client(self) -> str:
        """The caller's address (behind lighttpd: X-Forwarded-For)."""
        return self.caller.address

    @property
    def client_mac(self) -> str | None:
        """The LAN device making the call, if it is one (any of its addresses)."""
        return self.caller.mac


class ApiApp:
    def __init__(self, ctx, auth, limiter, board, stream, *, hwdb_client_factory=None,
                 trusted_proxies=("127.0.0.1", "::1")):
        self.ctx = ctx
        self.auth = auth
        self.limiter = limiter
        self.board = board
        self.stream = stream
        self.hwdb_client_factory = hwdb_client_factory
        self.panel_pairing = panel_routes.Pairing(ctx.now)
        self.trusted_proxies = set(trusted_proxies)
        self.routes: list[Route] = []
        mac = r"(?P<mac>[^/]+)"
        dom = r"(?P<domain>[^/]+)"
        add = self._add
        add("GET", "/openapi.json", self.openapi, "public")
        add("POST", "/login", self.login, "public")
        add("POST", "/logout", self.logout, "read")
        add("GET", "/session", self.session, "read")
        for name in ("permit", "deny", "whitelist", "blacklist", "forget"):
            # letting devices in or out is a panel's job too; keeping them out for good is not
            add("POST", f"/{name}/{mac}/?", self._decision(name), "panel" if name in ("permit", "deny") else "admin")
        add("GET", "/status/?", self.status, "read")
        add("GET", f"/status/{mac}/?", self.status, "read")
        add("GET", "/dhcp-status/?", self.simple("dhcp-status"), "read")
        add("GET", "/blacklist-status/?", self.simple("blacklist-status"), "read")
        add("GET", "/stats/?", self.simple("stats"), "read")
        add("POST", f"/permit-dns/{mac}/{dom}/?", self._dns("permit-dns"), "admin")
        add("POST", f"/deny-dns/{mac}/{dom}/?", self._dns("deny-dns"), "admin")
        add("POST", f"/remove-dns-rule/{mac}/{dom}/?", self._dns("remove-dns-rule"), "admin")
        add("GET", f"/dns-rules/{mac}/?", self.dns_rules, "read")
        add("POST", f"/meta/{mac}/?", self.meta, "panel")   # the name a device is let in with
        add("GET", "/devices/?", self.devices, "read")
        add("GET", f"/devices/{mac}/?", self.device, "read")
        add("GET", "/hwdb/?", self.hwdb, "read")
        add("GET", "/events/?", self.events, "read")
        add("GET", "/tokens/?", self.tokens, "admin")
        add("POST", "/tokens/?", self.create_token, "admin")
        add("POST", r"/tokens/(?P<token_id>[^/]+)/revoke/?", self.revoke_token, "admin")
        add("GET", "/usage/?", self.usage, "read")
        add("GET", "/usage/cap/?", self.usage_cap, "read")
        add("POST", "/usage/cap/?", self.usage_cap, "admin")
        add("GET", r"/usage\.csv", self.usage_csv, "read")
        add("GET", f"/usage/devices/{mac}/?", self.usage_device, "read")
        add("GET", "/usage/limits/?", self.simple("usage-limits"), "read")
        add("POST", "/usage/limits/?", self._usage_post("usage-limit", ("mac", "owner", "allowance", "period",
                                                                         "action", "rate")), "admin")
        add("POST", "/usage/limits/remove/?", self._usage_post("usage-limit-remove", ("mac", "owner")), "admin")
        add("POST", "/usage/lift/?", self._usage_post("usage-lift", ("mac", "owner")), "admin")
        add("GET", "/usage/bursts/?", self.simple("usage-bursts"), "read")
        add("POST", "/usage/bursts/?", self._usage_post("usage-burst", ("mac", "size", "minutes")), "admin")
        add("POST", "/usage/bursts/remove/?", self._usage_post("usage-burst-remove", ("mac",)), "admin")
        add("GET", "/metrics/?", self.metrics, "read")
        add("GET", "/notifications/?", self.notifications, "read")
        add("POST", "/notifications/read/?", self.notifications_read, "admin")
        add("POST", "/notifications/test/?", self._notify("notify-test"), "admin")
        add("GET", "/webhooks/?", self._notify("webhooks"), "admin")
        add("POST", "/webhooks/?", self.webhook_add, "admin")
        add("POST", r"/webhooks/(?P<hook_id>[^/]+)/remove/?", self.webhook_remove, "admin")
        add("GET", "/webhooks/deliveries/?", self.webhook_deliveries, "admin")
        add("GET", "/notify/status/?", self._notify("notify-status"), "admin")
        querylog.add_routes(self)      # query log and local names (querylog.py)
        schedule_routes.add_routes(self)   # schedules and pauses (schedules.py)
        parity.add_routes(self)            # group decisions, dns-mode (parity.py)
        blocklist_routes.add_routes(self)  # blocklists and safe-search (blocklists.py)
        backup_routes.add_routes(self)     # backup and restore (backup.py)
        system_routes.add_routes(self)     # factory reset, system, time zone (system.py)
        qos_routes.add_routes(self)        # priorities and shaping (qos.py)
        nearby_routes.add_routes(self)     # nearby devices heard probing (nearby.py)
        wifi_routes.add_routes(self)       # Wi-Fi SSID and passphrase (wifi.py)
        update_routes.add_routes(self)     # .hwup upload, update status, reboot (update.py)
        satellite_routes.add_routes(self)  # satellites asking to pair, decisions (satellites.py)
        setup_routes.add_routes(self)      # the first hour: a pending device sets the router up (setup.py)
        resolver_routes.add_routes(self)   # DNSSEC and the resolver's upstreams (resolver.py)
        reach_routes.add_routes(self)      # port forwards, UPnP mappings, may open ports (reach.py)
        remote_routes.add_routes(self)     # remote access over WireGuard (remote.py)
        captive_routes.add_routes(self)    # a cut-off device told why, RFC 8908's API (captive.py)
        identify_routes.add_routes(self)   # what each device is, the household's corrections (identify.py)
        panel_routes.add_routes(self)      # the router's screen and wall tablets as panels (panels.py)

    def _add(self, method: str, path: str, handler: Callable, access: str, max_body: int = MAX_BODY) -> None:
        self.routes.append(Route(method, re.compile(f"^{re.escape(PREFIX)}{path}$"), handler, access, max_body))

    # -- WSGI --------------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        req = Request(environ)
        try:
            resp = self.handle(req)
        except ApiError as exc:
            resp = error(exc.status, exc.message)
            resp.headers.update(exc.headers)
        except StorageError as exc:
            # A change on a full disk: refused, nothing half-done; reads keep working.
            resp = error(503, str(exc))
            resp.headers["Retry-After"] = "30"
        except Busy as exc:       # too many password checks queued (auth.HashGate)
            resp = error(503, str(exc))
            resp.headers["Retry-After"] = "5"
        except Exception:
            log.exception("API %s %s failed", req.method, req.path_info)
            resp = error(500, "internal error (see the controller log)")
        resp.headers.setdefault("Cache-Control", "no-store")
        resp.headers["X-Content-Type-Options"] = "nosniff"
        return resp(environ, start_response)

    def handle(self, req: Request) -> Response:
        route, params = self._match(req)
        caller = self.ctx.callers.resolve(self.client_address(req))
        if route.access != "caller":       # "caller": about the caller, whatever its state: no gate
            self.device_gate(caller, asking=route.access == "asking")
        principal = self.authenticate(req)
        if route.access not in ("public", "asking", "caller"):
            if principal is None:
                raise ApiError(401, "credentials required: log in on the Guest Board or send "
                                    "'Authorization: Bearer <token>'",
                               {"WWW-Authenticate": 'Bearer realm="homework"'})
            if route.access == "admin" and not principal.is_admin:
                raise ApiError(403, f"this needs the admin role; these credentials are {principal.role}")
            if route.access == "panel" and not principal.may_decide:
                raise ApiError(403, f"this needs the admin role (or a panel's); these credentials are {principal.role}")
            if req.method == "POST" and principal.kind == "session":
                sent = req.headers.get("X-CSRF-Token", "")
                if not hmac.compare_digest(sent.encode(), principal.csrf.encode()):
                    raise ApiError(403, "missing or wrong X-CSRF-Token for this session")
        if req.content_length and req.content_length > route.max_body:
            raise ApiError(413, f"request body larger than {route.max_body} bytes")
        call = Call(req, principal, caller)
        if req.method not in ("GET", "HEAD") and "mac" in params and route.handler.__name__ not in SELF_ALLOWED:
            self.not_self_text(call, params["mac"])
        with actor.acting(self.who(call)):      # a device's story says who let it in
            return route.handler(call, **params)

    def who(self, call: Call) -> str:
        p = call.principal
        device = wording.name_of(self.ctx.state, call.client_mac) if call.client_mac else ""
        return actor.api_caller(p.role if p else "", p.kind if p else "", p.panel if p else "", device)

    def _match(self, req: Request) -> tuple[Route, dict]:
        path = req.path_info
        allowed = []
        for route in self.routes:
            m = route.pattern.match(path)
            if m:
                if route.method == req.method or (req.method == "HEAD" and route.method == "GET"):
                    return route, m.groupdict()
                allowed.append(route.method)
        if allowed:
            raise ApiError(405, f"{req.method} is not allowed here (use {', '.join(sorted(set(allowed)))})",
                           {"Allow": ", ".join(sorted(set(allowed)))})
        raise ApiError(404, f"no such API method: {path} (see {PREFIX}/openapi.json)")

    # -- access ------------------------------------------------------------------------------
    def client_address(self, req: Request) -> str:
        peer = req.remote_addr or ""
        forwarded = req.headers.get("X-Forwarded-For", "")
        if peer in self.trusted_proxies and forwarded:
            # lighttpd appends the address it accepted the connection from: the last one.
            return forwarded.split(",")[-1].strip()
        return peer

    def device_gate(self, caller: Caller, asking: bool = False) -> str | None:
        """If the caller is a LAN device, return its MAC; refuse devices not permitted, and
        addresses of the household that no device holds. `asking`: a route a pending device
        may call too (a satellite asking to pair from a LAN port, through the captive
        page's server); a denied one still may not."""
        if caller.kind == STRANGER:
            raise ApiError(403, "this address belongs to no device on the network: ask to be let in on the Guest Board")
        if caller.kind != DEVICE:
            return None
        device = self.ctx.state.get_device(caller.mac)
        if asking and device is not None and device.state == "pending":
            return caller.mac
        if device is None or device.state != "permitted":
            raise ApiError(403, "this device is not permitted on the network: ask to be let in on the Guest Board")
        return caller.mac

    def authenticate(self, req: Request) -> Principal | None:
        header = req.headers.get("Authorization", "")
        if header:
            scheme, _, value = header.partition(" ")
            principal = self.auth.token(value.strip()) if scheme.lower() == "bearer" else None
            if principal is None:
                raise ApiError(401, "invalid, revoked or malformed API token",
                               {"WWW-Authenticate": 'Bearer realm="homework", error="invalid_token"'})
            return principal
        sid = req.cookies.get(COOKIE)
        return self.auth.session(sid) if sid else None

    def _is_https(self, req: Request) -> bool:
        if req.remote_addr in self.trusted_proxies:
            proto = req.headers.get("X-Forwarded-Proto", "")
            if proto:
                return proto.lower() == "https"
        return req.scheme == "https"

    # -- helpers -----------------------------------------------------------------------------
    def command(self, name: str, /, **kwargs):
        try:
            return self.ctx.commands.call(name, **kwargs)
        except CommandError as exc:
            raise ApiError(exc.status, str(exc)) from None

    @staticmethod
    def mac(text: str) -> str:
        try:
            return normalize(text)
        except BadMac as exc:
            raise ApiError(400, str(exc)) from None

    def known_mac(self, text: str) -> str:
        mac = self.mac(text)
        if self.ctx.state.get_device(mac) is None:
            raise ApiError(404, f"no device with MAC {mac} has been seen")
        return mac

    def rules_owner(self, text: str) -> str:
        """Whose DNS rules: a seen device's MAC, or the literal `household` (every device)."""
        return HOUSEHOLD if text.lower() == HOUSEHOLD else self.known_mac(text)

    @staticmethod
    def not_self(call: Call, mac: str) -> None:
        if call.client_mac and call.client_mac == mac:
            raise ApiError(403, "a device cannot change its own access; ask from another device")

    def not_self_text(self, call: Call, text) -> None:
        """not_self for a MAC as the caller wrote it (a bad one is the handler's 400)."""
        if call.client_mac and isinstance(text, str):
            try:
                self.not_self(call, normalize(text))
            except BadMac:
                pass

    def not_own_owner(self, call: Call, owner) -> None:
        """A device may not change what applies to its owner's devices (itself among them)."""
        if call.client_mac and isinstance(owner, str) and owner:
            device = self.ctx.state.get_device(call.client_mac)
            if device is not None and device.owner and device.owner.casefold() == owner.casefold():
                raise ApiError(403, f"this device belongs to {device.owner}: it cannot change what applies to "
                                    "its owner's devices; ask from another device")

    @staticmethod
    def body(call: Call) -> dict:
        raw = call.req.body
        if not raw:
            return {}
        try:
            data = parse_json(raw)
        except BadValue as exc:
            raise ApiError(400, str(exc)) from None
        if not isinstance(data, dict):
            raise ApiError(400, "request body must be a JSON object")
        return data

    def fields(self, call: Call, allowed: set[str]) -> dict:
        """The JSON body, refused with a 400 naming them when it has fields not in `allowed`."""
        data = self.body(call)
        unknown = set(data) - allowed
        if unknown:
            raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))} "
                                f"(allowed: {', '.join(sorted(allowed))})")
        return data

    # -- handlers: public and sessions ---------------------------------------------------------
    def openapi(self, call: Call) -> Response:
        return Response(body=OPENAPI.read_bytes(), content_type="application/json", charset=None)

    def login(self, call: Call) -> Response:
        password = self.body(call).get("password")
        if not isinstance(password, str) or not password:
            raise ApiError(400, "send {\"password\": \"...\"}")
        if not self.password_ok(call, password):
            log.warning("failed Guest Board login from %s", call.caller.describe())
            raise ApiError(401, "wrong password")
        if not self.auth.password_chosen():
            try:
                self.auth.adopt_password()      # the household has it: no set-up offer (setup.py)
            except StorageError:
                log.warning("could not record that the first password was taken over (storage)")
        log.info("Guest Board login from %s", call.caller.describe())
        return self.new_session(call)

    def new_session(self, call: Call, role: str = "admin", **panel) -> Response:
        """A session for the caller (admin, or a panel's: panels.py): the cookie and the
        answer with its CSRF token."""
        sid, csrf = self.auth.create_session(call.client, role=role, **panel)
        lifetime = self.auth.session_lifetime if role != PANEL else int(self.auth.panel_lifetime)
        out = {"role": role, "csrf": csrf, "expires_in": lifetime}
        if role == PANEL:
            out["panel"] = panel.get("kind", "")
        resp = json_response(out)
        resp.set_cookie(COOKIE, sid, max_age=lifetime, path=f"{PREFIX}/", httponly=True,
                        samesite="strict", secure=self._is_https(call.req))
        return resp

    def password_ok(self, call: Call, password: str) -> bool:
        """The admin password check behind every door that takes it (login, a password
        change): limited per caller (a device whatever address it uses, a /64 for other
        IPv6 sources), each attempt charged before it is hashed, the hashing off the event
        loop. 429 when the caller is over the limit, 503 when too many checks are queued."""
        key = call.caller.key
        wait = self.limiter.begin(key)
        if wait:
            who = "this device" if call.caller.is_device else call.client
            raise ApiError(429, f"too many wrong passwords from {who}; try again in {int(wait) + 1} s",
                           {"Retry-After": str(int(wait) + 1)})
        try:
            ok = self.auth.check_password(password)
        except Busy as exc:
            raise ApiError(503, str(exc), {"Retry-After": "5"}) from None
        if ok:
            self.limiter.succeeded(key)
        return ok

    def logout(self, call: Call) -> Response:
        assert call.principal is not None       # a "read" route: the app checked who calls
        if call.principal.kind == "session":
            self.auth.end_session(call.principal)
        resp = json_response({"logged_out": True})
        resp.delete_cookie(COOKIE, path=f"{PREFIX}/")
        return resp

    def session(self, call: Call) -> Response:
        p = call.principal
        assert p is not None                    # a "read" route: the app checked who calls
        out = {"kind": p.kind, "role": p.role}
        if p.kind == "session":
            out["csrf"] = p.csrf
        if p.role == PANEL:
            out["panel"] = p.panel
            out["set_up"] = self.auth.password_chosen()   # a panel decides once the household has its password
        out["storage"] = self.ctx.state.storage()
        return json_response(out)

    # -- handlers: seed Table 4.1 ------------------------------------------------------------
    def _decision(self, name: str):
        def handler(call: Call, mac: str) -> Response:
            mac = self.mac(mac)
            self.not_self(call, mac)
            if call.principal is not None and call.principal.role == PANEL and not self.auth.password_chosen():
                # The first hour belongs to the household's own password (setup.py): a
                # panel's decision would close the set-up offer for it.
                raise ApiError(409, "set this router up first: plug a computer into one of its ports and open "
                                    "any web page on it; the panel lets devices in after that")
            return json_response(self.command(name, mac=mac))
        handler.__name__ = name
        return handler

    def status(self, call: Call, mac: str | None = None) -> Response:
        if mac is None:
            return json_response(self.command("status"))
        return json_response(self.command("status", mac=self.mac(mac)))

    def simple(self, name: str):
        def handler(call: Call) -> Response:
            return json_response(self.command(name))
        handler.__name__ = name
        return handler

    def _need_dns(self, name: str) -> None:
        if name not in self.ctx.commands.names():
            raise ApiError(503, "DNS rules are not available: the dns component is not loaded "
                                "(add \"dns\" to [controller] components)")

    def _dns(self, name: str):
        def handler(call: Call, mac: str, domain: str) -> Response:
            self._need_dns(name)
            mac = self.rules_owner(mac)
            if not DOMAIN.match(domain):
                raise ApiError(400, f"not a domain name: {domain!r}")
            self.not_self(call, mac)
            extra = {}
            if name != "remove-dns-rule" and self.body(call).get("schedule"):    # when it counts
                extra["schedule"] = self.body(call)["schedule"]
            return json_response(self.command(name, mac=mac, domain=domain.lower().rstrip("."), **extra))
        handler.__name__ = name
        return handler

    def _need_usage(self) -> None:
        if "usage" not in self.ctx.commands.names():
            raise ApiError(503, "usage is not available: the usage component is not loaded "
                                "(add \"usage\" to [controller] components)")

    def usage(self, call: Call) -> Response:
        self._need_usage()
        return json_response(self.command("usage", period=call.req.GET.get("period", "month"),
                                          by=call.req.GET.get("by", "device")))

    def usage_device(self, call: Call, mac: str) -> Response:
        """One device's traffic over the last hour/day/month (the panel's chart)."""
        self._need_usage()
        mac = self.known_mac(mac)
        return json_response(self.command("usage-device", mac=mac, span=call.req.GET.get("range", "day")))

    def usage_cap(self, call: Call) -> Response:
        self._need_usage()
        if call.req.method != "POST":
            return json_response(self.command("usage-cap"))
        data = self.body(call)
        unknown = set(data) - {"cap", "billing_day"}
        if unknown:
            raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))} (allowed: cap, billing_day)")
        if not data:
            raise ApiError(400, "send cap (bytes, or e.g. \"500G\") and/or billing_day (1-31)")
        return json_response(self.command("usage-cap", **data))

    def _usage_post(self, name: str, fields: tuple[str, ...]):
        def handler(call: Call) -> Response:
            self._need_usage()
            data = self.body(call)
            unknown = set(data) - set(fields)
            if unknown:
                raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))} (allowed: {', '.join(fields)})")
            for key in ("mac", "owner", "period", "action"):
                if data.get(key) is not None and not isinstance(data[key], str):
                    raise ApiError(400, f"{key} must be a string")
            self.not_self_text(call, data.get("mac"))          # its own allowance, its own lift
            self.not_own_owner(call, data.get("owner"))
            return json_response(self.command(name, **data))
        handler.__name__ = name
        return handler

    def usage_csv(self, call: Call) -> Response:
        self._need_usage()
        text = self.command("usage-csv", month=call.req.GET.get("month", ""))
        resp = Response(text, content_type="text/csv", charset="utf-8")
        resp.headers["Content-Disposition"] = 'attachment; filename="usage.csv"'
        return resp

    def metrics(self, call: Call) -> Response:
        """Prometheus text exposition format 0.0.4 (components/metrics)."""
        if "metrics" not in self.ctx.commands.names():
            raise ApiError(503, "metrics are not available: the metrics component is not loaded "
                                "(add \"metrics\" to [controller] components)")
        resp = Response(self.command("metrics").encode())
        resp.headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
        return resp

    # -- notifications and webhooks (components/notify) ---------------------------------------
    def _need_notify(self) -> None:
        if "notifications" not in self.ctx.commands.names():
            raise ApiError(503, "notifications are not available: the notify component is not loaded "
                                "(add \"notify\" to [controller] components)")

    def _notify(self, name: str):
        def handler(call: Call) -> Response:
            self._need_notify()
            return json_response(self.command(name))
        handler.__name__ = name
        return handler

    def notifications(self, call: Call) -> Response:
        self._need_notify()
        unread = call.req.GET.get("unread", "") in ("1", "true", "yes")
        return json_response(self.command("notifications", limit=call.req.GET.get("limit", "100"), unread=unread))

    def notifications_read(self, call: Call) -> Response:
        self._need_notify()
        data = self.body(call) if call.req.body else {}
        if not isinstance(data, dict):
            raise ApiError(400, "send {\"ids\": [...]} or nothing (all)")
        unknown = set(data) - {"ids"}
        if unknown:
            raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))} (allowed: ids; none = all)")
        return json_response(self.command("notifications-read", ids=data.get("ids")))

    def webhook_add(self, call: Call) -> Response:
        self._need_notify()
        data = self.body(call)
        if "url" not in data or not set(data) <= {"url", "allow_local"}:
            raise ApiError(400, "send {\"url\": \"https://...\"} and, to allow an address on your own network, "
                                "\"allow_local\": true")
        if not isinstance(data.get("allow_local", False), bool):
            raise ApiError(400, "allow_local must be true or false")
        return json_response(self.command("webhook-add", url=data["url"], allow_local=data.get("allow_local", False)))

    def webhook_remove(self, call: Call, hook_id: str) -> Response:
        self._need_notify()
        return json_response(self.command("webhook-remove", id=hook_id))

    def webhook_deliveries(self, call: Call) -> Response:
        self._need_notify()
        return json_response(self.command("webhook-deliveries", limit=call.req.GET.get("limit", "100")))

    def dns_rules(self, call: Call, mac: str) -> Response:
        self._need_dns("dns-rules")
        return json_response(self.command("dns-rules", mac=self.rules_owner(mac)))

    def meta(self, call: Call, mac: str) -> Response:
        mac = self.mac(mac)
        data = self.body(call)
        unknown = set(data) - {"name", "owner", "type"}
        if unknown:
            raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))} (allowed: name, owner, type)")
        for key, value in data.items():
            if value is not None and not isinstance(value, str):
                raise ApiError(400, f"{key} must be a string")
        return json_response(self.command("set-meta", mac=mac, **data))

    # -- handlers: the Guest Board ---------------------------------------------------------------
    def devices(self, call: Call) -> Response:
        return json_response(self.board.all_views())

    def device(self, call: Call, mac: str) -> Response:
        mac = self.mac(mac)
        device = self.ctx.state.get_device(mac)
        if device is None:
            raise ApiError(404, f"no device with MAC {mac} has been seen")
        view = self.board.view(device)
        view["alerts"] = self.board.alerts(mac)
        view["dns_rules"] = (self.command("dns-rules", mac=mac)
                             if "dns-rules" in self.ctx.commands.names() else None)
        return json_response(view)

    def events(self, call: Call) -> Response:
        from .stream import format_event
        principal = call.principal
        assert principal is not None            # a "read" route: the app checked who calls
        # The snapshot is built only for a stream the limits let in (it is the costly part).
        snapshot = lambda: [format_event("snapshot", {"devices": self.board.all_views()})]  # noqa: E731
        try:
            body = self.stream.open(snapshot, lambda: self.auth.still_valid(principal),
                                    owner=f"{principal.kind}:{principal.ident}", admin=principal.is_admin)
        except StreamLimit as exc:
            raise ApiError(429, str(exc), {"Retry-After": "30"}) from None
        # eventlet's WSGI server would otherwise buffer small writes.
        call.req.environ["eventlet.minimum_write_chunk_size"] = 0
        resp = Response(app_iter=body, content_type="text/event-stream", charset=None)
        resp.headers["Cache-Control"] = "no-cache"
        resp.headers["X-Accel-Buffering"] = "no"
        return resp

    def hwdb(self, call: Call) -> Response:
        query = call.req.GET.get("query", "")
        if not query:
            raise ApiError(400, "send the query in ?query=SELECT ...")
        if len(query) > MAX_HWDB_QUERY:
            raise ApiError(400, f"query longer than {MAX_HWDB_QUERY} characters")
        text = query.strip().rstrip(";").strip()
        if not SELECT.match(text + " ") or ";" in text:
            raise ApiError(400, "only one read-only SELECT query is allowed")
        if not self.ctx.config.hwdb_enabled or self.hwdb_client_factory is None:
            raise ApiError(503, "hwdb is not enabled on this router ([hwdb] enabled = false)")
        try:
            client = self.hwdb_client_factory()
        except Exception as exc:  # the client package missing or broken
            raise ApiError(503, f"hwdb client unavailable: {exc}") from None
        try:
            result = client.query(text)
        except Exception as exc:
            timeout = type(exc).__name__ == "HwdbTimeout"
            raise ApiError(504 if timeout else 400, f"hwdb: {getattr(exc, 'message', exc)}") from None
        return json_response({"columns": list(result.columns), "types": list(result.types),
                              "rows": list(result.rows)})

    # -- handlers: tokens ---------------------------------------------------------------------
    def tokens(self, call: Call) -> Response:
        return json_response(self.command("token-list"))

    def create_token(self, call: Call) -> Response:
        data = self.body(call)
        unknown = set(data) - {"name", "role"}
        if unknown:
            raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))} (allowed: name, role)")
        if not isinstance(data.get("name"), str):
            raise ApiError(400, "send {\"name\": \"...\", \"role\": \"admin\" | \"read-only\"}")
        resp = json_response(self.command("token-create", name=data["name"],
                                          role=data.get("role", "read-only")))
        resp.status = 201
        return resp

    def revoke_token(self, call: Call, token_id: str) -> Response:
        return json_response(self.command("token-revoke", id=token_id))


def json_response(data, status: int = 200) -> Response:
    body = json.dumps(data, default=str).encode()
    return Response(body=body, status=status, content_type="application/json", charset=None)


def error(status: int, message: str) -> Response:
    return json_response({"error": message, "status": status}, status)
