"""Whether a device may be reached from the internet now, and if not, why (in words for
the board): permitted, on the network through one of the router's own ports, and not cut
off (paused, bedtime, over a blocking usage limit). The cut-offs are read from the
device's view (`ctx.facts_about`), the facts the schedules and usage components add, so
this module knows no component but the core."""
from __future__ import annotations

STATE_WHY = {
    "pending": "it is waiting for approval",
    "denied": "it was refused",
    "blacklisted": "it is blacklisted",
}


def why_closed(device, lease, facts: dict) -> str:
    """'' when the device may be reached, else a phrase: 'closed: <why>'."""
    if device is None:
        return "it has been forgotten"
    if device.state != "permitted":
        return STATE_WHY.get(device.state, f"it is {device.state}")
    if lease is None or not lease.active:
        return "it is not on the network now"
    if not lease.local:
        return "it is behind a DHCP relay, not on one of the router's ports"
    if facts.get("paused"):
        return "it is paused" if facts.get("paused_by") != "schedule" else "it is in its bedtime"
    if facts.get("usage_blocked"):
        return "it is over its usage limit"
    return ""
