"""Who is acting on the router right now, in the household's words ("the Guest Board on
Tom's laptop", "the router's screen", "the router's command line"): set by the door a
request came in by (the API, the control socket) for as long as it is served, and read by
whatever keeps a record of what was done (a device's story records who let it in).

The request's own greenlet serves it from start to end, and decisions publish their
events synchronously, so a record made while the request is served reads its door.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_acting = threading.local()      # green-local under eventlet's monkey-patching


def current() -> str:
    """Who is acting ('' when nobody said: the router itself, a timer, a test)."""
    return getattr(_acting, "who", "")


@contextmanager
def acting(who: str) -> Iterator[None]:
    before = current()
    _acting.who = who
    try:
        yield
    finally:
        _acting.who = before


def api_caller(role: str, kind: str, panel: str, device_name: str) -> str:
    """The API caller in words: the door (a panel, the Guest Board, an API token) and the
    device it called from, when it is one of the home's."""
    if panel == "screen":
        door = "the router's screen"
    elif panel == "tablet":
        door = "a wall tablet"
    elif kind == "token":
        door = f"an API token ({role})"
    elif kind == "session":
        door = "the Guest Board"
    else:
        door = "the setup page" if not role else "the API"
    return f"{door} on {device_name}" if device_name and panel != "screen" else door
