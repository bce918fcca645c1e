"""hostapd's events for a station joining or leaving one of its access points.

`<3>AP-STA-CONNECTED 02:00:00:00:01:00` comes the moment a station completes its
association (with its keys, or its 802.1X), `<3>AP-STA-DISCONNECTED <mac>` when it leaves;
newer hostapd versions may add fields after the MAC (`keyid=...`, `p2p_dev_addr=...`).
A station that roams to this access point is thus known here at once, where a station
dump poll would see it up to an interval later: the cue to read the radio now.
"""
from __future__ import annotations

from ...macaddr import BadMac, normalize

CONNECTED = "AP-STA-CONNECTED"
DISCONNECTED = "AP-STA-DISCONNECTED"
_KINDS = {CONNECTED: "connected", DISCONNECTED: "disconnected"}


def station_event(text: str) -> tuple[str, str] | None:
    """("connected" | "disconnected", mac) for one of the two events; None for any other
    event or one whose MAC cannot be read (a cue only: nothing is lost by ignoring it)."""
    body = text.split(">", 1)[1] if text.startswith("<") and ">" in text else text
    fields = body.split()
    if len(fields) < 2 or fields[0] not in _KINDS:
        return None
    try:
        return _KINDS[fields[0]], normalize(fields[1])
    except BadMac:
        return None
