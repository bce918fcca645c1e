"""EAPOL's manifest (homework/manifest.py): no table (the blacklist is the devices'
state), and its counters."""
from __future__ import annotations

from ... import events
from ...manifest import Manifest

MANIFEST = Manifest(
    component="eapol",
    hears=(events.Device,),
    counters={
        "eapol.to_hostapd": "EAPOL frames passed from a device to hostapd",
        "eapol.to_device": "EAPOL frames passed from hostapd to a device",
        "eapol.dropped": "EAPOL frames of blacklisted devices dropped",
    },
)
