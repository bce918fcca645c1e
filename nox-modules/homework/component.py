"""The NOX-style component interface.

A component receives parsed events and returns decisions (flows.*). It never imports
os-ken: the core hands it a Context with the state store, the event bus, the router's
host networking and a `send` for decisions made outside an event (API calls, timers).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Iterable

from .flows import AggregateStats, Datapath, Decision, FlowRemoved, FlowStats, PacketIn
from .callers import Callers
from .counters import Counters
from .leases import LeaseReader, NoLeases
from .packets import Frame

if TYPE_CHECKING:
    from .bus import EventBus
    from .config import Config
    from .hostnet import HostNet
    from .ipv6plan import AddressPlan
    from .state import StateStore


class Context:
    """What the core gives every component."""

    def __init__(self, config: "Config", state: "StateStore", bus: "EventBus", host: "HostNet",
                 send: Callable[[Iterable[Decision]], None], schedule: Callable[[float, Callable], None],
                 clock: Callable[[], float]):
        self.config = config
        self.state = state
        self.bus = bus
        self.host = host
        self.send = send
        self.every = schedule        # every(seconds, fn): run fn periodically (exceptions logged)
        self.now = clock
        self.components: dict[str, Component] = {}
        self.datapath: Datapath | None = None
        self.leases: LeaseReader = NoLeases()   # DHCP puts itself here at start
        self.ipv6: AddressPlan | None = None  # the /64 of each block index; None: IPv4 only
        self.counters = Counters()     # the core's registry (one for the whole controller)
        # Facts components add to every device view (CLI, API, board): fn(mac) -> dict.
        self.device_facts: list[Callable[[str], dict]] = []
        # Health of the daemons components talk to: name -> fn() -> up? (metrics shows them).
        self.health: dict[str, Callable[[], bool]] = {}
        self.count = self.counters.count
        # restart(why): restart the controller in place soon (main.py wires it; None in tests).
        self.restart: Callable[[str], None] | None = None
        self.devices = None            # the core's DeviceRegistry (core.py puts it here)
        # The update service (update/service.py wires it when [update] is on); None otherwise.
        self.updater = None
        # True when a real OpenFlow switch is behind the adapter (osken_app.py); the fake
        # switch of the unit tests leaves it False, so nothing opens raw sockets there.
        self.switch_is_real = False
        # Is this router port a radio of a satellite? Stations roam between
        # radios, whose ports never lose link; the adapter answers from PatchLinks.
        self.is_radio_port: Callable[[int], bool] = lambda port: False
        # The router port of a satellite radio named "wlan0@sat1" (None: not one, or down);
        # a station its agent hears there has roamed there (the adapter answers).
        self.radio_port: Callable[[str], int | None] = lambda ifname: None
        self.pairing = None            # the core's SatellitePairing (core.py puts it here)
        # The router's own services on the WAN: what -> (protocol, port), e.g. remote access's
        # WireGuard port. Components add theirs in __init__; port forwards may not take them.
        self.wan_services: dict[str, tuple[str, int]] = {}
        # Multicast groups the router's own stack serves on the LAN (reach: SSDP for UPnP);
        # routing sends permitted devices' packets to them to the router as well as to members.
        self.router_groups: set[str] = set()
        # Which device (or satellite, or the router) an address belongs to: the one answer
        # every per-device rule uses, over IPv4 and IPv6 alike (callers.py).
        self.callers = Callers(self)

    def component(self, name: str) -> "Component | None":
        return self.components.get(name)

    def facts_about(self, mac: str) -> dict:
        """What the components say about a device, for its view (e.g. routing: flow_limited)."""
        facts: dict = {}
        for fact in self.device_facts:
            facts.update(fact(mac))
        return facts


class Component:
    """Base class: override what you need. Every hook may return a list of decisions."""

    name = "component"

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.log = logging.getLogger(f"homework.{self.name}")

    def start(self) -> None:
        """Called once, after every component is constructed."""

    def stop(self) -> None:
        """Called at shutdown."""

    def datapath_up(self, dp: Datapath) -> list[Decision]:
        return []

    def datapath_down(self) -> None:
        pass

    def packet_in(self, pkt: PacketIn, frame: Frame) -> list[Decision] | None:
        """Return None if the packet is not this component's business; a list (maybe empty)
        if it was handled, which stops the dispatch to later components."""
        return None

    def flow_removed(self, ev: FlowRemoved) -> list[Decision]:
        return []

    def flow_stats(self, stats: list[FlowStats]) -> list[Decision]:
        return []

    def aggregate_stats(self, ev: AggregateStats) -> list[Decision]:
        """The answer to an AggregateStatsRequest (delivered to every component)."""
        return []

    def port_status(self, name: str, port_no: int, up: bool) -> list[Decision]:
        return []
