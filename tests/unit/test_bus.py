"""The event bus: held events wait for the end of the outermost hold, in order; other
threads are not held; subscribers may change while an event is delivered."""
import threading

import pytest

from homework.bus import EventBus
from homework.events import Alert, Schedule, Wifi


def recorder(bus, topic="schedule"):
    seen = []
    bus.subscribe(topic, lambda topic, ev: seen.append(ev.mac))
    return seen


def test_held_events_wait_for_the_outermost_block_in_order():
    bus = EventBus()
    seen = recorder(bus)
    with bus.held():
        bus.publish(Schedule(mac="1"))
        with bus.held():
            bus.publish(Schedule(mac="2"))
        assert seen == []               # the inner block's end delivers nothing
        bus.publish(Schedule(mac="3"))
    assert seen == ["1", "2", "3"]
    bus.publish(Schedule(mac="4"))
    assert seen == ["1", "2", "3", "4"]         # nothing held any more


def test_another_thread_is_not_held():
    bus = EventBus()
    seen = recorder(bus)
    with bus.held():
        t = threading.Thread(target=lambda: bus.publish(Schedule(mac="1")))
        t.start()
        t.join()
        assert seen == ["1"]
        bus.publish(Schedule(mac="2"))
        assert seen == ["1"]
    assert seen == ["1", "2"]


def test_subscribers_change_during_a_delivery_without_disturbing_it():
    bus = EventBus()
    late = []

    def first(topic, ev):
        bus.subscribe("schedule", lambda topic, ev: late.append(ev.mac))
        bus.unsubscribe("schedule", first)

    bus.subscribe("schedule", first)
    seen = recorder(bus)
    bus.publish(Schedule(mac="1"))
    assert seen == ["1"] and late == []   # the list the delivery started with
    bus.publish(Schedule(mac="2"))
    assert seen == ["1", "2"] and late == ["2"]


def test_star_gets_everything_and_decisions_go_to_the_core():
    bus = EventBus()
    sent = []
    bus.decisions_to = sent.extend
    bus.subscribe("*", lambda topic, ev: [f"{topic}:{ev.get('mac') or ev.get('ssid')}"])
    bus.publish(Schedule(mac="1"))
    bus.publish(Wifi(ssid="2"))
    assert sent == ["schedule:1", "wifi:2"]


def test_a_failing_handler_does_not_stop_the_others():
    bus = EventBus()

    def broken(topic, ev):
        raise RuntimeError("boom")

    bus.subscribe("schedule", broken)
    seen = recorder(bus)
    bus.publish(Schedule(mac="1"))
    assert seen == ["1"]


def test_only_declared_topics_and_alert_kinds_pass():
    bus = EventBus()
    with pytest.raises(ValueError, match="declared"):
        bus.subscribe("no-such-topic", lambda topic, ev: None)
    with pytest.raises(ValueError, match="declared"):
        bus.publish("no-such-topic", mac="x")
    with pytest.raises(TypeError):
        bus.publish("schedule", mac="x", extra=1)       # a field the topic does not declare
    with pytest.raises(ValueError):
        Alert(mac="", kind="no-such-kind", detail="")   # an alert kind not in AlertKind
    seen = recorder(bus)
    bus.publish("schedule", mac="7")                    # built from its topic and fields
    assert seen == ["7"]
