"""Checking what the API and the CLI send: classes, rates, ports, domains, windows. Every
problem raises CommandError (a 400) with a message saying what is expected."""
from __future__ import annotations

import re

from ...commands import CommandError
from ..schedules.windows import DAYS, Window, WindowError, hhmm, parse_spec
from .plan import CLASSES, PortRange

MIN_KBIT, MAX_KBIT = 64, 10_000_000
MAX_PORTS = 32
MAX_DOMAINS = 32
MAX_APPS = 64
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,39}$")
DOMAIN = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)"
                    r"(\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$")
PORTS = re.compile(r"^(tcp|udp)/(\d{1,5})(?:-(\d{1,5}))?$")


def parse_class(value, what: str = "class") -> str:
    if not isinstance(value, str) or value not in CLASSES:
        raise CommandError(f"{what} must be one of {', '.join(CLASSES)}, got {value!r}")
    return value


def parse_kbit(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CommandError(f"{what} must be a whole number of kbit/s ({MIN_KBIT} to {MAX_KBIT:,}), got {value!r}")
    if not MIN_KBIT <= value <= MAX_KBIT:
        raise CommandError(f"{what} must be between {MIN_KBIT} and {MAX_KBIT:,} kbit/s, got {value}")
    return value


def parse_share(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 5 <= value <= 90:
        raise CommandError(f"high_share must be a whole percent from 5 to 90, got {value!r}")
    return value


def parse_bool(value, what: str) -> bool:
    if not isinstance(value, bool):
        raise CommandError(f"{what} must be true or false, got {value!r}")
    return value


def parse_name(value) -> str:
    if not isinstance(value, str) or not NAME.match(value.strip()):
        raise CommandError("name must be 1 to 40 letters, digits, spaces, '.', '_' or '-', "
                           f"starting with a letter or digit, got {value!r}")
    return value.strip()


def parse_ports(value) -> tuple[PortRange, ...]:
    """["udp/3478-3481", "tcp/443"] (or one comma-separated string) -> port ranges."""
    if isinstance(value, str):
        value = [v for v in value.replace(" ", ",").split(",") if v]
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CommandError("ports must be a list like [\"tcp/443\", \"udp/3478-3481\"]")
    if len(value) > MAX_PORTS:
        raise CommandError(f"ports: at most {MAX_PORTS} entries, got {len(value)}")
    out = []
    for text in value:
        found = PORTS.match(text.strip().lower())
        low = int(found.group(2)) if found else 0
        high = int(found.group(3) or low) if found else 0
        if not found or not 1 <= low <= high <= 65535:
            raise CommandError(f"ports: {text!r} is not PROTO/PORT or PROTO/LOW-HIGH "
                               "(tcp or udp, ports 1 to 65535, e.g. udp/3478-3481)")
        out.append(PortRange(found.group(1), low, high))
    return tuple(dict.fromkeys(out))


def parse_domains(value) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.replace(" ", ",").split(",") if v]
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CommandError("domains must be a list of names like [\"zoom.us\"]")
    if len(value) > MAX_DOMAINS:
        raise CommandError(f"domains: at most {MAX_DOMAINS} names, got {len(value)}")
    out = []
    for name in value:
        name = name.strip().lower().rstrip(".")
        if not DOMAIN.match(name) or "." not in name:
            raise CommandError(f"domains: {name!r} is not a domain name (e.g. zoom.us)")
        out.append(name)
    return tuple(dict.fromkeys(out))


def parse_window(value) -> Window | None:
    """None, or {"days": ["mon", ...] or "mon-fri", "start": "HH:MM", "end": "HH:MM"}."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"days", "start", "end"}:
        raise CommandError('window must be {"days": ["mon", ...], "start": "HH:MM", "end": "HH:MM"}')
    try:
        return Window.make(value.get("days"), value.get("start"), value.get("end"))
    except WindowError as exc:
        raise CommandError(f"window: {exc}") from None


def window_text(window: Window | None) -> str:
    return window.text() if window is not None else ""


def window_from_text(text: str) -> Window | None:
    return parse_spec(text)[0] if text else None


def window_view(window: Window | None) -> dict | None:
    if window is None:
        return None
    return {"days": [DAYS[d] for d in window.days], "start": hhmm(window.start), "end": hhmm(window.end)}


def matches(name: str, domains: tuple[str, ...]) -> bool:
    """A DNS answer's name belongs to an app's domain (the domain or a name under it)."""
    name = name.lower().rstrip(".")
    return any(name == d or name.endswith("." + d) for d in domains)
