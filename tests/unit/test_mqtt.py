"""MQTT and Home Assistant discovery with a fake broker link: discovery and
state per device, presence from the lease, traffic, forgetting, and commands only when
enabled and well-formed."""
import json

import pytest

from conftest import make_core
from homework.components.mqtt import topics
from homework.components.mqtt.component import Mqtt
from homework.flows import Datapath
from routingkit import join

A = "02:00:00:00:00:0a"


class FakeLink:
    def __init__(self, on_connect, on_message):
        self.on_connect, self.on_message = on_connect, on_message
        self.retained, self.subscribed = {}, []

    def start(self):
        self.on_connect()

    def stop(self):
        pass

    def publish(self, topic, payload, retain=True):
        self.retained[topic] = payload

    def subscribe(self, topic):
        self.subscribed.append(topic)


@pytest.fixture
def make(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(Mqtt, "_paho", lambda self, c, m: FakeLink(c, m))

    def make(**over):
        over.setdefault("mqtt_host", "broker.test")
        core = make_core(tmp_path, components=("dhcp", "routing", "notify", "mqtt"), clock=clock, **over)
        core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1}))
        return core, core.ctx.component("mqtt").link
    return make


def attrs(link, mac):
    return json.loads(link.retained[topics.attributes_topic("homework", mac)])


def test_a_joining_device_is_discovered_present_and_pending(make):
    core, link = make()
    join(core, A, 1)
    ident = "02000000000a"
    disc = json.loads(link.retained[f"homeassistant/device_tracker/homework_{ident}/config"])
    assert disc["unique_id"] == f"homework_{ident}" and disc["state_topic"] == f"homework/device/{ident}/presence"
    assert disc["device"]["connections"] == [["mac", A]]
    rx = json.loads(link.retained[f"homeassistant/sensor/homework_{ident}_rx/config"])
    assert rx["value_template"] == "{{ value_json.rx_bytes }}" and rx["state_class"] == "total_increasing"
    assert link.retained[f"homework/device/{ident}/presence"] == "home"
    assert attrs(link, A)["state"] == "pending" and attrs(link, A)["ip"]
    core.ctx.devices.set_meta(A, name="Study laptop", owner="Mary")
    core.ctx.devices.permit(A)
    core.bus.publish("bandwidth", mac=A, ip="10.2.0.2", bytes=1500, up=500, down=1000)
    got = attrs(link, A)
    assert (got["state"], got["name"], got["owner"], got["rx_bytes"], got["tx_bytes"]) == \
        ("permitted", "Study laptop", "Mary", 1000, 500)
    assert json.loads(link.retained[f"homeassistant/device_tracker/homework_{ident}/config"])["device"]["name"] \
        == "Study laptop"


def test_forgetting_clears_the_retained_messages(make):
    core, link = make()
    join(core, A, 1)
    core.ctx.devices.forget(A)
    assert link.retained["homeassistant/device_tracker/homework_02000000000a/config"] == ""
    assert link.retained[topics.attributes_topic("homework", A)] == ""


def test_commands_are_ignored_unless_enabled(make):
    core, link = make()
    join(core, A, 1)
    assert link.subscribed == []
    link.on_message("homework/device/02000000000a/set", b"permit")
    assert core.ctx.devices.get(A).state == "pending"


def test_commands_permit_and_deny_when_enabled(make):
    core, link = make(mqtt_accept_commands=True)
    join(core, A, 1)
    assert link.subscribed == ["homework/device/+/set"]
    link.on_message("homework/device/02000000000a/set", b"permit")
    assert core.ctx.devices.get(A).state == "permitted"
    link.on_message("homework/device/02000000000a/set", b" DENY\n")
    assert core.ctx.devices.get(A).state == "denied"
    for topic, payload in (("homework/device/02000000000a/set", b"blacklist"),
                           ("homework/device/ffffffffffff/set", b"permit"),
                           ("other/device/02000000000a/set", b"permit"),
                           ("homework/device/02000000000a/set", b"\xff\xfe")):
        link.on_message(topic, payload)
    assert core.ctx.devices.get(A).state == "denied"
    assert core.counters.get("mqtt.commands") == 2 and core.counters.get("mqtt.commands_ignored") == 4


def test_no_broker_configured_means_no_link(make):
    core, link = make(mqtt_host="")
    assert link is None


def test_notifications_go_to_the_broker(make):
    core, link = make()
    join(core, A, 1)
    note = json.loads(link.retained["homework/notification"])
    assert note["kind"] == "device-joining" and note["mac"] == A
