"""hwdb_sync component: subscribes to the bus topics that become hwdb rows and flushes
them to hwdbd in batches (see sink.py). Optional: without `[hwdb] enabled = true`, or
without the hwdb_client package, the controller runs exactly the same, unlogged."""
from __future__ import annotations

from ...component import Component
from ...events import Event
from .sink import Sink, TOPICS

FLUSH_SECONDS = 0.25


class HwdbSync(Component):
    name = "hwdb_sync"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.sink: Sink | None = None

    def start(self) -> None:
        cfg = self.ctx.config
        self.ctx.commands.register("hwdb-sync-status", self.status)
        self.ctx.health["hwdbd"] = lambda: self.sink is not None and self.sink.client is not None
        if not cfg.hwdb_enabled:
            self.log.info("hwdb disabled in the configuration: nothing is logged")
            return
        try:
            import hwdb_client
        except ImportError:
            self.log.error("hwdb enabled but the hwdb_client package is not importable: nothing is logged")
            return
        self.sink = Sink(connect=lambda: hwdb_client.Client(cfg.hwdb_host, cfg.hwdb_port, timeout=2.0),
                         statement=hwdb_client.insert_statement, clock=self.ctx.now,
                         is_timeout=lambda exc: isinstance(exc, hwdb_client.HwdbTimeout),
                         counters=self.ctx.counters)
        for topic in TOPICS:
            self.ctx.bus.subscribe(topic, self._on_event)
        self.ctx.every(FLUSH_SECONDS, self.sink.flush)
        self.log.info("logging %s to hwdb at %s:%d", ", ".join(TOPICS), cfg.hwdb_host, cfg.hwdb_port)

    def _on_event(self, topic: str, payload: Event) -> None:
        sink = self.sink
        assert sink is not None     # subscribed once it is made
        try:
            sink.on_event(topic, payload)
        except (KeyError, TypeError, ValueError) as exc:
            sink.count("rejected")
            self.log.warning("%s event not logged (%s): %r", topic, exc, payload)

    def stop(self) -> None:
        if self.sink is not None:
            self.sink.flush(final=True)

    def status(self) -> dict:
        if self.sink is None:
            return {"enabled": False}
        return {"enabled": True, "connected": self.sink.client is not None, "waiting": len(self.sink.queue),
                **self.sink.stats}


COMPONENT = HwdbSync
