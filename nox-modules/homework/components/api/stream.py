"""Server-Sent Events: every open /ws.v1/events connection gets its own bounded queue,
filled by bus handlers and drained by the response generator. A bus handler never blocks:
a client that stops reading loses its queue (and the server closes its stream) rather
than slowing the controller down."""
from __future__ import annotations

import itertools
import json
import queue
import threading
from typing import Callable, Iterator

QUEUE_SIZE = 1000
KEEPALIVE = 15.0     # seconds; also how often a stream re-checks its credentials
_OVERFLOW = object()


class EventStream:
    def __init__(self):
        self._clients: dict[int, queue.Queue] = {}
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

    def open(self, first: list[str], still_allowed: Callable[[], bool],
             keepalive: float = KEEPALIVE) -> Iterator[bytes]:
        """Register a client now (so nothing published from here on is missed) and return
        the generator that writes its stream."""
        q: queue.Queue = queue.Queue(QUEUE_SIZE)
        cid = next(self._ids)
        with self._lock:
            self._clients[cid] = q

        def generate() -> Iterator[bytes]:
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
                with self._lock:
                    self._clients.pop(cid, None)

        return generate()


def format_event(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data, default=str, separators=(',', ':'))}\n\n"
