"""Per-device cumulative traffic since the controller started, from routing's bus events.

`bandwidth` events carry each device's bytes since the previous flow-stats poll (split
into up and down; every byte reaches exactly one event), so summing them gives counters
that only go up, as Prometheus counters must. `flows` events carry packets of the learned
(per-connection) flows. A device drops out (and its series end) once it has no active
lease and has not been seen for `keep_seconds`: that bounds the series to the devices
with a lease or seen in the last day.
"""
from __future__ import annotations
from ...events import Bandwidth, Flows, of

import threading
from dataclasses import dataclass


@dataclass
class DeviceTraffic:
    up_bytes: int = 0       # sent by the device
    down_bytes: int = 0     # received by the device
    flow_packets: int = 0   # packets of its learned flows
    last_seen: float = 0.0


class TrafficTotals:
    def __init__(self, keep_seconds: float = 86400.0):
        self.keep_seconds = keep_seconds
        self._devices: dict[str, DeviceTraffic] = {}
        self._lock = threading.Lock()   # bus events and API reads come from different threads

    def on_bandwidth(self, event: Bandwidth | dict, now: float) -> None:
        ev = of("bandwidth", event)
        assert isinstance(ev, Bandwidth)
        total = max(int(ev.bytes or 0), 0)
        up = max(int(ev.up or 0), 0)
        down = max(int(ev.down if ev.down is not None else total - up), 0)
        with self._lock:
            d = self._devices.setdefault(ev.mac, DeviceTraffic())
            d.up_bytes += up
            d.down_bytes += down
            d.last_seen = now

    def on_flows(self, event: Flows | dict, now: float) -> None:
        ev = of("flows", event)
        assert isinstance(ev, Flows)
        packets: dict[str, int] = {}
        for r in ev.records:
            packets[r.mac] = packets.get(r.mac, 0) + max(int(r.npkts or 0), 0)
        with self._lock:
            for mac, n in packets.items():
                d = self._devices.setdefault(mac, DeviceTraffic())
                d.flow_packets += n
                d.last_seen = now

    def prune(self, leased: set[str], now: float) -> int:
        """Forget devices with no lease that were last seen over keep_seconds ago."""
        with self._lock:
            gone = [m for m, d in self._devices.items()
                    if m not in leased and now - d.last_seen > self.keep_seconds]
            for mac in gone:
                del self._devices[mac]
        return len(gone)

    def snapshot(self) -> dict[str, DeviceTraffic]:
        with self._lock:
            return {m: DeviceTraffic(**vars(d)) for m, d in self._devices.items()}
