"""Checks of one stored row's fields, for the rows a backup brings back: each raises
ValueError with a sentence naming the field. The manifests' `check` functions are built
from these and from the components' own parsers (schedule windows, domain names), so a
restored row passes the same tests as the command that would have stored it."""
from __future__ import annotations

from .macaddr import BadMac, normalize

OWNER = "owner:"
MAX_NUMBER = 2 ** 62          # SQLite integers are 64-bit signed


def mac(value) -> None:
    try:
        if normalize(str(value)) != value:
            raise ValueError(f"{value!r} is not a MAC in the router's form (aa:bb:cc:dd:ee:ff)")
    except BadMac as exc:
        raise ValueError(str(exc)) from None


def target(value) -> None:
    """A device's MAC, or owner:NAME."""
    if isinstance(value, str) and value.startswith(OWNER):
        text(value[len(OWNER):], "owner", empty=False)
    else:
        mac(value)


def text(value, what: str, empty: bool = True) -> None:
    if not isinstance(value, str) or (not empty and not value.strip()) or len(value) > 1000:
        raise ValueError(f"{what} must be {'' if empty else 'non-empty '}text")


def number(value, what: str, low: float = 0, high: float = MAX_NUMBER, whole: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not isinstance(value, int)) \
            or not low <= value <= high:
        raise ValueError(f"{what} must be a {'whole ' if whole else ''}number from {low} to {high}, got {value!r}")


def choice(value, what: str, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")


def option(r: dict) -> None:
    """A key/value row (the settings and dns_options tables)."""
    text(r["key"], "key", empty=False)
    text(r["value"], "value")
