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
        self._local = threading.local()
        # Where decisions returned by handlers go (the core's send); a bare bus drops them.
        self.decisions_to: Callable[[list], None] = lambda decisions: None

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Topic '*' receives everything."""
        with self._lock:
            self._handlers[topic].append(handler)

    def unsubscribe(self, topic: str, handler: Handler) -> None:
        with self._lock:
            if handler in self._handlers.get(topic, []):
                self._handlers[topic].remove(handler)

    def held(self) -> "_Held":
        """Within `with bus.held():` events published from this thread wait, in order, until
        the block ends. The core holds events while a packet-in handler runs, so the
        handler's own decisions (say a DHCP ACK) reach the switch before anything its
        events make other components send (say the new device's flows)."""
        return _Held(self)

    def publish(self, topic: str, **payload) -> None:
        held = getattr(self._local, "queue", None)
        if held is not None:
            held.append((topic, payload))
            return
        self._deliver(topic, payload)

    def _deliver(self, topic: str, payload: dict) -> None:
        with self._lock:
            handlers = list(self._handlers.get(topic, [])) + list(self._handlers.get("*", []))
        for handler in handlers:
            try:
                decisions = handler(topic, payload)
            except Exception:  # one broken subscriber must not stop the publisher
                log.exception("event handler for %s failed", topic)
                continue
            if decisions:
                # A handler answers with decisions (flows); the core sends them.
                self.decisions_to(decisions)


class _Held:
    def __init__(self, bus: EventBus):
        self.bus = bus

    def __enter__(self) -> None:
        local = self.bus._local
        self.outermost = getattr(local, "queue", None) is None
        if self.outermost:
            local.queue = []

    def __exit__(self, *exc) -> None:
        if not self.outermost:
            return
        local = self.bus._local
        # Events published while delivering these are delivered at once (in order).
        queue, local.queue = local.queue, None
        for topic, payload in queue:
            self.bus._deliver(topic, payload)
