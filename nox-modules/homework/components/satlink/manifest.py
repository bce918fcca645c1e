"""The satellite channel's manifest (homework/manifest.py): nothing stored (pairings are
the core's); what it passes between the satellites' agents and the bus."""
from __future__ import annotations

from ... import events
from ...manifest import Manifest

MANIFEST = Manifest(
    component="satlink",
    publishes=(events.RadioReport,),
    hears=(events.Device, events.Wifi, events.Satellite),
    counters={
        "satlink.sessions": "sessions of satellite agents admitted",
        "satlink.refused": "agent connections refused (handshake failed, or not paired)",
        "satlink.bad_messages": "lines from agents that were dropped as malformed",
    },
)
