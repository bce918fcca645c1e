"""What every route module of the ws.v1 API shares, with no import of the app itself:
the error a handler raises, the request as a handler sees it, and JSON answers."""
from __future__ import annotations

import json
from dataclasses import dataclass

from webob import Request, Response

from ...callers import Caller
from .auth import Principal
from .model import Model


class ApiError(Exception):
    """An answer other than success: its status, the household-readable message (the
    body's `error`) and any headers (Retry-After, Allow, WWW-Authenticate)."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


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


def _plain(value):
    if isinstance(value, Model):
        return value.as_dict()
    return str(value)


def json_response(data, status: int = 200) -> Response:
    body = json.dumps(data, default=_plain).encode()
    return Response(body=body, status=status, content_type="application/json", charset=None)


def error(status: int, message: str) -> Response:
    return json_response({"error": message, "status": status}, status)
