"""The NOX-style component interface.

A component receives parsed events and returns decisions (flows.*). It never imports
os-ken: the core hands it a Context with the state store, the event bus, the router's
host networking and a `send` for decisions made outside an event (API calls, timers).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from collections.abc import Callable, Iterable

from .flows import AggregateStats, Datapath, Decision, FlowRemoved, FlowStats, PacketIn
from .callers import Callers
from .counters import Counters
from .cutoff import Cutoffs
from .leases import LeaseReader, NoLeases
from .packets import Frame

if TYPE_CHECKING:
    from .bus import EventBus
    from .commands import Commands
    from .config import Config
    from .devices import DeviceRegistry
    from .hostnet import HostNet
    from .ipv6plan import AddressPlan
    from .pairing import SatellitePairing
    from .state import StateStore
    from .update.service import Updater


class Context:
    """What the core shares with every component. Everything here is given at construction
    and has one owner; a component gets the services of another through an interface it
    declares (interfaces.py, its manifest's `needs`), never through the context.

    - config, state (the state store), bus, host (the router's own networking), commands
      (the command table), counters and count, devices (the device registry), pairing
      (satellite pairing), updater (system updates): the core's own, made before the
      components;
    - send(decisions) for decisions made outside an event, every(seconds, fn) for timers,
      now() for the time;
    - leases: the lease reader that dhcp offers (leases.NoLeases without it), put here by
      the core before any other component is constructed;
    - datapath: the connected switch (None while none is); ipv6: the address plan (None:
      IPv4 only), which the core replaces when the ISP delegates another prefix;
    - restart(why, then=None): restart the controller in place (main.py gives it; None in
      unit tests);
    - switch_is_real, is_radio_port(port), radio_port(ifname): facts about the switch the
      adapter works with (main.py says it is real; the satellites' patch links answer for
      radio ports). The unit tests' fake switch keeps the defaults;
    - device_facts, health, wan_services, router_groups and announcement_groups: registries
      components add to (facts each adds to a device's view; the health of the daemons each
      talks to; the router's own services on the WAN; the multicast groups its own stack
      serves; those it hears from every device, pending ones too);
    - callers: which device an address belongs to (callers.py); cutoffs: why a device is
      cut off, from the sources components add (cutoff.py).
    """

    def __init__(self, config: Config, state: StateStore, bus: EventBus, host: HostNet,
                 send: Callable[[Iterable[Decision]], None], schedule: Callable[[float, Callable], None],
                 clock: Callable[[], float], *, counters: Counters, commands: Commands,
                 devices: DeviceRegistry, pairing: SatellitePairing, updater: Updater,
                 ipv6: AddressPlan | None = None, restart: Callable[..., None] | None = None,
                 switch_is_real: bool = False, is_radio_port: Callable[[int], bool] = lambda port: False,
                 radio_port: Callable[[str], int | None] = lambda ifname: None):
        self.config = config
        self.state = state
        self.bus = bus
        self.host = host
        self.send = send
        self.every = schedule        # every(seconds, fn): run fn periodically (exceptions logged)
        self.now = clock
        self.counters = counters       # the core's registry (one for the whole controller)
        self.count = self.counters.count
        self.commands = commands
        self.devices = devices
        self.pairing = pairing
        self.updater = updater
        self.leases: LeaseReader = NoLeases()
        self.datapath: Datapath | None = None
        self.ipv6 = ipv6
        self.restart = restart
        self.switch_is_real = switch_is_real
        self.is_radio_port = is_radio_port
        self.radio_port = radio_port
        # Facts components add to every device view (CLI, API, board): fn(mac) -> dict.
        self.device_facts: list[Callable[[str], dict]] = []
        # Health of the daemons components talk to: name -> fn() -> up? (metrics shows them).
        self.health: dict[str, Callable[[], bool]] = {}
        # Why a device is cut off (pending, denied, paused, bedtime, over its allowance):
        # schedules and usage add their sources, dns and the API ask (cutoff.py).
        self.cutoffs = Cutoffs(state, bus)
        # The router's own services on the WAN: what -> (protocol, port), e.g. remote access's
        # WireGuard port. Components add theirs in __init__; port forwards may not take them.
        self.wan_services: dict[str, tuple[str, int]] = {}
        # Multicast groups the router's own stack serves on the LAN (reach: SSDP for UPnP);
        # routing sends permitted devices' packets to them to the router as well as to members.
        self.router_groups: set[str] = set()
        # Groups whose packets the router's stack hears from every device, pending ones too
        # (identify: mDNS and SSDP announcements say what a device asking to join is).
        self.announcement_groups: set[str] = set()
        # Which device (or satellite, or the router) an address belongs to: the one answer
        # every per-device rule uses, over IPv4 and IPv6 alike (callers.py).
        self.callers = Callers(self)
        # A device let in as the device it was (identify's join): every component's
        # per-device settings move from the old address to the new (Component.carry_device);
        # the core gives it, and answers what was carried.
        self.carry_device: Callable[[str, str], list[str]] = lambda old, new: []
        self._components: dict[str, Component] = {}

    def component(self, name: str) -> Component | None:
        """A loaded component, for tests and the core's own use. Components never call it:
        they take what they use at construction (tests/unit/test_dependencies.py)."""
        return self._components.get(name)

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

    def offer(self, interface: type) -> object:
        """The object by which this component serves `interface` (interfaces.py), one of
        its manifest's `offers`. The core asks once, right after constructing it."""
        raise LookupError(f"{self.name} offers no {interface.__name__}")

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

    def carry_device(self, old: str, new: str) -> list[str]:
        """The household let a device back with a new private address in as the device it
        was (identify's join): this component's per-device settings of `old` become `new`'s
        (moved, not copied: `old` is forgotten next). Returns what it carried, in words
        ("website rules", "priority"). A component overrides it when its manifest's
        `carries` names a table (tests/unit/test_manifests.py checks both ways)."""
        return []
