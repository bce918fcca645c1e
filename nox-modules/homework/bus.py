"""In-process event bus: components publish changes (device seen, lease granted, decision,
alert, link); the hwdb sink logs them and the API streams them to the Guest Board."""
from __future__ import annotations

import logging
import threading
from collections import defaultdict
from typing import Callable

log = logging.getLogger(__name__)

Handler = Callable[[str, dict], None]


class EventBus:
    def __init__(self):
        self._lock = threading.Lock()
        self._handlers: dict[str, list[Handler]] = defaultdict(list)

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Topic '*' receives everything."""
        with self._lock:
            self._handlers[topic].append(handler)

    def unsubscribe(self, topic: str, handler: Handler) -> None:
        with self._lock:
            if handler in self._handlers.get(topic, []):
                self._handlers[topic].remove(handler)

    def publish(self, topic: str, **payload) -> None:
        with self._lock:
            handlers = list(self._handlers.get(topic, [])) + list(self._handlers.get("*", []))
        for handler in handlers:
            try:
                handler(topic, payload)
            except Exception:  # one broken subscriber must not stop the publisher
                log.exception("event handler for %s failed", topic)
