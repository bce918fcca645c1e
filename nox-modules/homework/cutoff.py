"""Why a device is cut off: one answer, for every place that has to tell or act on it.

A device is cut off when it may not use the internet: it is pending (nobody has let it
in yet), denied, or it is permitted but paused by the household, in a bedtime window, or
over its usage allowance with the action "block". Blacklisted devices are not "cut off":
they get no answer at all.

While it is cut off a device keeps its gateway's services only (routing's table 5): its
DNS answers every name with the router (homework-dnsd, nothing upstream), and its web
pages are the router's page saying why (components/api/captive.py), in the household's
words (captive_pages.py). The components that cut permitted devices (schedules, usage)
register a source here and call `changed(mac)` when one of their cuts begins or ends;
the dns component and the API hear the `cutoff` event.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from collections.abc import Callable

from . import events

log = logging.getLogger("homework.cutoff")

PENDING, DENIED, PAUSED, BEDTIME, ALLOWANCE = "pending", "denied", "paused", "bedtime", "allowance"
KINDS = (PENDING, DENIED, PAUSED, BEDTIME, ALLOWANCE)
DECIDED = {"pending": PENDING, "denied": DENIED}       # device states that are cut-offs themselves
CAPTIVE_API_PATH = "/ws.v1/captive-portal"             # RFC 8908's API (components/api/captive.py)


def captive_api_uri(router: str) -> str:
    """The captive portal API's URL a device is told (DHCP option 114, the Router
    Advertisement's captive portal option, RFC 8910): at its own gateway address (IPv6 in
    brackets), which every device reaches whatever its state."""
    host = f"[{router}]" if ":" in router else router
    return f"https://{host}{CAPTIVE_API_PATH}"


@dataclass(frozen=True)
class Cut:
    kind: str                 # one of KINDS
    until: float = 0          # epoch second it ends by itself; 0: until someone decides
    period: str = ""          # allowance: "day" or "month"

    def as_dict(self) -> dict:
        return {"kind": self.kind, "until": self.until, "period": self.period}


class Cutoffs:
    """The sources of cuts of permitted devices, asked in the order they registered
    (schedules before usage: a pause says more than an allowance)."""

    def __init__(self, state, bus):
        self.state = state
        self.bus = bus
        self._sources: list[Callable[[str], Cut | None]] = []
        self._told: dict[str, tuple[str, float]] = {}

    def add_source(self, source: Callable[[str], Cut | None]) -> None:
        self._sources.append(source)

    def of(self, mac: str) -> Cut | None:
        """Why this device is cut off now, or None (permitted and not cut, blacklisted,
        or not known)."""
        device = self.state.get_device(mac)
        if device is None:
            return None
        if device.state in DECIDED:
            return Cut(DECIDED[device.state])
        if device.state != "permitted":
            return None
        for source in self._sources:
            try:
                cut = source(mac)
            except Exception:       # one broken source must not hide the others
                log.exception("cut-off source %r failed for %s", source, mac)
                continue
            if cut is not None:
                return cut
        return None

    def changed(self, mac: str) -> None:
        """A source's cut of this device began, ended or moved: tell the bus, once per change."""
        cut = self.of(mac)
        told = (cut.kind, cut.until) if cut else ("", 0.0)
        if self._told.get(mac) == told:
            return
        self._told[mac] = told
        self.bus.publish(events.CutOffChanged(mac=mac, kind=told[0], until=told[1]))
