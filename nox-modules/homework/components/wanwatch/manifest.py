"""WAN watch's manifest (homework/manifest.py): nothing stored; the alerts it raises."""
from __future__ import annotations

from ... import events
from ...manifest import Manifest

MANIFEST = Manifest(
    component="wanwatch",
    publishes=(events.Alert,),
    alerts=(events.AlertKind.WAN_DOWN, events.AlertKind.WAN_UP),
    counters={"wanwatch.down": "times the WAN went down", "wanwatch.up": "times the WAN came back"},
)
