"""The metrics component: keeps per-device traffic totals from the bus and renders the
controller's state for Prometheus on the `metrics` command (the API serves it at
`GET /ws.v1/metrics` for read-only tokens or better)."""
from __future__ import annotations

from collections import Counter

from prometheus_client import CollectorRegistry, generate_latest

from ...component import Component
from .collect import HomeworkCollector
from .traffic import TrafficTotals

PRUNE_SECONDS = 300.0


class Metrics(Component):
    name = "metrics"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.traffic = TrafficTotals(ctx.config.metrics_device_keep_seconds)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(HomeworkCollector(
            counters=ctx.counters.snapshot, traffic=self.traffic.snapshot, names=self._names,
            device_states=self._states, active_leases=lambda: len(ctx.leases.active()),
            health=self._health))

    def start(self) -> None:
        self.ctx.bus.subscribe("bandwidth", lambda _t, ev: self.traffic.on_bandwidth(ev, self.ctx.now()))
        self.ctx.bus.subscribe("flows", lambda _t, ev: self.traffic.on_flows(ev, self.ctx.now()))
        self.ctx.every(PRUNE_SECONDS, self.prune)
        self.ctx.commands.register("metrics", self.render)

    def prune(self) -> None:
        leased = {lease.mac for lease in self.ctx.leases.active()}
        gone = self.traffic.prune(leased, self.ctx.now())
        if gone:
            self.ctx.count("metrics.devices_pruned", gone)

    def render(self) -> str:
        self.ctx.count("metrics.scrapes")
        return generate_latest(self.registry).decode()

    def _devices(self) -> list:
        devices = self.ctx.devices
        return devices.all() if devices is not None else []

    def _names(self) -> dict[str, str]:
        return {d.mac: d.name or d.hostname for d in self._devices()}

    def _states(self) -> dict[str, int]:
        return dict(Counter(d.state for d in self._devices()))

    def _health(self) -> dict[str, bool]:
        return {name: bool(probe()) for name, probe in self.ctx.health.items()}
