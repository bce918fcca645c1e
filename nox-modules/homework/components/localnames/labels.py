"""From a device's name to a DNS label, and which device gets which label.

A label is what RFC 1123 allows a host name part to be: lowercase a-z, 0-9 and '-', at
most 63 characters, no '-' at either end. Names stay free text on the board; only this
derivation cleans them ("Tom's Laptop" -> "toms-laptop", "Zoë" -> "zoe"). A name with
nothing usable left gives no label at all.

Conflicts are settled by one fixed order, so the same devices always get the same labels:
a given name (`homework name`, the board) beats a DHCP hostname, then the device first
seen wins, then the lower MAC. The winner keeps `tv`; the others get `tv-2`, `tv-3`, ...
in that order, never taking a label that is some other device's own.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...routernames import MAX_LABEL, label_of, reserved

GIVEN, HOSTNAME = 0, 1    # where a device's label comes from; the lower wins a conflict


def dns_label(text: str) -> str | None:
    """The DNS label a free-text name gives, or None if it has no usable characters or is
    a name of the router's own (routernames.py: a device must not become the router, the
    household's proxy auto-configuration (WPAD) or tunnel (ISATAP) server, localhost or a
    satellite just by picking that host name)."""
    label = label_of(text)
    if not label or reserved(label):
        return None
    return label


@dataclass(frozen=True)
class Candidate:
    mac: str
    base: str          # the label the device's own name gives
    source: int        # GIVEN or HOSTNAME
    first_seen: float


def candidate(mac: str, name: str, hostname: str, first_seen: float) -> Candidate | None:
    """A device's claim: its given name's label, else its DHCP hostname's, else none."""
    for text, source in ((name, GIVEN), (hostname, HOSTNAME)):
        label = dns_label(text or "")
        if label:
            return Candidate(mac, label, source, first_seen)
    return None


def _suffixed(base: str, n: int) -> str:
    suffix = f"-{n}"
    return base[:MAX_LABEL - len(suffix)].rstrip("-") + suffix


def assign(candidates: list[Candidate]) -> dict[str, str]:
    """mac -> label, every label distinct (see the module's docstring for the order)."""
    ordered = sorted(candidates, key=lambda c: (c.source, c.first_seen, c.mac))
    taken: dict[str, str] = {}          # label -> mac
    losers: list[Candidate] = []
    for c in ordered:
        if c.base in taken:
            losers.append(c)
        else:
            taken[c.base] = c.mac
    # Every device's own label is taken before any suffix is handed out, so a later `tv-2`
    # never pushes out a device whose own name is "tv-2".
    for c in losers:
        n = 2
        while _suffixed(c.base, n) in taken:
            n += 1
        taken[_suffixed(c.base, n)] = c.mac
    return {mac: label for label, mac in taken.items()}
