"""The LINK SIMULATOR for the emulated home (not for real Wi-Fi).

On a real router the Links data comes from hostapd / `iw station dump`; the emulated
home's devices sit on veth pairs that have no radio. This component stands in for it:
every `[linksim] interval` seconds it publishes, for each device holding a lease, a `link`
event shaped like a station dump (cumulative packets, bytes and tx retries, plus RSSI):

- packets and bytes are REAL: the kernel counters of the device's port (a veth) on the
  router, so traffic a test generates shows up on the Guest Board;
- RSSI is SIMULATED: a steady per-MAC level between -45 and -80 dBm with a small random
  walk; retries are SIMULATED from it (weaker signal, more retries).

A device a real radio reports (the radio monitor, e.g. from a satellite's agent) is left
to it. Tests pin a device's radio with `homework call linksim-set mac=.. rssi=-88 retry_rate=0.3`
and release it with `linksim-clear`.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

from ...component import Component
from ...events import Link
from ...interfaces import RadioStations
from ...macaddr import normalize

SYS_NET = Path("/sys/class/net")
RSSI_MIN, RSSI_MAX = -95.0, -30.0


@dataclass
class Radio:
    rssi: float
    packets: int = 0
    bytes: int = 0
    retries: int = 0
    pinned_rssi: float | None = None
    pinned_retry_rate: float | None = None
    last_packets: int | None = None


def retry_rate_for(rssi: float) -> float:
    """Share of frames retried at a given signal level: none above -60 dBm, rising to 40%."""
    return max(0.0, min(0.4, (-rssi - 60.0) / 80.0))


class LinkSimulator(Component):
    name = "linksim"

    def __init__(self, ctx, radio: RadioStations | None = None, sys_net: Path = SYS_NET):
        super().__init__(ctx)
        self.radio = radio      # the radio monitor's, when loaded: its stations are real ones
        self.sys_net = Path(sys_net)
        self.radios: dict[str, Radio] = {}
        self.rng = random.Random()

    def start(self) -> None:
        self.ctx.commands.register("linksim-set", self.pin)
        self.ctx.commands.register("linksim-clear", self.unpin)
        self.ctx.every(self.ctx.config.linksim_interval, self.tick)
        self.log.info("link simulator on (emulated radio, every %d s)", self.ctx.config.linksim_interval)

    # -- commands --------------------------------------------------------------------------
    def pin(self, mac, rssi=None, retry_rate=None) -> dict:
        mac = normalize(mac)
        radio = self._radio(mac)
        if rssi is not None:
            value = float(rssi)
            if not RSSI_MIN <= value <= RSSI_MAX:
                raise ValueError(f"rssi must be between {RSSI_MIN:.0f} and {RSSI_MAX:.0f} dBm")
            radio.pinned_rssi = radio.rssi = value
        if retry_rate is not None:
            value = float(retry_rate)
            if not 0.0 <= value <= 1.0:
                raise ValueError("retry_rate must be between 0 and 1")
            radio.pinned_retry_rate = value
        return {"mac": mac, "rssi": radio.rssi, "retry_rate": radio.pinned_retry_rate}

    def unpin(self, mac) -> dict:
        radio = self._radio(normalize(mac))
        radio.pinned_rssi = radio.pinned_retry_rate = None
        return {"mac": normalize(mac), "pinned": False}

    # -- the simulation ---------------------------------------------------------------------
    def _radio(self, mac: str) -> Radio:
        radio = self.radios.get(mac)
        if radio is None:
            seed = int.from_bytes(hashlib.sha256(mac.encode()).digest()[:4], "big")
            radio = self.radios[mac] = Radio(rssi=-45.0 - (seed % 36))
        return radio

    def _port_counters(self, port_no: int) -> tuple[int, int] | None:
        dp = self.ctx.datapath
        if dp is None:
            return None
        name = dp.port_name(port_no)
        if name is None:
            return None
        stats = self.sys_net / name / "statistics"
        try:
            packets = sum(int((stats / f).read_text()) for f in ("rx_packets", "tx_packets"))
            nbytes = sum(int((stats / f).read_text()) for f in ("rx_bytes", "tx_bytes"))
        except (OSError, ValueError):
            return None
        return packets, nbytes

    def tick(self) -> None:
        for lease in self.ctx.leases.active():
            mac = lease.mac
            if self.radio is not None and self.radio.associated(mac):
                continue        # a real radio reports this one (a satellite's agent)
            radio = self._radio(mac)
            counters = self._port_counters(lease.port)
            if counters is None:
                continue
            packets, nbytes = counters
            if radio.pinned_rssi is None:
                radio.rssi = max(RSSI_MIN, min(RSSI_MAX, radio.rssi + self.rng.uniform(-2.0, 2.0)))
            new_packets = 0 if radio.last_packets is None else max(0, packets - radio.last_packets)
            radio.last_packets = packets
            rate = radio.pinned_retry_rate if radio.pinned_retry_rate is not None else retry_rate_for(radio.rssi)
            # Pinned retries show even on an idle link (as management frames would).
            frames = max(new_packets, 10 if radio.pinned_retry_rate else 0)
            radio.retries += round(frames * rate)
            radio.packets += max(new_packets, frames)
            radio.bytes = nbytes
            self.ctx.bus.publish(Link(mac=mac, rssi=round(radio.rssi, 1), retries=radio.retries,
                                      packets=radio.packets, bytes=radio.bytes))
