"""Who is calling: the OpenAPI document, Guest Board logins and sessions, API tokens.

    GET  /ws.v1/openapi.json                this API's document (public)
    POST /ws.v1/login   {"password"}        -> {role, csrf, expires_in}; sets the session cookie
    POST /ws.v1/logout                      -> {logged_out}
    GET  /ws.v1/session                     -> {kind, role, csrf?, storage}
    GET  /ws.v1/tokens | POST /ws.v1/tokens {"name", "role"} | POST /ws.v1/tokens/{id}/revoke
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from webob import Response

from ...state import StorageError
from .auth import PANEL
from .http import ApiError, json_response
from .model import Model, field
from .routes import Access, Param, RouteGroup, get, post

log = logging.getLogger("homework.api")

OPENAPI = Path(__file__).with_name("openapi.json")
Role = Literal["admin", "read-only"]


class LoginBody(Model):
    """The Guest Board's admin password."""
    extra = "ignore"
    usage = '{"password": "..."}'
    password: str = field(min_length=1)


class LoginAnswer(Model):
    role: Literal["admin", "panel"] = field(doc="panel: a panel's session (POST /panels/session)")
    csrf: str = field(doc="send it in X-CSRF-Token with every change made in this session")
    expires_in: int = field(doc="seconds the session lasts")
    panel: Literal["screen", "tablet"] = field(optional=True, doc="a panel's session: which kind")


class Storage(Model):
    """Whether the router's state can be written (the board shows a banner when not)."""
    full: bool
    writable: bool
    error: str = field(doc="why writes fail; '' when they work")
    since: float = field(doc="epoch seconds writes started failing; 0 when they work")
    queued_writes: int = field(doc="writes kept in memory until they can be saved")
    dropped_writes: int


class SessionAnswer(Model):
    """Who is calling, and the state of the router's storage."""
    kind: Literal["session", "token"]
    role: Literal["admin", "read-only", "panel"] = field(doc="panel: the router's screen or a wall tablet, "
                                                              "which may let devices in or out and read")
    csrf: str = field(optional=True, doc="sessions only")
    panel: Literal["screen", "tablet"] = field(optional=True, doc="a panel's session: which kind")
    set_up: bool = field(optional=True, doc="a panel's session: the household has set the router up (a panel "
                                            "decides only then)")
    storage: Storage


class LoggedOut(Model):
    logged_out: Literal[True]


class TokenBody(Model):
    usage = '{"name": "...", "role": "admin" | "read-only"}'
    name: str = field(doc="1 to 64 printable characters", example="backup script")
    role: str = field("read-only", doc="admin or read-only")


class Token(Model):
    """An API token, without its secret."""
    id: str = field(doc="8 hex digits")
    name: str
    role: Role
    created: float
    last_used: float = field(doc="epoch seconds, 0 = never")
    revoked: float = field(doc="epoch seconds, 0 = in force")


class NewToken(Model):
    """A new API token: the secret is in this answer only."""
    id: str
    name: str
    role: Role
    created: float
    token: str = field(doc="send it as 'Authorization: Bearer <token>'")


TOKEN_ID = Param(str, "an API token's id (8 hex digits)", example="0a1b2c3d")


class SessionRoutes(RouteGroup):
    tag = "sessions"

    @get("/openapi.json", Access.PUBLIC, "This document", name="openapi", slash=False,
         answer=dict[str, Any])
    def openapi(self, call):
        return Response(body=OPENAPI.read_bytes(), content_type="application/json", charset=None)

    @post("/login", Access.PUBLIC, "Log in to the Guest Board with the admin password: sets an HttpOnly, "
          "SameSite=Strict session cookie; send the returned csrf in X-CSRF-Token with every change",
          body=LoginBody, body_required=True, answer=LoginAnswer, slash=False,
          errors={401: "wrong password",
                  429: "too many wrong passwords from this device (or address); see Retry-After",
                  503: "too many password checks under way; see Retry-After"})
    def login(self, call, body):
        api = self.api
        if not api.password_ok(call, body.password):
            log.warning("failed Guest Board login from %s", call.caller.describe())
            raise ApiError(401, "wrong password")
        if not api.auth.password_chosen():
            try:
                api.auth.adopt_password()      # the household has it: no set-up offer (setup.py)
            except StorageError:
                log.warning("could not record that the first password was taken over (storage)")
        log.info("Guest Board login from %s", call.caller.describe())
        return api.new_session(call)

    @post("/logout", Access.READ, "End the session", answer=LoggedOut, slash=False)
    def logout(self, call):
        if call.principal.kind == "session":
            self.api.auth.end_session(call.principal)
        resp = json_response({"logged_out": True})
        resp.delete_cookie("hw_session", path="/ws.v1/")
        return resp

    @get("/session", Access.READ, "Who am I", answer=SessionAnswer, slash=False)
    def session(self, call):
        p = call.principal
        out = {"kind": p.kind, "role": p.role}
        if p.kind == "session":
            out["csrf"] = p.csrf
        if p.role == PANEL:
            out["panel"] = p.panel
            out["set_up"] = self.api.auth.password_chosen()   # a panel decides once the household has its password
        out["storage"] = self.api.ctx.state.storage()
        return out

    @get("/tokens", Access.ADMIN, "List API tokens (admin)", answer=list[Token])
    def tokens(self, call):
        return self.api.command("token-list")

    @post("/tokens", Access.ADMIN, "Create an API token (admin); the secret is shown only in this answer",
          name="create_token", body=TokenBody, body_required=True, answer=NewToken, status=201,
          errors={400: "bad name or role"})
    def create_token(self, call, body):
        return self.api.command("token-create", name=body.name, role=body.role)

    @post("/tokens/{token_id}/revoke", Access.ADMIN, "Revoke an API token (admin)", name="revoke_token",
          answer=Token, errors={404: "no such token"}, params={"token_id": TOKEN_ID})
    def revoke_token(self, call, token_id):
        return self.api.command("token-revoke", id=token_id)
