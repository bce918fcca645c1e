"""Alerts the image's boot scripts leave (homework/bootalerts.py): each file is published
once as an alert about no device, which the notify component turns into a notification
the Guest Board shows."""
import json

from homework import bootalerts
from homework.bus import EventBus
from homework.components.notify.events import from_event
from homework.events import AlertKind


def test_each_boot_alert_is_published_once(tmp_path):
    bus, got = EventBus(), []
    bus.subscribe("alert", lambda topic, ev: got.append(ev))
    d = tmp_path / "alerts"
    d.mkdir()
    (d / "esp-check.json").write_text(json.dumps({"kind": "router-boot", "detail": "boot partition repaired",
                                                  "at": 1.0}))
    (d / "boot-slot.json").write_text("{not json")
    assert bootalerts.publish_new(d, bus) == 2
    assert [(a.mac, a.kind) for a in got] == [("", AlertKind.ROUTER_BOOT)] * 2
    assert "could not read" in got[0].detail and got[1].detail == "boot partition repaired"
    assert sorted(p.name for p in d.iterdir()) == ["boot-slot.json.told", "esp-check.json.told"]
    assert bootalerts.publish_new(d, bus) == 0 and len(got) == 2            # told once
    assert bootalerts.publish_new(tmp_path / "none", bus) == 0               # no directory: nothing
    note = from_event("alert", got[1])
    assert note["title"] == "The router's start-up needs your attention." and note["mac"] == ""
