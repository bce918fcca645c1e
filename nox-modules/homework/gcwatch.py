"""Python's garbage collector in a long-running controller.

A full collection walks every object the interpreter tracks. Started, the controller
holds about 140,000 (os-ken's OpenFlow classes, eventlet, the config), and a full
collection took 105-125 ms on the router's 2 cores: the one hub thread stops for that
long, so DHCP answers, flows and API calls wait behind it (one came in every few
bursts of a hundred new devices). Those objects live as long as the process, so after
start-up they are frozen (`gc.freeze`): later collections skip them and cost what the
state made since then costs. `homework stats` shows the frozen count and every full
collection with its time (controller.gc_*), so a pause is visible rather than guessed.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable


def freeze_startup() -> int:
    """Collect what start-up left behind, then freeze the rest; the number frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class FullCollections:
    """Counts each full (generation 2) collection and its milliseconds."""

    def __init__(self, count: Callable[..., None], clock: Callable[[], float] = time.perf_counter):
        self._count = count
        self._clock = clock
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = self._clock()
            return
        self._count("controller.gc_full_collections")
        self._count("controller.gc_full_ms", round((self._clock() - self._started) * 1000))

    def install(self) -> FullCollections:
        gc.callbacks.append(self)
        return self

    def remove(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)
