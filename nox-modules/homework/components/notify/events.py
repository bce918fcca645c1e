"""Which bus events become notifications, and their words. Pure: (topic, payload) in,
a notification's fields (or None) out."""
from __future__ import annotations

from ...events import Event, of

# wanwatch's alerts; its hysteresis already makes one per change, so they are not deduplicated.
WAN_TITLES = {"wan-down": "Internet connection down", "wan-up": "Internet connection back"}


def from_event(topic: str, ev: Event | dict) -> dict | None:
    if topic not in ("device", "alert"):
        return None
    ev = of(topic, ev)
    mac = str(ev.mac or "")
    if topic == "device":
        device = ev.device or {}
        who = device.get("name") or device.get("hostname") or mac
        if ev.reason == "seen":
            return {"kind": "device-joining", "mac": mac, "title": f"New device asks to join: {who}",
                    "detail": "permit or deny it on the Guest Board"}
        if ev.state == "blacklisted" and ev.old_state != "blacklisted":
            return {"kind": "device-blacklisted", "mac": mac, "title": f"Device blacklisted: {who}",
                    "detail": "it can no longer join the network"}
        return None
    if topic == "alert":
        kind = str(ev.kind or "alert")
        if kind in WAN_TITLES:       # about the router's uplink: its own kinds, plain words
            return {"kind": kind, "mac": "", "title": WAN_TITLES[kind], "detail": str(ev.detail or "")[:500]}
        return {"kind": f"alert-{kind}", "mac": mac, "title": f"Alert: {kind}" + (f" ({mac})" if mac else ""),
                "detail": str(ev.detail or "")[:500]}
    return None
