"""Which switch the controller drives. The controller serves one bridge: the first datapath
whose LOCAL port carries the configured bridge name. While it is connected, any other
datapath (a second bridge pointed at the controller by mistake, or a switch that is not
ours) is refused: it is never sent a flow and nothing it says is heard, so it cannot
take the router's place or feed it frames. A reconnection of the same datapath replaces
the session; once ours has gone, the bridge may come back with another dpid (re-created
with another MAC).

Satellite switches are the exception: a datapath listed in [satellites] is
driven as that satellite (satellites.py), one session per dpid, provided it has its
uplink port and is not the bridge. Until pairing gives each satellite a certificate, the
dpid a switch announces is taken at its word, so the controller should listen only where
the router's own switches reach it (the default is 127.0.0.1). Framework-free, so it is
unit tested without os-ken."""
from __future__ import annotations

from ..satellites import Satellite

LOCAL_PORT = 0xFFFFFFFE


class SwitchGate:
    def __init__(self, bridge: str, satellites: tuple[Satellite, ...] = ()):
        self.bridge = bridge
        self.satellites = {s.dpid: s for s in satellites}
        self.dpid: int | None = None          # the datapath we drive while it is connected
        self.refused: set[int] = set()        # dpids already refused (warned about once)

    def satellite(self, dpid: int, ports: dict[str, int]) -> tuple[Satellite | None, str]:
        """(the satellite this datapath is, or None; why it is refused as one, or '' when
        it is not listed as a satellite at all)."""
        sat = self.satellites.get(dpid)
        if sat is None:
            return None, ""
        if ports.get(self.bridge) == LOCAL_PORT:
            return None, f"it is listed as satellite {sat.index} but is the bridge {self.bridge!r}"
        if sat.uplink not in ports:
            return None, f"satellite {sat.index} has no uplink port {sat.uplink!r}"
        return sat, ""

    def admit(self, dpid: int, ports: dict[str, int]) -> tuple[bool, str]:
        """(admitted, why not) for a datapath that connected with these ports."""
        if self.dpid is not None and dpid != self.dpid:
            return False, f"the controller already drives datapath {self.dpid:016x}"
        if ports.get(self.bridge) != LOCAL_PORT:
            return False, f"its LOCAL port is not the bridge {self.bridge!r}"
        self.dpid = dpid
        return True, ""

    def release(self, dpid: int) -> None:
        """Our datapath disconnected: the bridge may come back under another dpid."""
        if dpid == self.dpid:
            self.dpid = None

    def first_refusal(self, dpid: int) -> bool:
        """True the first time a dpid is refused: one warning and alert, not one per retry."""
        if dpid in self.refused:
            return False
        self.refused.add(dpid)
        return True
