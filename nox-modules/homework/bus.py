"""In-process event bus: components publish changes (device seen, lease granted, decision,
alert, link); the hwdb sink logs them and the API streams them to the Guest Board. Every
event is one of the dataclasses of events.py; an undeclared topic is refused."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .events import TOPICS, Event

log = logging.getLogger(__name__)

# handler(topic, event): the event is the topic's class of events.py; what it returns (a
# list of decisions, or None) goes to the switch
Handler = Callable[[str, Any], Any]


class EventBus:
    """Publishing is on every packet's path, so it takes no lock: the handler lists are
    replaced, never changed in place (a delivery iterates the list it found), and held
    events are kept per thread id in a plain dict. Under the controller's eventlet,
    threading.Lock and threading.local are green objects that cost more than the rest of
    a publish (the profile of a burst of new devices)."""

    def __init__(self):
        self._lock = threading.Lock()       # subscribers only
        self._handlers: dict[str, tuple[Handler, ...]] = {}
        self._held: dict[int, list] = {}    # thread (or green thread) id -> events held
        # Where decisions returned by handlers go (the core's send); a bare bus drops them.
        self.decisions_to: Callable[[list], None] = lambda decisions: None

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Topic '*' receives everything."""
        if topic != "*" and topic not in TOPICS:
            raise ValueError(f"no event topic {topic!r} is declared in homework/events.py")
        with self._lock:
            self._handlers[topic] = (*self._handlers.get(topic, ()), handler)

    def unsubscribe(self, topic: str, handler: Handler) -> None:
        with self._lock:
            handlers = list(self._handlers.get(topic, ()))
            if handler in handlers:
                handlers.remove(handler)
                self._handlers[topic] = tuple(handlers)

    def heard(self, topic: str) -> bool:
        """Does anyone subscribe to `topic` itself? A publisher may skip building an event
        nobody hears (DHCP's fingerprints without the identify component)."""
        return bool(self._handlers.get(topic))

    def held(self) -> _Held:
        """Within `with bus.held():` events published from this thread wait, in order, until
        the block ends. The core holds events while a packet-in handler runs, so the
        handler's own decisions (say a DHCP ACK) reach the switch before anything its
        events make other components send (say the new device's flows)."""
        return _Held(self)

    def publish(self, event: Event | str, **fields) -> None:
        """Publish an event of events.py. `publish("lease", mac=...)` builds it from its topic
        and fields (tests use it); an undeclared topic or field raises either way."""
        if isinstance(event, str):
            if event not in TOPICS:
                raise ValueError(f"no event topic {event!r} is declared in homework/events.py")
            event = TOPICS[event](**{("class_" if k == "class" else k): v for k, v in fields.items()})
        topic = getattr(event, "TOPIC", "")
        if TOPICS.get(topic) is not type(event):
            raise TypeError(f"not an event declared in homework/events.py: {event!r}")
        held = self._held.get(threading.get_ident())
        if held is not None:
            held.append((topic, event))
            return
        self._deliver(topic, event)

    def _deliver(self, topic: str, payload: Event) -> None:
        handlers = self._handlers.get(topic, ()) + self._handlers.get("*", ())
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
        self.ident = threading.get_ident()
        self.outermost = self.ident not in self.bus._held
        if self.outermost:
            self.bus._held[self.ident] = []

    def __exit__(self, *exc) -> None:
        if not self.outermost:
            return
        # Events published while delivering these are delivered at once (in order).
        queue = self.bus._held.pop(self.ident, [])
        for topic, payload in queue:
            self.bus._deliver(topic, payload)
