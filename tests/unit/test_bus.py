"""The event bus: held events wait for the end of the outermost hold, in order; other
threads are not held; subscribers may change while an event is delivered."""
import threading

from homework.bus import EventBus


def recorder(bus, topic="t"):
    seen = []
    bus.subscribe(topic, lambda topic, ev: seen.append(ev["n"]))
    return seen


def test_held_events_wait_for_the_outermost_block_in_order():
    bus = EventBus()
    seen = recorder(bus)
    with bus.held():
        bus.publish("t", n=1)
        with bus.held():
            bus.publish("t", n=2)
        assert seen == []               # the inner block's end delivers nothing
        bus.publish("t", n=3)
    assert seen == [1, 2, 3]
    bus.publish("t", n=4)
    assert seen == [1, 2, 3, 4]         # nothing held any more


def test_another_thread_is_not_held():
    bus = EventBus()
    seen = recorder(bus)
    with bus.held():
        t = threading.Thread(target=lambda: bus.publish("t", n=1))
        t.start()
        t.join()
        assert seen == [1]
        bus.publish("t", n=2)
        assert seen == [1]
    assert seen == [1, 2]


def test_subscribers_change_during_a_delivery_without_disturbing_it():
    bus = EventBus()
    late = []

    def first(topic, ev):
        bus.subscribe("t", lambda topic, ev: late.append(ev["n"]))
        bus.unsubscribe("t", first)

    bus.subscribe("t", first)
    seen = recorder(bus)
    bus.publish("t", n=1)
    assert seen == [1] and late == []   # the list the delivery started with
    bus.publish("t", n=2)
    assert seen == [1, 2] and late == [2]


def test_star_gets_everything_and_decisions_go_to_the_core():
    bus = EventBus()
    sent = []
    bus.decisions_to = sent.extend
    bus.subscribe("*", lambda topic, ev: [f"{topic}:{ev['n']}"])
    bus.publish("a", n=1)
    bus.publish("b", n=2)
    assert sent == ["a:1", "b:2"]


def test_a_failing_handler_does_not_stop_the_others():
    bus = EventBus()

    def broken(topic, ev):
        raise RuntimeError("boom")

    bus.subscribe("t", broken)
    seen = recorder(bus)
    bus.publish("t", n=1)
    assert seen == [1]
