"""The ws.v1 route registry: every route is declared once, beside its handler, with what
the API needs to serve it and what the OpenAPI document says about it.

    class ScheduleRoutes(RouteGroup):
        tag = "schedules"

        @post("/pause/{mac}", Access.ADMIN, "Pause a device's internet for some minutes",
              body=PauseBody, answer=PauseFacts, own_access="mac", needs=SCHEDULES,
              params={"mac": KNOWN_MAC}, errors={404: NOT_SEEN})
        def pause(self, call, mac, body):
            return self.api.command("pause", mac=mac, minutes=body.minutes)

A group is a class: its routes are methods, the state they share is made in __init__
(which gets the ApiApp), and it is mounted by passing it to the ApiApp (catalog.py lists
the API's own groups; a component may bring more). No route module imports the app.

Declared per route, and enforced by the app rather than by each handler:
- `access`: public, asking (public, and a pending LAN device may call it: a satellite
  asking to pair), read (a token or session of either role) or admin;
- CSRF: a session's request other than GET/HEAD carries X-CSRF-Token (every route);
- `own_access`: the parameter or body field naming the device the call changes: a LAN
  device may not call it about itself ("mac" for the path, "body.mac", "body.macs");
- `needs`: the command (and so the component) without which the route answers 503;
- `body`, `query`: models the request is parsed into (a 400 names what does not fit);
- `answer`: the success body's type (the tests check every answer against it);
- `board`: the Guest Board's name for the route, when not its operationId
  (guestboard-ui/js/routes.js is generated from these declarations: boardroutes.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from collections.abc import Callable
from typing import Annotated, Any, ClassVar

from .model import Field

MAX_BODY = 16 * 1024


class Access(StrEnum):
    PUBLIC = "public"
    ASKING = "asking"
    READ = "read"
    PANEL = "panel"         # an admin, or a panel's session (the router's screen, a wall tablet)
    ADMIN = "admin"
    CALLER = "caller"       # any device of the home, in any state, without credentials: about itself


@dataclass(frozen=True)
class Needs:
    """A route that needs a controller command: without it, 503 with this message."""
    command: str
    message: str


def needs(command: str, what: str, component: str, how: str = "") -> Needs:
    """`what` are not available: the `component` component is not loaded (how to load it)."""
    how = how or f"add \"{component}\" to [controller] components"
    return Needs(command, f"{what} not available: the {component} component is not loaded ({how})")


@dataclass(frozen=True)
class Param:
    """A path parameter: its type and meaning, and how the app reads it before the handler
    sees it (`read(api, text)`, raising ApiError; None: the text as it came)."""
    schema: Any
    doc: str
    read: Callable | None = None
    example: str | None = None


@dataclass
class Operation:
    method: str
    path: str                          # the OpenAPI path: "/devices/{mac}"
    access: Access
    summary: str
    body: Any = None                   # a Model (or a type) the JSON body is parsed into
    body_required: bool = False        # an empty body is refused instead of parsed as {}
    query: Any = None                  # a Model of the query string
    answer: Any = None                 # the success body's type (None: no declared JSON body)
    status: int = 200
    errors: dict[int, str] = field(default_factory=dict)
    own_access: str | None = None
    needs: Needs | None = None
    params: dict[str, Param] = field(default_factory=dict)
    max_body: int | Callable = MAX_BODY   # or api -> int, for a limit from the configuration
    content_type: str = "application/json"
    also: str = ""                     # another media type the answer may take (a query asks for it: CSV)
    request_type: str = "application/json"
    slash: bool = True                 # a trailing slash is accepted
    name: str = ""                     # operationId (default: the handler's name)
    board: str = ""                    # the Guest Board's name for it in js/routes.js (default: the operationId)
    description: str = ""              # longer text for the document (default: the handler's docstring)
    example: Any = None
    events: dict | None = None         # a stream's events: name -> the model of its data (x-events)
    usage: str = ""                    # the request's right form when it does not fit (default: the body model's)
    before: str = ""                   # a group method run before the body is read (a rate limit: call -> None)
    group: type[RouteGroup] | None = None
    handler_name: str = ""

    def pattern(self, prefix: str) -> re.Pattern:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.path))
        return re.compile(f"^{re.escape(prefix)}{regex}{'/?' if self.slash else ''}$")

    def path_names(self) -> list[str]:
        return re.findall(r"\{(\w+)\}", self.path)


def route(method: str, path: str, access: Access, summary: str, **kw) -> Callable:
    """Declare a route on a RouteGroup method; one method may serve several routes."""
    def mark(fn):
        fn.__dict__.setdefault("__routes__", []).append(Operation(method, path, Access(access), summary, **kw))
        return fn
    return mark


def get(path: str, access: Access, summary: str, **kw) -> Callable:
    return route("GET", path, access, summary, **kw)


def post(path: str, access: Access, summary: str, **kw) -> Callable:
    return route("POST", path, access, summary, **kw)


def delete(path: str, access: Access, summary: str, **kw) -> Callable:
    return route("DELETE", path, access, summary, **kw)


class RouteGroup:
    """Routes that belong together (one component's, one page's) and the state they share."""
    tag: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def __init__(self, api):
        self.api = api

    @classmethod
    def operations(cls) -> list[Operation]:
        out = []
        for klass in reversed(cls.__mro__):
            for attr, fn in vars(klass).items():
                for op in getattr(fn, "__routes__", ()):
                    op.group = cls
                    op.handler_name = attr
                    op.name = op.name or attr
                    if not op.description and fn.__doc__:
                        op.description = " ".join(fn.__doc__.split())
                    out.append(op)
        return out


# -- path parameters used across the API: one declaration per name ---------------------------
MAC_PATTERN = r"^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$"
MacText = Annotated[str, Field(doc="MAC address, ':' or '-' separated", example="02:68:77:01:00:01")]

PARAMS: dict[str, Param] = {
    "mac": Param(MacText, "MAC address, ':' or '-' separated", example="02:68:77:01:00:01"),
    "domain": Param(str, "a domain name; *.example.com for every name under it", example="example.com"),
    "dpid": Param(str, "the satellite switch's datapath id (16 hex digits)", example="00000000000000a1"),
    "list_id": Param(str, "a blocklist's id", example="1"),
    "hook_id": Param(str, "a webhook's id", example="1"),
    "token_id": Param(str, "an API token's id (8 hex digits)", example="0a1b2c3d"),
    "id": Param(str, "a schedule's id", example="1"),
    "name": Param(str, "an application's name (URL-encoded)", example="games"),
}


def param(name: str, op: Operation) -> Param:
    """The route's own reading of a parameter, else the API-wide one."""
    if name in op.params:
        return op.params[name]
    if name not in PARAMS:
        raise KeyError(f"{op.method} {op.path}: path parameter {{{name}}} is not declared in routes.PARAMS")
    return PARAMS[name]
