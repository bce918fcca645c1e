"""Burst alerts: the household asks to be told when one device moves more than a set amount
within a set number of minutes ("more than 1 GB in 10 minutes": a download nobody meant, a
camera uploading all night, a device that has started to misbehave).

One setting per device (state.db `usage_bursts`, carried by backups). The device's bytes
per minute come from the last hour the panel's chart reads (recent.py), so a window is at
most an hour; it counts the whole minutes that began inside it (a minute that began
earlier is left out, so a burst is never made bigger than it was). The alert
(AlertKind.USAGE_BURST) is raised once per burst, when the window first goes over the
amount, and again only after the window has fallen back under it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ... import rowcheck
from ...commands import CommandError
from ...macaddr import BadMac, normalize
from .cap import parse_size
from .recent import KEEP, MINUTE, RecentMinutes

MAX_MINUTES = KEEP            # the last hour is what recent.py keeps
MIN_BYTES = 10**6             # 1 MB: less would tell of every web page
MAX_BYTES = 10**15


@dataclass(frozen=True)
class Burst:
    mac: str
    bytes: int
    minutes: int

    def text(self) -> str:
        return f"more than {size_text(self.bytes)} in {minutes_text(self.minutes)}"

    def as_dict(self) -> dict:
        return {"mac": self.mac, "bytes": self.bytes, "minutes": self.minutes, "text": self.text()}


def size_text(n: int) -> str:
    """Bytes as a household reads them, in the decimal units ISPs bill in: 1.5 GB, 800 MB."""
    for unit, size in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            value = n / size
            return f"{value:.1f} {unit}".replace(".0 ", " ") if value < 10 else f"{round(value)} {unit}"
    return f"{n} bytes"


def minutes_text(minutes: int) -> str:
    return "1 minute" if minutes == 1 else f"{minutes} minutes"


def parse(mac, size, minutes) -> Burst:
    """The one check of a burst alert's setting, for the API, the CLI and a restore."""
    try:
        mac = normalize(str(mac))
    except BadMac as exc:
        raise CommandError(str(exc)) from None
    try:
        nbytes = parse_size(size)
    except CommandError:
        raise CommandError(f"usage-burst: the amount must be a size such as 500M or 2G, got {size!r}") from None
    if not MIN_BYTES <= nbytes <= MAX_BYTES:
        raise CommandError(f"usage-burst: the amount must be at least {size_text(MIN_BYTES)}, got {size_text(nbytes)}")
    if isinstance(minutes, bool) or not isinstance(minutes, (int, str)) or not str(minutes).strip().isdigit() \
            or not 1 <= int(minutes) <= MAX_MINUTES:
        raise CommandError(f"usage-burst: minutes must be a whole number from 1 to {MAX_MINUTES}, got {minutes!r}")
    return Burst(mac, nbytes, int(minutes))


def row_check(r: dict) -> None:
    """A restored row (the manifest's check): the same rules as parse()."""
    rowcheck.mac(r["mac"])
    rowcheck.number(r["bytes"], "bytes", MIN_BYTES, MAX_BYTES, whole=True)
    rowcheck.number(r["minutes"], "minutes", 1, MAX_MINUTES, whole=True)


class Bursts:
    def __init__(self, state):
        self.state = state
        self._lock = threading.Lock()
        self.by_mac = {r["mac"]: Burst(r["mac"], r["bytes"], r["minutes"])
                       for r in state.execute("SELECT mac, bytes, minutes FROM usage_bursts")}
        self._over: set[str] = set()        # devices whose window is over the amount now (alerted)

    def set(self, burst: Burst) -> None:
        self.state.execute("INSERT INTO usage_bursts (mac, bytes, minutes) VALUES (?, ?, ?) ON CONFLICT(mac) "
                           "DO UPDATE SET bytes = excluded.bytes, minutes = excluded.minutes",
                           (burst.mac, burst.bytes, burst.minutes))
        with self._lock:
            self.by_mac[burst.mac] = burst
            self._over.discard(burst.mac)

    def remove(self, mac: str) -> bool:
        self.state.execute("DELETE FROM usage_bursts WHERE mac = ?", (mac,))
        with self._lock:
            self._over.discard(mac)
            return self.by_mac.pop(mac, None) is not None

    def went_over(self, mac: str, recent: RecentMinutes, now: float) -> tuple[Burst, int] | None:
        """(the setting, the window's bytes) when the device's window has just gone over its
        amount; None otherwise (no setting, under it, or still over since the last alert)."""
        burst = self.by_mac.get(mac)
        if burst is None:
            return None
        since = now - burst.minutes * MINUTE
        total = sum(up + down for _mac, minute, up, down in recent.rows(mac) if minute >= since)
        with self._lock:
            if total <= burst.bytes:
                self._over.discard(mac)
                return None
            if mac in self._over:
                return None
            self._over.add(mac)
        return burst, total
