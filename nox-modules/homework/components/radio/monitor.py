"""The REAL radio's link monitor (the emulated home uses `linksim` instead).

Every `[radio] interval` seconds it runs `[radio] station_dump_command` (by default
`iw dev {ifname} station dump`) for each interface in `[radio] interfaces` and publishes
a `link` event for each associated station that has news (frames since the last one, and
once when they stop; a signal change of RSSI_STEP dB; or LINK_HEARTBEAT seconds of
silence), shaped like linksim's, so hwdb's Links rows, the Guest Board and metrics take it
unchanged.

hostapd's AP-STA-CONNECTED / AP-STA-DISCONNECTED events (read with the nearby listener's
control sockets, every NEARBY_TICK) make it read that radio at once: a station roaming
onto one of the router's access points is placed, and its flows follow, without waiting
for the next poll.

Why `iw` text: pyroute2's nl80211 module (Debian python3-pyroute2) is labelled experimental
and offers no station dump call; iw is a small Debian package that prints every nl80211
station attribute, and the parser (stationdump.py) skips and counts lines it cannot read.

Counters: the kernel's per-station counters restart at zero when a station re-associates
(and vanish while it is away), so this component publishes its own cumulative totals per
MAC, adding each poll's delta (a counter lower than last time = a reset: the new value is
the delta). The board's rates from successive reports therefore never go negative.

A satellite's radios come the same way, as `radio_report` events from its agent's
session (components/satlink), named "wlan0@sat1".

Also here: each interface's band (`[radio] info_command`, ifinfo.py) for the device views, and
nearby devices heard probing, from hostapd's control sockets (nearby.py).
"""
from __future__ import annotations

import shlex
import subprocess
import threading
from dataclasses import dataclass
from typing import Any

from ...component import Component
from ...events import Link, StationAt
from ...interfaces import RadioStations
from .ifinfo import parse_band
from .nearby import NearbyListener, NearbyTracker
from .stationdump import Station, parse

COMMAND_TIMEOUT = 5.0
MAX_KNOWN = 4096        # MACs whose totals are kept (a busy hotspot must not grow memory forever)
BAND_REFRESH = 60.0     # seconds between `iw dev IF info` reads (the channel can change: ACS, DFS)
FRESH = 2.0             # seconds: a station not heard for longer does not move to that radio
ROAM_MARGIN = 0.5       # seconds a new radio must have heard it later than its current one
NEARBY_TICK = 0.25      # seconds between reads of hostapd's sockets (their queue holds few datagrams)
# A station's `link` event goes out when it moved frames (and once more when it stops), when
# its signal moved by RSSI_STEP dB, and at least every LINK_HEARTBEAT seconds: an idle
# station costs the bus, hwdb and the board one event a minute, not one a poll. With a
# [radio] leave_after shorter than two heartbeats, every leave_after / 2 instead: the board
# takes a label whose seen_at is leave_after old for a departed one, so a station still
# heard (its inactive time small) must be told before then.
RSSI_STEP = 3.0
LINK_HEARTBEAT = 60.0


@dataclass
class Totals:
    tx_packets: int = 0
    tx_retries: int = 0
    tx_failed: int = 0
    bytes: int = 0
    seen_at: float = 0.0
    ifname: str = ""


COUNTERS = ("tx_packets", "tx_retries", "tx_failed", "rx_bytes", "tx_bytes")


def deltas(last: Station | None, now: Station) -> dict[str, int]:
    """Per-counter increase since the last poll; a counter that went down was reset."""
    out = {}
    for name in COUNTERS:
        value = getattr(now, name)
        before = getattr(last, name) if last is not None else None
        if value is None:
            out[name] = 0
        elif before is None or value < before:
            out[name] = value
        else:
            out[name] = value - before
    return out


class RadioMonitor(Component):
    name = "radio"

    def __init__(self, ctx):
        super().__init__(ctx)
        cfg = ctx.config
        self.interfaces = tuple(cfg.radio_interfaces)
        self.command = cfg.radio_station_dump_command
        self.last: dict[tuple[str, str], Station] = {}     # (ifname, mac) -> last poll's record
        # MAC -> (packets, bytes, signal, moved, when) of the last `link` event published for it
        self._told: dict[str, tuple] = {}
        self.totals: dict[str, Totals] = {}
        self.failing: set[str] = set()
        self.bands: dict[str, str | None] = {}
        self._lock = threading.RLock()
        self.heard: dict[str, dict[str, float]] = {}     # MAC -> radio -> when it last heard the station
        self.where: dict[str, str] = {}                   # MAC -> the radio it is on
        self.nearby: NearbyListener | None = None
        if self.interfaces and cfg.radio_hostapd_ctrl_dir:
            tracker = NearbyTracker(
                ctx.bus.publish, ctx.now, interval=cfg.radio_nearby_interval, forget=cfg.radio_nearby_forget,
                cap=cfg.radio_nearby_max, associated=self.associated,
                known=lambda mac: ctx.state.get_device(mac) is not None, band=self.bands.get, count=ctx.count)
            self.nearby = NearbyListener(cfg.radio_hostapd_ctrl_dir, self.interfaces, tracker, ctx.count,
                                         on_station=self.station_changed)

    def start(self) -> None:
        self.ctx.device_facts.append(self._facts)
        self.ctx.commands.register("nearby", self.nearby_listing, reads_only=True)
        self.ctx.bus.subscribe("radio_report", self._on_report)
        if not self.interfaces:
            self.log.info("radio monitor: no Wi-Fi interfaces configured ([radio] interfaces)")
            return
        self.read_bands()
        self.ctx.every(BAND_REFRESH, self.read_bands)
        if self.nearby is not None:
            self.ctx.every(NEARBY_TICK, self.nearby.tick)
        self.ctx.every(self.ctx.config.radio_interval, self.tick)
        self.log.info("radio monitor on %s (every %d s)", ", ".join(self.interfaces), self.ctx.config.radio_interval)

    def stop(self) -> None:
        if self.nearby is not None:
            self.nearby.close()

    # -- reading -----------------------------------------------------------------------------
    def read_bands(self) -> None:
        for ifname in self.interfaces:
            text = run(self.ctx.config.radio_info_command, ifname)
            if isinstance(text, Exception):
                self.ctx.count("radio.info_errors")
                band = None
            else:
                band = parse_band(text)
            if band != self.bands.get(ifname):
                self.log.info("%s is on %s", ifname, band or "no known band")
            self.bands[ifname] = band

    def read_dump(self, ifname: str) -> str | None:
        res = run(self.command, ifname)
        if isinstance(res, Exception):
            self._failed(ifname, str(res))
            return None
        if ifname in self.failing:
            self.failing.discard(ifname)
            self.log.info("station dump of %s works again", ifname)
        return res

    def _failed(self, ifname: str, why: str) -> None:
        self.ctx.count("radio.dump_errors")
        if ifname not in self.failing:      # once per episode, not every second
            self.failing.add(ifname)
            self.log.warning("station dump of %s failed: %s", ifname, why)

    def tick(self) -> None:
        for ifname in self.interfaces:
            text = self.read_dump(ifname)
            if text is not None:
                self.apply(ifname, text)

    def station_changed(self, ifname: str, kind: str, mac: str) -> None:
        """hostapd says a station joined or left: read that radio now, not at the next poll,
        so a station roaming onto it takes its lease and flows along within a NEARBY_TICK."""
        self.ctx.count(f"radio.station_{kind}_events")
        self.log.debug("%s: station %s %s, reading its station dump now", ifname, mac, kind)
        if ifname in self.interfaces:
            text = self.read_dump(ifname)
            if text is not None:
                self.apply(ifname, text)

    def _on_report(self, topic: str, ev) -> None:
        """A satellite's radio, as its agent read it (components/satlink): the same
        parsing and counting as the router's own radios."""
        ifname = ev.ifname
        if ev.info:
            self.bands[ifname] = parse_band(ev.info)
        self.apply(ifname, ev.dump or "")

    # -- counting ----------------------------------------------------------------------------
    def apply(self, ifname: str, text: str) -> list[dict]:
        """One interface's dump -> the `link` events it publishes (returned for tests)."""
        with self._lock:    # the poll timer and satellite agents' sessions both report
            return self._apply(ifname, text)

    def _apply(self, ifname: str, text: str) -> list[dict]:
        dump = parse(text, ifname)
        if dump.skipped:
            self.ctx.count("radio.malformed_lines", dump.skipped)
        now = self.ctx.now()
        present = {(ifname, station.mac) for station in dump.stations}
        for key in [k for k in self.last if k[0] == ifname and k not in present]:
            del self.last[key]          # gone: if it comes back its counters start again
            self.heard.get(key[1], {}).pop(ifname, None)
        for station in dump.stations:
            self._locate(station.mac, ifname, now - (station.inactive_ms or 0) / 1000.0)
        events = []
        heartbeat = min(LINK_HEARTBEAT, self.ctx.config.radio_leave_after / 2)
        for station in dump.stations:
            key = (ifname, station.mac)
            step = deltas(self.last.get(key), station)
            self.last[key] = station
            totals = self._totals(station.mac)
            totals.tx_packets += step["tx_packets"]
            totals.tx_retries += step["tx_retries"]
            totals.tx_failed += step["tx_failed"]
            totals.bytes += step["rx_bytes"] + step["tx_bytes"]
            if self.where.get(station.mac, ifname) != ifname:
                continue    # an access point it left still lists it: its signal there is not news
            totals.seen_at = now - (station.inactive_ms or 0) / 1000.0
            totals.ifname = ifname
            retry_rate = step["tx_retries"] / step["tx_packets"] if step["tx_packets"] else 0.0
            told = self._told.get(station.mac)
            moved = told is None or (told[0], told[1]) != (totals.tx_packets, totals.bytes)
            if told is not None and not (
                    moved or told[3] or now - told[4] >= heartbeat
                    or (station.signal is not None
                        and (told[2] is None or abs(station.signal - told[2]) >= RSSI_STEP))):
                continue     # nothing new about it: no event this poll
            if len(self._told) > MAX_KNOWN:
                self._told.clear()
            self._told[station.mac] = (totals.tx_packets, totals.bytes, station.signal, moved, now)
            event: dict[str, Any] = {"mac": station.mac, "rssi": station.signal, "retries": totals.tx_retries,
                     "packets": totals.tx_packets, "bytes": totals.bytes, "retry_rate": round(retry_rate, 4),
                     "tx_failed": totals.tx_failed, "tx_bitrate": station.tx_bitrate,
                     "rx_bitrate": station.rx_bitrate, "inactive_ms": station.inactive_ms,
                     "ifname": ifname, "seen_at": totals.seen_at, "associated": True}
            self.ctx.bus.publish(Link(**event))
            events.append(event)
        self.ctx.count("radio.stations_seen", len(dump.stations))
        return events

    def _locate(self, mac: str, ifname: str, heard_at: float) -> None:
        """Which radio a station is on: the one that heard it last, by more than
        ROAM_MARGIN (a station sends to its own access point only, so the one it left
        hears nothing more from it). A change is published as `station_at`, which moves
        the lease of a station that roamed between satellite radios although it did not
        ask for an address again (dhcp)."""
        if mac not in self.heard and len(self.heard) >= MAX_KNOWN:
            self.heard.clear()
        heard = self.heard.setdefault(mac, {})
        heard[ifname] = heard_at
        # Every radio's last word counts, whichever report came in now: the new radio's
        # fresh one, or the old radio's saying it has not heard the station for a while.
        best = max(heard, key=heard.__getitem__)
        where = self.where.get(mac)
        if best == where or heard[best] < self.ctx.now() - FRESH:
            return
        if where is not None and where in heard and heard[best] < heard[where] + ROAM_MARGIN:
            return
        if len(self.where) >= MAX_KNOWN and mac not in self.where:
            self.where.clear()
        self.where[mac] = ifname = best
        if where is not None:
            self.ctx.count("radio.roams")
        self.ctx.bus.publish(StationAt(mac=mac, ifname=ifname, previous=where))

    def _totals(self, mac: str) -> Totals:
        totals = self.totals.get(mac)
        if totals is None:
            if len(self.totals) >= MAX_KNOWN:
                del self.totals[min(self.totals, key=lambda m: self.totals[m].seen_at)]
            totals = self.totals[mac] = Totals()
        return totals

    def offer(self, interface: type) -> object:
        if interface is RadioStations:
            return self
        return super().offer(interface)

    def associated(self, mac: str) -> bool:
        """In the last station dump of any radio."""
        with self._lock:
            return any(key[1] == mac for key in self.last)

    def nearby_listing(self) -> dict:
        """The `nearby` command (API GET /ws.v1/nearby, CLI `homework nearby`)."""
        return {"nearby": self.nearby.tracker.listing() if self.nearby is not None else []}

    # -- device views ------------------------------------------------------------------------
    def _radio_port(self, port_no: int) -> bool | None:
        dp = self.ctx.datapath
        if dp is None or not port_no:
            return None
        name = dp.port_name(port_no)
        return None if name is None else name in self.interfaces

    def _facts(self, mac: str) -> dict:
        totals = self.totals.get(mac)
        lease = self.ctx.leases.get(mac)
        on_radio = self._radio_port(lease.port) if lease is not None and lease.active else None
        # the radio it is on: where _locate placed it (a satellite's report of its new
        # access point may still be on its way), else the last that reported it
        radio = (self.where.get(mac) or totals.ifname) if totals else None
        return {"wired": on_radio is False and totals is None,
                "radio": radio,
                "band": self.bands.get(radio) if radio else None,
                "radio_seen_at": totals.seen_at if totals else None,
                "leave_after": self.ctx.config.radio_leave_after}


def run(template: str, ifname: str) -> str | Exception:
    """Run a configured command for one interface: its stdout, or the failure."""
    argv = shlex.split(template.replace("{ifname}", ifname))
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except (OSError, subprocess.SubprocessError) as exc:
        return exc
    if res.returncode != 0:
        return RuntimeError((res.stderr or "").strip() or f"exit {res.returncode}")
    return res.stdout
