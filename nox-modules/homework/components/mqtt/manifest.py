"""The MQTT component's manifest (homework/manifest.py): nothing stored; the events it
passes to the broker and its counters."""
from __future__ import annotations

from ... import events
from ...interfaces import BrokerStatus
from ...manifest import Manifest

MANIFEST = Manifest(
    component="mqtt",
    offers=(BrokerStatus,),
    hears=(events.Device, events.Lease, events.Bandwidth, events.Notification),
    counters={
        "mqtt.published": "messages published to the broker",
        "mqtt.commands": "commands taken from the broker (permit, deny, ...)",
        "mqtt.commands_ignored": "messages on the command topics that were not a command we take",
    },
)
