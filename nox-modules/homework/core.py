"""The controller core: loads the configured components and dispatches events to them.

Framework-neutral: the os-ken adapter (or a unit test) supplies `send` (decisions -> switch)
and `spawn_periodic`. Every dispatch is wrapped so one bad packet or one buggy component
never stops the controller.
"""
from __future__ import annotations

import dataclasses
import importlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import cast

from . import bootalerts, factory_reset, system
from . import events, manifest
from .update import service as update_service
from .bus import EventBus
from .commands import Commands, register_core_commands
from .component import Component, Context
from .config import Config
from .counters import Counters
from .devices import DeviceRegistry
from .ipv6plan import AddressPlan, PrefixSource
from .flows import AggregateStats, Datapath, Decision, FlowRemoved, FlowStats, PacketIn
from .hostnet import HostNet
from .leases import LeaseReader
from .pairing import SatellitePairing
from .satellites import PatchLinks, with_found
from .packets import PacketError, parse_ethernet
from .state import WRITE_BEHIND_SECONDS, StateStore

log = logging.getLogger("homework.core")


def with_found_satellites(config: Config, state: StateStore) -> Config:
    """The config with the found satellites' cables (pairing.py) after the listed ones."""
    found = SatellitePairing.found_in(state)
    if not found:
        return config
    sats, skipped = with_found(config.satellites, found)
    for why in skipped:
        log.error("%s: left out", why)
    return dataclasses.replace(config, satellites=sats)

# Packet-in dispatch order: the most specific protocol handlers first.
DISPATCH_ORDER = ("eapol", "dhcp", "routing")
FORGET_CHECK_SECONDS = 60.0     # how often never-approved devices unseen for long are forgotten


PREFIX_CHECK_SECONDS = 5.0      # how often the ISP's delegated prefix is looked at (IPv6)


def _no_port_to_give_back(sat, bridge: str) -> None:
    """Without the adapter (unit tests) no satellite holds a router port."""


class Core:
    """`restart`, `switch_is_real` and `give_back_port` come from main.py, which runs the
    controller with a real switch: restart.InPlace, True and adapter/router_ports.give_back
    (so that no lower layer imports the adapter). A unit test's core keeps the defaults."""

    def __init__(self, config: Config, *, state: StateStore | None = None, host: HostNet | None = None,
                 send: Callable[[list[Decision]], None] | None = None,
                 spawn_periodic: Callable[[float, Callable], None] | None = None,
                 clock: Callable[[], float] = time.time, bus: EventBus | None = None,
                 restart: Callable[..., None] | None = None, switch_is_real: bool = False,
                 give_back_port: Callable = _no_port_to_give_back):
        self.counters = Counters()
        self._send = send or (lambda decisions: None)
        self._spawn_periodic = spawn_periodic or _thread_periodic
        self.state = state or StateStore(config.state_db)
        # the satellites whose cable was found (permitted on the board) join the
        # listed ones for the whole life of this process; a change restarts it (commands.py)
        config = with_found_satellites(config, self.state)
        self.config = config
        self.give_back_port = give_back_port
        self.bus = bus or EventBus()
        self.bus.decisions_to = self.send
        self.devices = DeviceRegistry(self.state, self.bus, max_pending=config.max_pending,
                                      forget_after=config.forget_unapproved_after, clock=clock,
                                      has_live_lease=lambda mac: self.ctx.leases.is_active(mac))
        self.prefix_source = None
        ipv6 = None
        if config.ipv6_enabled:
            self.prefix_source = PrefixSource(config.ipv6_prefix, config.ipv6_prefix_file, config.state_dir)
            ipv6 = AddressPlan(self.prefix_source.site())
            log.info("IPv6: a /64 per device from %s", ipv6.site)
        self.pairing = SatellitePairing(self.state, config, self.bus, clock)
        self.commands = Commands()
        # What the satellites' patch ports say about their links (the adapter keeps it up to date).
        self.patch_links = PatchLinks(config.satellites_radio_ports)
        self.ctx = Context(config, self.state, self.bus, host or HostNet(config.bridge), self.send, self.every,
                           clock, counters=self.counters, commands=self.commands, devices=self.devices,
                           pairing=self.pairing, updater=update_service.Updater(config, config.state_db),
                           ipv6=ipv6, restart=restart, switch_is_real=switch_is_real,
                           is_radio_port=self.patch_links.is_radio_port,
                           radio_port=self.patch_links.radio_router_port)
        self.ctx.carry_device = self.carry_device
        register_core_commands(self)
        factory_reset.register(self)
        system.register(self)               # system-info, set-timezone
        update_service.register(self)       # update-start, update-status, reboot
        bootalerts.register(self)           # alerts the image's boot scripts leave
        self.components: list[Component] = []
        self._dispatch: list[Component] = []

    # -- set-up --------------------------------------------------------------------
    def load_components(self) -> None:
        """Construct the configured components, each after those that offer what it needs
        (manifest.py), handing it those interfaces; then start them in the configured order."""
        names = tuple(self.config.components)
        if self.config.qos_enabled and "qos" not in names:
            names += ("qos",)       # [qos] enabled = true loads it
        manifests = {name: manifest.of(name) for name in names}
        offered: dict[type, object] = {}
        loaded: dict[str, Component] = {}
        for name in construction_order(manifests):
            wanted = {arg: offered.get(interface) for arg, interface in manifests[name].needs.items()}
            module = importlib.import_module(f"homework.components.{name}")
            component = module.COMPONENT(self.ctx, **wanted)
            for interface in manifests[name].offers:
                offered[interface] = component.offer(interface)
            if LeaseReader in manifests[name].offers:
                # before the rest are made (identify, whose inbox dhcp takes, comes first
                # and reads leases only once started)
                self.ctx.leases = cast(LeaseReader, offered[LeaseReader])
            loaded[name] = component
        for name in names:
            self.components.append(loaded[name])
            self.ctx._components[name] = loaded[name]
        ordered = [loaded[n] for n in DISPATCH_ORDER if n in loaded]
        self._dispatch = ordered + [c for c in self.components if c not in ordered]
        for component in self.components:
            self._safe(f"{component.name}.start", component.start)
        self.every(WRITE_BEHIND_SECONDS, self.state.flush)
        self.every(FORGET_CHECK_SECONDS, self.devices.forget_unseen)
        if self.prefix_source is not None:
            self.every(PREFIX_CHECK_SECONDS, self.check_site_prefix)
        log.info("components loaded: %s", ", ".join(c.name for c in self.components))

    def check_site_prefix(self) -> None:
        """The ISP delegated another prefix (or none any more): every device moves to its
        /64 of the new one. DHCP and routing do their part on the `ipv6_plan` event."""
        if self.prefix_source is None:
            return
        site = self.prefix_source.site()
        old = self.ctx.ipv6
        if old is not None and site == old.site:
            return
        self.ctx.ipv6 = AddressPlan(site)
        log.warning("IPv6 site prefix %s -> %s: renumbering every device", old.site if old else None, site)
        self.counters.count("core.ipv6_renumbered")
        self.bus.publish(events.Ipv6Plan(old=old, new=self.ctx.ipv6))

    def stop(self) -> None:
        for component in reversed(self.components):
            self._safe(f"{component.name}.stop", component.stop)
        self._safe("state.flush", self.state.flush)

    # -- decisions out -------------------------------------------------------------
    def send(self, decisions: Iterable[Decision] | None) -> None:
        if not decisions:
            return
        decisions = list(decisions)
        if decisions:
            self._send(decisions)

    def every(self, seconds: float, fn: Callable) -> None:
        def guarded():
            self._safe(getattr(fn, "__qualname__", "timer"), fn)
        self._spawn_periodic(seconds, guarded)

    # -- events in -----------------------------------------------------------------
    def datapath_up(self, dp: Datapath) -> None:
        self.ctx.datapath = dp
        log.info("datapath %016x connected with ports %s", dp.dpid, dp.ports)
        cables = {s.router_port for s in self.config.satellites}    # a found satellite's port left the bridge
        for name in self.config.lan_ports:
            if name not in dp.ports and name not in cables:
                log.warning("LAN port %s ([lan] ports) is not on the bridge", name)
                self.bus.publish(events.Alert(mac="", kind=events.AlertKind.LAN_PORT_MISSING,
                                              detail=f"The router's port {name} is in its settings but not on its "
                                                     "switch: devices plugged into it cannot join.",
                                              data={"port": name}))
        for component in self.components:
            self.send(self._safe(f"{component.name}.datapath_up", component.datapath_up, dp))

    def datapath_down(self) -> None:
        self.ctx.datapath = None
        log.warning("datapath disconnected")
        for component in self.components:
            self._safe(f"{component.name}.datapath_down", component.datapath_down)

    def packet_in(self, pkt: PacketIn) -> None:
        self.counters.count("core.packet_in")
        try:
            frame = parse_ethernet(pkt.data)
        except PacketError as exc:
            self.counters.count("core.malformed_frames")
            log.debug("dropping malformed frame from port %s: %s", pkt.in_port, exc)
            return
        with self.bus.held():      # the handler's decisions go out before its events are heard
            for component in self._dispatch:
                try:
                    decisions = component.packet_in(pkt, frame)
                except PacketError as exc:
                    self.counters.count(f"{component.name}.malformed")
                    log.info("%s: malformed packet from port %s (%s) dropped", component.name, pkt.in_port, exc)
                    return
                except Exception:
                    self.counters.count(f"{component.name}.errors")
                    log.exception("%s: error handling packet from port %s", component.name, pkt.in_port)
                    return
                if decisions is not None:
                    self.send(decisions)
                    return
            self.counters.count("core.unhandled_packets")

    def flow_removed(self, ev: FlowRemoved) -> None:
        for component in self.components:
            self.send(self._safe(f"{component.name}.flow_removed", component.flow_removed, ev))

    def flow_stats(self, stats: list[FlowStats]) -> None:
        for component in self.components:
            self.send(self._safe(f"{component.name}.flow_stats", component.flow_stats, stats))

    def aggregate_stats(self, ev: AggregateStats) -> None:
        for component in self.components:
            self.send(self._safe(f"{component.name}.aggregate_stats", component.aggregate_stats, ev))

    def port_status(self, name: str, port_no: int, up: bool) -> None:
        dp = self.ctx.datapath
        if dp is not None:
            if up:
                dp.ports[name] = port_no
            else:
                dp.ports.pop(name, None)
        for component in self.components:
            self.send(self._safe(f"{component.name}.port_status", component.port_status, name, port_no, up))

    def carry_device(self, old: str, new: str) -> list[str]:
        """Every component's per-device settings of `old` become `new`'s (Component.carry_device);
        what was carried, in words. One component failing leaves the others' carried."""
        carried: list[str] = []
        for component in self.components:
            carried += self._safe(f"{component.name}.carry_device", component.carry_device, old, new) or []
        return carried

    # -- helpers ---------------------------------------------------------------------
    def _safe(self, what: str, fn: Callable, *args):
        try:
            return fn(*args)
        except Exception:
            self.counters.count("core.errors")
            log.exception("%s failed", what)
            return None


def construction_order(manifests: dict[str, manifest.Manifest]) -> list[str]:
    """The names in their order, except that a component comes after every one that offers
    an interface it needs (a stable topological order; the manifests test refuses cycles)."""
    order: list[str] = []

    def place(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise ValueError(f"components need each other in a circle: {' -> '.join(path + (name,))}")
        for interface in manifests[name].needs.values():
            for other, m in manifests.items():
                if interface in m.offers and other != name:
                    place(other, path + (name,))
        order.append(name)

    for name in manifests:
        place(name, ())
    return order


def _thread_periodic(seconds: float, fn: Callable) -> None:
    def loop():
        while True:
            time.sleep(seconds)
            fn()
    threading.Thread(target=loop, daemon=True, name=f"every-{seconds}s").start()
