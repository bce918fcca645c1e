"""Nearby devices: stations the access point hears probing but that are not connected.

Source: hostapd's `RX-PROBE-REQUEST sa=<mac> signal=<dBm>` events on its control socket
(probes.py parses, ctrlsocket.py keeps the attachment). A MAC that is neither associated
(in the last station dump) nor a registered device becomes a nearby entry:

- it is published as the monitor's `link` event with `"associated": false` (hwdb's Links
  gets a row, the board puts it in the left zone), at most once per `[radio] nearby_interval`;
- it is forgotten `[radio] nearby_forget` seconds after its last probe: a `nearby` event
  with `"gone": true` tells the board to drop the label;
- randomised MACs (locally administered bit) are not listed one by one: they change every
  few minutes, so each radio gets ONE group entry `random-<ifname>` with their count and
  the strongest signal (a `nearby` event; no Links rows for them);
- at most `[radio] nearby_max` individual entries are kept, the strongest signals win.

A MAC that associates or registers leaves the list silently: its label now belongs to the
station dump / device registry.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from collections.abc import Callable

from .ctrlsocket import MonitorSocket
from ...events import Link, Nearby
from .probes import BadEvent, ProbeRequest, parse_event
from .stationevents import station_event

log = logging.getLogger("homework.radio.nearby")

GROUP_PREFIX = "random-"
MAX_RANDOM = 1024        # randomised MACs counted per radio (a street full of phones stays bounded)
LISTED_MEMBERS = 50      # members named in a group's API entry


def randomised(mac: str) -> bool:
    return bool(int(mac[:2], 16) & 0x02)


@dataclass
class Heard:
    mac: str
    rssi: float
    ifname: str
    last_heard: float
    published_at: float = 0.0


@dataclass
class Group:
    ifname: str
    members: dict[str, Heard] = field(default_factory=dict)
    published_at: float = 0.0
    published_count: int = 0
    dirty: bool = False

    @property
    def mac(self) -> str:
        return GROUP_PREFIX + self.ifname


class NearbyTracker:
    """Rate limit, ageing, grouping and cap; publishes through `publish(topic, **payload)`."""

    def __init__(self, publish: Callable[..., None], clock: Callable[[], float], *, interval: float,
                 forget: float, cap: int, associated: Callable[[str], bool], known: Callable[[str], bool],
                 band: Callable[[str], str | None] = lambda ifname: None,
                 count: Callable[..., None] = lambda name, n=1: None):
        self.publish = publish
        self.clock = clock
        self.interval, self.forget, self.cap = interval, forget, cap
        self.associated, self.known, self.band, self.count = associated, known, band, count
        self.entries: dict[str, Heard] = {}
        self.groups: dict[str, Group] = {}

    # -- in ----------------------------------------------------------------------------------
    def heard(self, ifname: str, probe: ProbeRequest) -> None:
        now = self.clock()
        mac = probe.mac
        self.count("radio.probe_requests")
        if self.associated(mac) or self.known(mac):
            self._drop_silently(mac)
            return
        if randomised(mac):
            group = self.groups.setdefault(ifname, Group(ifname))
            if mac not in group.members and len(group.members) >= MAX_RANDOM:
                oldest = min(group.members.values(), key=lambda h: h.last_heard)
                del group.members[oldest.mac]
            group.members[mac] = Heard(mac, float(probe.signal), ifname, now)
            group.dirty = True
            self._publish_group(group, now)
            return
        entry = self.entries.get(mac)
        if entry is None:
            if len(self.entries) >= self.cap:
                weakest = min(self.entries.values(), key=lambda h: h.rssi)
                if probe.signal <= weakest.rssi:
                    self.count("radio.nearby_over_cap")
                    return
                self._gone(weakest)
            entry = self.entries[mac] = Heard(mac, float(probe.signal), ifname, now)
        entry.rssi, entry.ifname, entry.last_heard = float(probe.signal), ifname, now
        if now - entry.published_at >= self.interval or not entry.published_at:
            entry.published_at = now
            self.publish(Link(mac=mac, rssi=entry.rssi, retries=0, packets=0, bytes=0, ifname=ifname,
                              seen_at=now, associated=False))
            self.publish(Nearby(**self.as_entry(entry), gone=False))

    def tick(self) -> None:
        """Age out, drop what associated or registered since, send held-back group counts."""
        now = self.clock()
        cutoff = now - self.forget
        for entry in list(self.entries.values()):
            if self.associated(entry.mac) or self.known(entry.mac):
                del self.entries[entry.mac]
            elif entry.last_heard < cutoff:
                self._gone(entry)
        for group in list(self.groups.values()):
            for mac in [m for m, h in group.members.items() if h.last_heard < cutoff or self.associated(m)]:
                del group.members[mac]
                group.dirty = True
            self._publish_group(group, now)

    # -- out ---------------------------------------------------------------------------------
    def _publish_group(self, group: Group, now: float) -> None:
        if not group.dirty:
            return
        if not group.members:
            del self.groups[group.ifname]
            if group.published_count:
                self.publish(Nearby(**self.group_entry(group, now), gone=True))
            return
        if group.published_at and now - group.published_at < self.interval:
            return                      # held back: tick() sends it when the interval has passed
        group.dirty, group.published_at = False, now
        group.published_count = len(group.members)
        self.publish(Nearby(**self.group_entry(group, now), gone=False))

    def _gone(self, entry: Heard) -> None:
        del self.entries[entry.mac]
        self.publish(Nearby(**self.as_entry(entry), gone=True))

    def _drop_silently(self, mac: str) -> None:
        self.entries.pop(mac, None)
        for group in self.groups.values():
            if group.members.pop(mac, None) is not None:
                group.dirty = True

    def as_entry(self, h: Heard) -> dict:
        return {"mac": h.mac, "rssi": h.rssi, "radio": h.ifname, "band": self.band(h.ifname),
                "last_heard": h.last_heard, "randomised": False, "count": 1}

    def group_entry(self, group: Group, now: float | None = None) -> dict:
        members = sorted(group.members.values(), key=lambda h: -h.rssi)
        return {"mac": group.mac, "rssi": members[0].rssi if members else None, "radio": group.ifname,
                "band": self.band(group.ifname),
                "last_heard": max((h.last_heard for h in members), default=now or 0.0),
                "randomised": True, "count": len(members), "macs": [h.mac for h in members[:LISTED_MEMBERS]]}

    def listing(self) -> list[dict]:
        """What `GET /ws.v1/nearby` shows: strongest first, each radio's group as one entry."""
        out = [self.as_entry(h) for h in self.entries.values()]
        out += [self.group_entry(g) for g in self.groups.values() if g.members]
        return sorted(out, key=lambda e: -(e["rssi"] if e["rssi"] is not None else -999))


class NearbyListener:
    """Reads every radio's hostapd control socket and feeds the tracker (called every tick)."""

    def __init__(self, ctrl_dir: str, interfaces: tuple[str, ...], tracker: NearbyTracker,
                 count: Callable[..., None], on_station: Callable[[str, str, str], None] | None = None):
        self.tracker = tracker
        self.count = count
        self.on_station = on_station    # (ifname, "connected" | "disconnected", mac): hostapd said so
        self.closed = False             # after stop(): a late tick must not attach again
        self.sockets = [MonitorSocket(f"{ctrl_dir.rstrip('/')}/{ifname}", tracker.clock,
                                      self._error_reporter(ifname), on_attached=self._attached_reporter(ifname))
                        for ifname in interfaces]

    def _error_reporter(self, ifname: str) -> Callable[[str, bool], None]:
        def report(why: str, first: bool) -> None:
            self.count("radio.nearby_errors")
            if first:                           # once per episode, not every retry
                log.warning("hostapd control socket for %s: %s (retrying every few seconds)", ifname, why)
        return report

    @staticmethod
    def _attached_reporter(ifname: str) -> Callable[[], None]:
        return lambda: log.info("hostapd control socket for %s: attached again", ifname)

    def tick(self) -> None:
        if self.closed:
            return
        for sock in self.sockets:
            for text in sock.receive():
                self.handle(sock.ifname, text)
        self.tracker.tick()

    def handle(self, ifname: str, text: str) -> None:
        joined_or_left = station_event(text)
        if joined_or_left is not None:
            if self.on_station is not None:
                self.on_station(ifname, *joined_or_left)
            return
        try:
            probe = parse_event(text)
        except BadEvent:
            self.count("radio.nearby_malformed")
            return
        if probe is not None:
            self.tracker.heard(ifname, probe)

    def close(self) -> None:
        self.closed = True
        for sock in self.sockets:
            sock.close()
