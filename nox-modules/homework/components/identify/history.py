"""What the router remembers of each device's past that nothing else keeps: who decided
about it and when (`device_decisions`), and each port or radio it turned up on
(`device_places`). Its story (story.py) reads them beside the devices table, hwdb's query
log, usage and notifications.

Cheap on the hot path: a lease event compares the lease's port with the last place held
in memory and writes (behind, `state.defer`) only when the device moved. A forgotten
device's history goes with it, unless it was forgotten by being joined to its new
private address (device_joins keeps the old address, and the story reads both).
"""
from __future__ import annotations

from ... import actor
from ...firsthour import is_wifi_port
from ...satellites import attachment


WIFI = "wifi:"       # a place that is a radio: "wifi:wlan0", "wifi:wlan1@sat2"


def place_words(place: str) -> str:
    """A place as the household reads where a device was: "port lan2 of the router",
    "port 3 of satellite 1", "Wi-Fi (wlan0)"."""
    if place.startswith(WIFI):
        radio, _, sat = place.removeprefix(WIFI).partition("@sat")
        return f"Wi-Fi ({radio} of satellite {sat})" if sat else f"Wi-Fi ({radio})"
    where = attachment(place)
    if where["satellite"] is not None:
        return f"port {where['port']} of satellite {where['satellite']}"
    return f"port {where['port']} of the router"


class DeviceHistory:
    def __init__(self, ctx):
        self.ctx = ctx
        self.last_place: dict[str, str] = {}
        self._radios: dict[str, bool] = {}

    def start(self) -> None:
        for row in self.ctx.state.execute("SELECT mac, place FROM device_places ORDER BY at"):
            self.last_place[row["mac"]] = row["place"]
        bus = self.ctx.bus
        bus.subscribe("device", self._on_device)
        bus.subscribe("lease", self._on_lease)
        bus.subscribe("station_at", self._on_station_at)

    def _on_device(self, topic: str, ev) -> None:
        if ev.reason == "decision" and ev.state:
            self.ctx.state.defer("INSERT INTO device_decisions (mac, at, state, was, by) VALUES (?, ?, ?, ?, ?)",
                                 (ev.mac, self.ctx.now(), ev.state, ev.old_state or "", actor.current()))
        elif ev.state is None:
            self.last_place.pop(ev.mac, None)
            joined = self.ctx.state.execute("SELECT 1 FROM device_joins WHERE was=? LIMIT 1", (ev.mac,))
            if not joined:
                self.ctx.state.defer("DELETE FROM device_decisions WHERE mac=?", (ev.mac,))
                self.ctx.state.defer("DELETE FROM device_places WHERE mac=?", (ev.mac,))

    def _on_lease(self, topic: str, ev) -> None:
        lease, dp = ev.lease, self.ctx.datapath
        if ev.action not in ("granted", "renewed") or lease is None or not lease.local or dp is None:
            return
        name = dp.port_name(lease.port)
        if name:
            self._at(lease.mac, self._place(name))

    def _place(self, name: str) -> str:
        radio = self._radios.get(name)
        if radio is None:       # a look in /sys once per port name, not per lease event
            radio = self._radios[name] = is_wifi_port(name, self.ctx.config.radio_interfaces)
        return WIFI + name if radio else name

    def _on_station_at(self, topic: str, ev) -> None:
        if ev.ifname:
            self._at(ev.mac, WIFI + ev.ifname)

    def _at(self, mac: str, place: str) -> None:
        if self.last_place.get(mac) == place:
            return
        self.last_place[mac] = place
        self.ctx.state.defer("INSERT INTO device_places (mac, at, place) VALUES (?, ?, ?)",
                             (mac, self.ctx.now(), place))
