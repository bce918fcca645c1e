"""Topics and payloads (pure). Per device, with ID = the MAC without colons:

- `{prefix}/device/ID/presence`: "home" while it holds a lease, else "not_home" (retained);
- `{prefix}/device/ID/attributes`: JSON {mac, state, name, owner, type, ip, rx_bytes, tx_bytes}
  (retained; bytes since the controller started);
- `{prefix}/device/ID/set`: commands "permit" or "deny" (only the admin role may publish
  here: the broker's ACL decides, see docs/mqtt.md);
- `{discovery}/device_tracker/homework_ID/config` and `{discovery}/sensor/homework_ID_rx|tx/config`:
  Home Assistant MQTT discovery (retained).
"""
from __future__ import annotations

import json

COMMANDS = ("permit", "deny")


def device_id(mac: str) -> str:
    return mac.replace(":", "").lower()


def presence_topic(prefix: str, mac: str) -> str:
    return f"{prefix}/device/{device_id(mac)}/presence"


def attributes_topic(prefix: str, mac: str) -> str:
    return f"{prefix}/device/{device_id(mac)}/attributes"


def command_filter(prefix: str) -> str:
    return f"{prefix}/device/+/set"


def command_of(prefix: str, topic: str, payload: bytes) -> tuple[str, str] | None:
    """(device id, action) of a command message, or None if it is not one."""
    parts = topic.split("/")
    head = prefix.split("/")
    if len(parts) != len(head) + 3 or parts[:len(head)] != head or parts[-3] != "device" or parts[-1] != "set":
        return None
    action = payload.decode("utf-8", "replace").strip().lower()
    return (parts[-2], action) if action in COMMANDS else None


def discovery(prefix: str, disc: str, mac: str, name: str) -> list[tuple[str, str]]:
    """(topic, JSON payload) of the device's discovery messages."""
    ident = device_id(mac)
    device = {"identifiers": [f"homework_{ident}"], "connections": [["mac", mac]],
              "name": name or mac, "via_device": "homework_router"}
    out = [(f"{disc}/device_tracker/homework_{ident}/config", json.dumps({
        "name": None, "unique_id": f"homework_{ident}", "object_id": f"homework_{ident}",
        "state_topic": presence_topic(prefix, mac), "payload_home": "home", "payload_not_home": "not_home",
        "source_type": "router", "json_attributes_topic": attributes_topic(prefix, mac), "device": device}))]
    for key, label in (("rx", "received"), ("tx", "sent")):
        out.append((f"{disc}/sensor/homework_{ident}_{key}/config", json.dumps({
            "name": f"Data {label}", "unique_id": f"homework_{ident}_{key}",
            "state_topic": attributes_topic(prefix, mac), "value_template": f"{{{{ value_json.{key}_bytes }}}}",
            "unit_of_measurement": "B", "device_class": "data_size", "state_class": "total_increasing",
            "device": device})))
    return out
