"""The bus -> hwdb sink: every lease, decision, flow, byte count, alert, DNS query and link
report becomes a row in hwdb (the log and query surface; never read back to decide).

Publishing only appends to a bounded queue, so the controller never waits for hwdb; a
timer flushes the queue in BULK batches. When hwdbd is down or slow the rows wait (the
oldest are dropped past `QUEUE_LIMIT`, counted) and the sink reconnects with backoff.
DnsQueries rows pass through a per-device limiter (dns_limiter.py): a flooding device's
queries become count rows per name and interval instead of a row each.
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Protocol

from ... import events
from ...counters import Counters
from .dns_limiter import DnsLimiter
from .rows import ROW_BUILDERS, TOPICS

log = logging.getLogger("homework.hwdb_sync")

QUEUE_LIMIT = 100_000
STAT_NAMES = ("queued", "written", "dropped_overflow", "rejected", "batches", "connects", "failures")
BATCH = 2_000
BACKOFF_MAX = 10.0


class HwdbClient(Protocol):
    """hwdb_client.Client, as the sink uses it."""

    def bulk_insert(self, statements: list[str]) -> object: ...

    def query(self, statement: str) -> object: ...

    def close(self) -> None: ...


class Sink:
    def __init__(self, connect: Callable[[], HwdbClient], statement: Callable[[str, tuple, bool], str],
                 clock: Callable[[], float], is_timeout: Callable[[Exception], bool],
                 dns_limiter: DnsLimiter | None = None, counters: Counters | None = None):
        """`connect()` returns a client with bulk_insert(list[str]) and query(str);
        `statement(table, values, upsert)` renders one insert."""
        self._connect = connect
        self._statement = statement
        self._clock = clock
        self._is_timeout = is_timeout
        self.dns = dns_limiter or DnsLimiter(clock)
        self.client: HwdbClient | None = None
        self.queue: deque[str] = deque()
        self._retry_at = 0.0
        self._backoff = 0.5
        self.counters = counters or Counters()     # the controller's registry, as "hwdb_sync.*"

    @property
    def stats(self) -> dict[str, int]:
        counted = self.counters.snapshot().get("hwdb_sync", {})
        return {**{name: counted.get(name, 0) for name in STAT_NAMES}, "dns_aggregated": self.dns.aggregated}

    def count(self, name: str, n: int = 1) -> None:
        self.counters.count(f"hwdb_sync.{name}", n)

    # -- in: bus events ----------------------------------------------------------------
    def on_event(self, topic: str, payload: events.Event | dict) -> None:
        builder = ROW_BUILDERS.get(topic)
        if builder is None:
            return
        statements = []
        for table, values, upsert in builder(events.of(topic, payload)):
            if table == "DnsQueries":
                statements += [self._statement(table, row, upsert) for row in self.dns.admit(values)]
            else:
                statements.append(self._statement(table, values, upsert))
        self._enqueue(statements)

    def _enqueue(self, statements: list[str]) -> None:
        """Queue an event's rows (a `flows` event has thousands), the oldest dropped past the limit."""
        over = len(self.queue) + len(statements) - QUEUE_LIMIT
        if over > 0:
            for _ in range(min(over, len(self.queue))):
                self.queue.popleft()
            self.count("dropped_overflow", over)
            statements = statements[-QUEUE_LIMIT:]
        self.queue.extend(statements)
        self.count("queued", len(statements))

    # -- out: periodic flush -------------------------------------------------------------
    def flush(self, final: bool = False) -> int:
        """Write what is queued (in batches), with the DNS count rows of the intervals that
        ended (all of them when `final`); returns rows written. Never raises."""
        self._enqueue([self._statement("DnsQueries", row, False) for row in self.dns.due(final)])
        written = 0
        while self.queue:
            client = self._ensure_client()
            if client is None:
                break
            batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
            try:
                client.bulk_insert(batch)
            except Exception as exc:  # noqa: BLE001 - any failure must leave the controller running
                if self._is_timeout(exc) or isinstance(exc, OSError):
                    self.queue.extendleft(reversed(batch))   # keep order, retry after reconnect
                    self._lost(exc)
                    break
                written += self._one_by_one(client, batch)
                continue
            self.count("batches")
            self.count("written", len(batch))
            written += len(batch)
        return written

    def _one_by_one(self, client: HwdbClient, batch: list[str]) -> int:
        """A batch was refused (all or nothing): keep the good rows, drop the bad ones."""
        ok = 0
        for i, stmt in enumerate(batch):
            try:
                client.query(stmt)
                ok += 1
            except Exception as exc:  # noqa: BLE001
                if self._is_timeout(exc) or isinstance(exc, OSError):
                    self.queue.extendleft(reversed(batch[i:]))
                    self._lost(exc)
                    break
                self.count("rejected")
                log.warning("hwdb refused %r: %s", stmt[:120], exc)
        self.count("written", ok)
        return ok

    def _ensure_client(self) -> HwdbClient | None:
        if self.client is not None:
            return self.client
        now = self._clock()
        if now < self._retry_at:
            return None
        try:
            self.client = client = self._connect()
            self.count("connects")
            self._backoff = 0.5
            log.info("connected to hwdb")
            return client
        except Exception as exc:  # noqa: BLE001
            self._lost(exc)
            return None

    def _lost(self, exc: Exception) -> None:
        self.count("failures")
        if self.client is not None:
            try:
                self.client.close()
            except Exception:  # noqa: BLE001
                pass
        self.client = None
        self._retry_at = self._clock() + self._backoff
        log.warning("hwdb unavailable (%s); %d rows waiting, retrying in %.1fs", exc, len(self.queue),
                    self._backoff)
        self._backoff = min(self._backoff * 2, BACKOFF_MAX)


__all__ = ["Sink", "TOPICS"]
