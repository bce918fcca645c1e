"""Which bus events become notifications, and their words: a title and a detail, each
whole sentences that name the device as the household knows it (wording.py); the machine
fields (the alert's kind, the MAC, its numbers) go along in `mac`, `kind` and `data`.
Pure: (topic, payload) and how to name a MAC in, a notification's fields (or None) out."""
from __future__ import annotations

from collections.abc import Callable

from ... import wording
from ...events import Alert, Device, Event, of

# wanwatch's alerts (its hysteresis already makes one per change) and the router's own
# start-up's: not deduplicated.
WAN_TITLES = {"wan-down": "The internet connection is down.", "wan-up": "The internet connection is back.",
              # the router's own start-up (bootalerts.py): the detail says what and what to do
              "router-boot": "The router's start-up needs your attention."}

# An alert's title by its kind; {who} is the device, as the household names it.
ALERT_TITLES = {
    "dhcp-flood": "Many new devices are asking to join at once.",
    "dhcp-relay": "The router ignored a DHCP relay it does not know.",
    "dhcp-port-mismatch": "Something asked for the address of {who} from the wrong port.",
    "dhcp-release-forged": "Something tried to take the address of {who} away.",
    "dhcp-decline-forged": "Something tried to take the address of {who} away.",
    "flow-limit": "{who} is opening very many connections.",
    "usage-80": "The household has used 80% of its data.",
    "usage-100": "The household has used all of its data.",
    "usage-limit": "{who} has used up its allowance.",
    "usage-burst": "{who} used a lot of data in a short time.",
    "storage-full": "The router's storage is full.",
    "storage-error": "The router cannot save changes.",
    "qos-high-drops": "High-priority traffic is losing packets.",
    "lan-port-missing": "A port of the router is missing.",
    "switch-refused": "The router refused a switch it does not know.",
    **WAN_TITLES,
}


def device_words(device: dict | None, mac: str) -> str:
    """A device event's own row names it (no lookup: a forgotten device has no row)."""
    device = device or {}
    text, source = wording.label(mac, device.get("name") or "", device.get("hostname") or "")
    if source == "vendor":
        return f"an {text}" if text[:1].lower() in "aeiou" else f"a {text}"
    return f"the device {mac}" if source == "mac" else text


def from_event(topic: str, event: Event | dict, name_of: Callable[[str], str] | None = None) -> dict | None:
    """`name_of(mac)`: how an alert's device is named (the notify component looks it up)."""
    if topic not in ("device", "alert"):
        return None
    ev = of(topic, event)
    assert isinstance(ev, (Device, Alert))
    mac = str(ev.mac or "")
    if isinstance(ev, Device):
        who = device_words(ev.device, mac)
        if ev.reason == "seen":
            return {"kind": "device-joining", "mac": mac,
                    "title": wording.sentence(f"{who} asks to join the home network"),
                    "detail": "Let it in or turn it away on the Guest Board.", "data": {}}
        if ev.state == "blacklisted" and ev.old_state != "blacklisted":
            return {"kind": "device-blacklisted", "mac": mac, "title": wording.sentence(f"{who} is blacklisted"),
                    "detail": "It can no longer join the network, not even to ask.", "data": {}}
        return None
    kind = str(ev.kind or "alert")
    who = (name_of or (lambda m: f"the device {m}" if m else "a device"))(mac)
    title = wording.sentence(ALERT_TITLES.get(kind, "The router has something to tell the household.")
                             .format(who=who))
    data = dict(ev.data or {})
    if kind in WAN_TITLES:       # about the router itself: its own kinds
        return {"kind": kind, "mac": "", "title": title, "detail": str(ev.detail or "")[:500], "data": data}
    return {"kind": f"alert-{kind}", "mac": mac, "title": title, "detail": str(ev.detail or "")[:500],
            "data": data}
