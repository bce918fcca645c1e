"""Server-Sent Events: every open /ws.v1/events connection gets its own bounded queue,
filled by bus handlers and drained by the response generator. A bus handler never blocks:
a client that stops reading loses its queue (and the server closes its stream) rather
than slowing the controller down.

Each open stream holds one of the WSGI server's green threads until it ends, so streams
are capped: MAX_PER_CLIENT per token or session, MAX_STREAMS in all (the server's pool is
larger, the rest is the reserve for ordinary calls), and of those ADMIN_RESERVE only for
admin credentials, so read-only tokens cannot take the Guest Board's own stream. Past a
limit, open() raises StreamLimit (the API answers 429)."""
from __future__ import annotations

import itertools
import json
import queue
import threading
from collections.abc import Callable, Generator, Iterator

QUEUE_SIZE = 1000
MAX_STREAMS = 64
MAX_PER_CLIENT = 8
ADMIN_RESERVE = 16
KEEPALIVE = 15.0     # seconds; also how often a stream re-checks its credentials
_OVERFLOW = object()


class StreamLimit(Exception):
    """Too many streams open; the message says which limit."""


class EventStream:
    def __init__(self, max_streams: int = MAX_STREAMS, max_per_client: int = MAX_PER_CLIENT,
                 admin_reserve: int = ADMIN_RESERVE):
        self.max_streams = max_streams
        self.max_per_client = max_per_client
        self.admin_reserve = admin_reserve
        self._clients: dict[int, queue.Queue] = {}
        self._owners: dict[int, str] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def clients(self) -> int:
        return len(self._clients)

    def publish(self, event: str, data: dict) -> None:
        text = format_event(event, data)
        with self._lock:
            clients = list(self._clients.items())
        for cid, q in clients:
            try:
                q.put_nowait(text)
            except queue.Full:
                with self._lock:
                    self._clients.pop(cid, None)
                try:
                    q.get_nowait()
                    q.put_nowait(_OVERFLOW)
                except (queue.Empty, queue.Full):
                    pass

    def open(self, first: list[str] | Callable[[], list[str]], still_allowed: Callable[[], bool],
             keepalive: float = KEEPALIVE, owner: str = "", admin: bool = False) -> Iterator[bytes]:
        """Register a client now (so nothing published from here on is missed) and return
        the iterable that writes its stream; its close() frees the slot. `owner` names the
        credentials (token id or session) the per-client limit counts."""
        q: queue.Queue = queue.Queue(QUEUE_SIZE)
        cid = next(self._ids)
        with self._lock:
            mine = sum(1 for o in self._owners.values() if o == owner)
            if mine >= self.max_per_client:
                raise StreamLimit(f"these credentials already have {mine} event streams open, the most "
                                  f"allowed; close one first")
            limit = self.max_streams if admin else self.max_streams - self.admin_reserve
            if len(self._owners) >= limit:
                raise StreamLimit(f"the router has {len(self._owners)} event streams open, the most it "
                                  f"allows{'' if admin else ' for read-only credentials'}; try again later")
            self._clients[cid] = q
            self._owners[cid] = owner

        def release() -> None:
            with self._lock:
                self._clients.pop(cid, None)
                self._owners.pop(cid, None)

        if callable(first):     # made after registering: nothing published in between is missed
            try:
                first = first()
            except BaseException:
                release()
                raise

        def generate() -> Generator[bytes, None, None]:
            try:
                # The retry hint makes EventSource reconnect quickly after a restart.
                yield b"retry: 1000\n\n"
                for text in first:
                    yield text.encode()
                while True:
                    try:
                        item = q.get(timeout=keepalive)
                    except queue.Empty:
                        if not still_allowed():
                            yield format_event("end", {"reason": "credentials no longer valid"}).encode()
                            return
                        yield b": keepalive\n\n"
                        continue
                    if item is _OVERFLOW:
                        yield format_event("end", {"reason": "client too slow"}).encode()
                        return
                    yield item.encode()
            finally:
                release()

        return _Body(generate(), release)


class _Body:
    """A stream's response body. The WSGI server calls close() however the response
    ends, even if it never started iterating (a generator's own finally would not run)."""

    def __init__(self, gen: Generator[bytes, None, None], release: Callable[[], None]):
        self._gen = gen
        self._release = release

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        return next(self._gen)

    def close(self) -> None:
        try:
            self._gen.close()
        finally:
            self._release()


def format_event(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data, default=str, separators=(',', ':'))}\n\n"
