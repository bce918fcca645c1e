"""The REAL radio's link monitor (the emulated home uses `linksim` instead).

Every `[radio] interval` seconds it runs `[radio] station_dump_command` (by default
`iw dev {ifname} station dump`) for each interface in `[radio] interfaces` and publishes
one `link` event per associated station, shaped like linksim's, so hwdb's Links rows, the
Guest Board and metrics take it unchanged.

Why `iw` text: pyroute2's nl80211 module (Debian python3-pyroute2) is labelled experimental
and offers no station dump call; iw is a small Debian package that prints every nl80211
station attribute, and the parser (stationdump.py) skips and counts lines it cannot read.

Counters: the kernel's per-station counters restart at zero when a station re-associates
(and vanish while it is away), so this component publishes its own cumulative totals per
MAC, adding each poll's delta (a counter lower than last time = a reset: the new value is
the delta). The board's rates from successive reports therefore never go negative.
"""
from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass

from ...component import Component
from .stationdump import Station, parse

COMMAND_TIMEOUT = 5.0
MAX_KNOWN = 4096        # MACs whose totals are kept (a busy hotspot must not grow memory forever)


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
        self.totals: dict[str, Totals] = {}
        self.failing: set[str] = set()

    def start(self) -> None:
        self.ctx.device_facts.append(self._facts)
        if not self.interfaces:
            self.log.info("radio monitor: no Wi-Fi interfaces configured ([radio] interfaces)")
            return
        self.ctx.every(self.ctx.config.radio_interval, self.tick)
        self.log.info("radio monitor on %s (every %d s)", ", ".join(self.interfaces), self.ctx.config.radio_interval)

    # -- reading -----------------------------------------------------------------------------
    def read_dump(self, ifname: str) -> str | None:
        argv = shlex.split(self.command.replace("{ifname}", ifname))
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        except (OSError, subprocess.SubprocessError) as exc:
            return self._failed(ifname, str(exc))
        if res.returncode != 0:
            return self._failed(ifname, (res.stderr or "").strip() or f"exit {res.returncode}")
        if ifname in self.failing:
            self.failing.discard(ifname)
            self.log.info("station dump of %s works again", ifname)
        return res.stdout

    def _failed(self, ifname: str, why: str) -> None:
        self.ctx.count("radio.dump_errors")
        if ifname not in self.failing:      # once per episode, not every second
            self.failing.add(ifname)
            self.log.warning("station dump of %s failed: %s", ifname, why)
        return None

    def tick(self) -> None:
        for ifname in self.interfaces:
            text = self.read_dump(ifname)
            if text is not None:
                self.apply(ifname, text)

    # -- counting ----------------------------------------------------------------------------
    def apply(self, ifname: str, text: str) -> list[dict]:
        """One interface's dump -> the `link` events it publishes (returned for tests)."""
        dump = parse(text, ifname)
        if dump.skipped:
            self.ctx.count("radio.malformed_lines", dump.skipped)
        now = self.ctx.now()
        present = set()
        events = []
        for station in dump.stations:
            key = (ifname, station.mac)
            present.add(key)
            step = deltas(self.last.get(key), station)
            self.last[key] = station
            totals = self._totals(station.mac)
            totals.tx_packets += step["tx_packets"]
            totals.tx_retries += step["tx_retries"]
            totals.tx_failed += step["tx_failed"]
            totals.bytes += step["rx_bytes"] + step["tx_bytes"]
            totals.seen_at = now - (station.inactive_ms or 0) / 1000.0
            totals.ifname = ifname
            retry_rate = step["tx_retries"] / step["tx_packets"] if step["tx_packets"] else 0.0
            event = {"mac": station.mac, "rssi": station.signal, "retries": totals.tx_retries,
                     "packets": totals.tx_packets, "bytes": totals.bytes, "retry_rate": round(retry_rate, 4),
                     "tx_failed": totals.tx_failed, "tx_bitrate": station.tx_bitrate,
                     "rx_bitrate": station.rx_bitrate, "inactive_ms": station.inactive_ms,
                     "ifname": ifname, "seen_at": totals.seen_at}
            self.ctx.bus.publish("link", **event)
            events.append(event)
        for key in [k for k in self.last if k[0] == ifname and k not in present]:
            del self.last[key]          # gone: if it comes back its counters start again
        self.ctx.count("radio.stations_seen", len(dump.stations))
        return events

    def _totals(self, mac: str) -> Totals:
        totals = self.totals.get(mac)
        if totals is None:
            if len(self.totals) >= MAX_KNOWN:
                del self.totals[min(self.totals, key=lambda m: self.totals[m].seen_at)]
            totals = self.totals[mac] = Totals()
        return totals

    # -- device views ------------------------------------------------------------------------
    def _radio_port(self, port_no: int) -> bool | None:
        dp = self.ctx.datapath
        if dp is None or not port_no:
            return None
        name = next((n for n, no in dp.ports.items() if no == port_no), None)
        return None if name is None else name in self.interfaces

    def _facts(self, mac: str) -> dict:
        totals = self.totals.get(mac)
        lease = self.ctx.leases.get(mac)
        on_radio = self._radio_port(lease.port) if lease is not None and lease.active else None
        return {"wired": on_radio is False and totals is None,
                "radio": totals.ifname if totals else None,
                "radio_seen_at": totals.seen_at if totals else None,
                "leave_after": self.ctx.config.radio_leave_after}
