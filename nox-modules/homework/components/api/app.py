"""The ws.v1 web service (seed Table 4.1) as a WSGI application (WebOb for requests and
responses). Every method calls the controller's command table, the same calls the CLI
makes over the control socket; responses are what `homework --json ...` prints.

Routes are declared in route groups (routes.py; catalog.py lists the API's own), each with
its access, its request and answer models and its errors; this module serves them.

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
4. a session-authenticated request other than GET carries the session's CSRF token in
   X-CSRF-Token -> 403;
5. a device may not change anything about itself (its access, DNS rules, pauses,
   schedules, limits, priority): the routes that declare `own_access` refuse the
   caller's own MAC (in the path or the body) and its owner -> 403.
"""
from __future__ import annotations

import hmac
import json
import logging
import re
import types
import typing
from dataclasses import dataclass
from collections.abc import Callable

from webob import Request, Response

from ... import actor, wording
from ...callers import DEVICE, STRANGER, Caller
from ...commands import CommandError
from ...macaddr import BadMac, normalize
from ...state import StorageError
from ...values import BadValue, parse_json
from .auth import PANEL, Busy, Principal
from .http import ApiError, Call, error, json_response
from .model import Invalid, check_answer, is_model, parse
from .routes import Access, Operation, param

__all__ = ["ApiApp", "ApiError", "Call", "error", "json_response"]

log = logging.getLogger("homework.api")

PREFIX = "/ws.v1"
COOKIE = "hw_session"
HOUSEHOLD = "household"     # in place of a MAC in the DNS rule routes: the household's rules
SAFE_METHODS = ("GET", "HEAD")


@dataclass
class Route:
    """A declared route, mounted: its operation, URL pattern, bound handler and body limit."""
    op: Operation
    pattern: re.Pattern
    handler: Callable
    max_body: int
    before: Callable | None = None

    @property
    def method(self) -> str:
        return self.op.method

    @property
    def access(self) -> str:
        return self.op.access.value


class AnswerMismatch(Exception):
    """With check_answers on (tests): an answer that does not fit its declared shape."""


class ApiApp:
    def __init__(self, ctx, auth, limiter, board, stream, *, groups, hwdb_client_factory=None,
                 trusted_proxies=("127.0.0.1", "::1"), check_answers: bool = False):
        self.ctx = ctx
        self.auth = auth
        self.limiter = limiter
        self.board = board
        self.stream = stream
        self.hwdb_client_factory = hwdb_client_factory
        self.trusted_proxies = set(trusted_proxies)
        self.check_answers = check_answers
        self.routes: list[Route] = []
        self.groups: dict[type, object] = {}
        for group in groups:
            self.mount(group)

    def mount(self, group) -> object:
        """Serve a RouteGroup's routes (its __init__ gets this app); returns the instance."""
        instance = group(self)
        for op in group.operations():
            for name in op.path_names():
                param(name, op)          # an undeclared parameter fails here, at start
            limit = op.max_body(self) if callable(op.max_body) else op.max_body
            before = getattr(instance, op.before) if op.before else None
            self.routes.append(Route(op, op.pattern(PREFIX), getattr(instance, op.handler_name), limit, before))
        self.groups[group] = instance
        return instance

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
        except AnswerMismatch as exc:
            log.error("API %s %s: %s", req.method, req.path_info, exc)
            resp = error(500, str(exc))
        except Exception:
            log.exception("API %s %s failed", req.method, req.path_info)
            resp = error(500, "internal error (see the controller log)")
        resp.headers.setdefault("Cache-Control", "no-store")
        resp.headers["X-Content-Type-Options"] = "nosniff"
        return resp(environ, start_response)

    def handle(self, req: Request) -> Response:
        route, params = self._match(req)
        op = route.op
        caller = self.ctx.callers.resolve(self.client_address(req))
        if op.access is not Access.CALLER:     # about the caller, whatever its state: no gate
            self.device_gate(caller, asking=op.access is Access.ASKING)
        principal = self.authenticate(req)
        if op.access not in (Access.PUBLIC, Access.ASKING, Access.CALLER):
            if principal is None:
                raise ApiError(401, "credentials required: log in on the Guest Board or send "
                                    "'Authorization: Bearer <token>'",
                               {"WWW-Authenticate": 'Bearer realm="homework"'})
            if op.access is Access.ADMIN and not principal.is_admin:
                raise ApiError(403, f"this needs the admin role; these credentials are {principal.role}")
            if op.access is Access.PANEL and not principal.may_decide:
                raise ApiError(403, f"this needs the admin role (or a panel's); these credentials are {principal.role}")
            if req.method not in SAFE_METHODS and principal.kind == "session":
                sent = req.headers.get("X-CSRF-Token", "")
                if not hmac.compare_digest(sent.encode(), principal.csrf.encode()):
                    raise ApiError(403, "missing or wrong X-CSRF-Token for this session")
        if req.content_length and req.content_length > route.max_body:
            raise ApiError(413, f"request body larger than {route.max_body} bytes")
        return self.run(route, Call(req, principal, caller), params)

    def run(self, route: Route, call: Call, raw: dict) -> Response:
        """The declared steps every route takes before and after its handler."""
        op = route.op
        if op.needs is not None and op.needs.command not in self.ctx.commands.names():
            raise ApiError(503, op.needs.message)
        if route.before is not None:
            route.before(call)
        kwargs = {}
        for name, text in raw.items():
            spec = param(name, op)
            kwargs[name] = spec.read(self, text) if spec.read else text
        if op.own_access in op.path_names():
            self.not_self(call, kwargs[op.own_access])
        if op.query is not None:
            kwargs["query"] = self.read_query(call, op)
        if op.body is not None:
            kwargs["body"] = self.read_body(call, op)
            if op.own_access and op.own_access.startswith("body."):
                self._not_self_in(call, _value(kwargs["body"], op.own_access[5:]))
                self.not_own_owner(call, _value(kwargs["body"], "owner"))
        with actor.acting(self.who(call)):      # a device's story says who let it in
            result = route.handler(call, **kwargs)
        resp = result if isinstance(result, Response) else json_response(result, op.status)
        if self.check_answers:
            self._check(op, resp)
        return resp

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

    # -- requests in, answers out ---------------------------------------------------------------
    def read_body(self, call: Call, op: Operation):
        """The JSON body as the route's declared model (an empty body is {} unless the route
        requires one); what does not fit is a 400 that says what and how."""
        raw = call.req.body
        usage = op.usage or next((m.usage for m in _members(op.body) if is_model(m)), "")
        if not raw:
            if op.body_required:
                raise ApiError(400, f"send {usage}" if usage else "this needs a JSON request body")
            data = {}
        else:
            try:
                data = parse_json(raw)
            except BadValue as exc:
                raise ApiError(400, str(exc)) from None
        if is_model(op.body) and not isinstance(data, dict):
            raise ApiError(400, "request body must be a JSON object")
        try:
            return parse(op.body, data)
        except Invalid as exc:
            raise ApiError(400, f"{exc}; send {usage}" if usage else str(exc)) from None

    def read_query(self, call: Call, op: Operation):
        params = call.req.GET
        if op.query.extra == "forbid":
            fields = op.query.fields()
            unknown = sorted(set(params) - set(fields))
            if unknown:
                raise ApiError(400, f"unknown parameter(s) {', '.join(unknown)} (allowed: {', '.join(fields)})")
            for key in params:
                if len(params.getall(key)) > 1:
                    raise ApiError(400, f"parameter {key} given more than once")
        data = {key: params.get(key) for key in op.query.fields() if key in params}
        try:
            return op.query.parse(data)
        except Invalid as exc:
            raise ApiError(400, str(exc)) from None

    def _check(self, op: Operation, resp: Response) -> None:
        if op.answer is None or resp.status_int != op.status or resp.content_type != "application/json":
            return
        problem = check_answer(op.answer, json.loads(resp.body))
        if problem:
            raise AnswerMismatch(f"the answer to {op.method} {op.path} does not fit its declared shape: {problem}")

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

    def is_https(self, req: Request) -> bool:
        if req.remote_addr in self.trusted_proxies:
            proto = req.headers.get("X-Forwarded-Proto", "")
            if proto:
                return proto.lower() == "https"
        return req.scheme == "https"

    @staticmethod
    def not_self(call: Call, mac) -> None:
        if call.client_mac and call.client_mac == mac:
            raise ApiError(403, "a device cannot change its own access; ask from another device")

    def not_own_owner(self, call: Call, owner) -> None:
        """A device may not change what applies to its owner's devices (itself among them)."""
        if call.client_mac and isinstance(owner, str) and owner:
            device = self.ctx.state.get_device(call.client_mac)
            if device is not None and device.owner and device.owner.casefold() == owner.casefold():
                raise ApiError(403, f"this device belongs to {device.owner}: it cannot change what applies to "
                                    "its owner's devices; ask from another device")

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

    def new_session(self, call: Call, role: str = "admin", **panel):
        """A session for the caller (admin, or a panel's: panels.py): the cookie and the
        answer with its CSRF token."""
        sid, csrf = self.auth.create_session(call.client, role=role, **panel)
        lifetime = self.auth.session_lifetime if role != PANEL else int(self.auth.panel_lifetime)
        out = {"role": role, "csrf": csrf, "expires_in": lifetime}
        if role == PANEL:
            out["panel"] = panel.get("kind", "")
        resp = json_response(out)
        resp.set_cookie(COOKIE, sid, max_age=lifetime, path=f"{PREFIX}/", httponly=True,
                        samesite="strict", secure=self.is_https(call.req))
        return resp

    def _not_self_in(self, call: Call, value) -> None:
        """The caller's own MAC anywhere in a body's field refuses the call (a list too)."""
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and text:
                try:
                    self.not_self(call, normalize(text))
                except BadMac:
                    pass            # the command names a bad MAC, with nothing applied

    # -- helpers for the route groups ------------------------------------------------------------
    def command(self, name: str, /, **kwargs):
        try:
            return self.ctx.commands.call(name, **kwargs)
        except CommandError as exc:
            raise ApiError(exc.status, str(exc)) from None

    def has(self, command: str) -> bool:
        return command in self.ctx.commands.names()

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


def _members(tp) -> tuple:
    """The alternatives of a union type, or the type itself."""
    return typing.get_args(tp) if isinstance(tp, types.UnionType) else (tp,)


def _value(body, name: str):
    return getattr(body, name, None) if not isinstance(body, (dict, list)) else (
        body.get(name) if isinstance(body, dict) else body)
