"""gcwatch: the controller's start-up objects frozen, full collections counted with
their time (`homework stats`: controller.gc_*)."""
import gc

from homework.counters import Counters
from homework.gcwatch import FullCollections, freeze_startup


def test_full_collections_are_counted_with_their_milliseconds():
    counters = Counters()
    now = [10.0]
    watch = FullCollections(counters.count, clock=lambda: now[0])
    watch("start", {"generation": 0})
    watch("stop", {"generation": 0})               # young collections are not counted
    watch("start", {"generation": 2})
    now[0] += 0.1234
    watch("stop", {"generation": 2, "collected": 5})
    assert counters.get("controller.gc_full_collections") == 1
    assert counters.get("controller.gc_full_ms") == 123


def test_installed_it_sees_the_interpreters_own_collections():
    counters = Counters()
    watch = FullCollections(counters.count).install()
    try:
        gc.collect(0)
        assert counters.get("controller.gc_full_collections") == 0
        gc.collect()
        assert counters.get("controller.gc_full_collections") == 1
    finally:
        watch.remove()
    gc.collect()
    assert counters.get("controller.gc_full_collections") == 1     # removed: no longer counted


def test_start_up_objects_are_frozen_and_a_full_collection_skips_them():
    try:
        frozen = freeze_startup()
        # as many as it froze, less any the test run's other threads freed meanwhile (a
        # frozen object that is freed leaves the count: CI counted 3 fewer once)
        assert frozen > 1000 and frozen - 1000 < gc.get_freeze_count() <= frozen
        tracked_before = len(gc.get_objects())
        assert tracked_before < frozen                # what a collection walks: not the frozen ones
        cycle = [[]]
        cycle[0].append(cycle)                        # garbage made after the freeze is still collected
        del cycle
        assert gc.collect() >= 2
    finally:
        gc.unfreeze()
