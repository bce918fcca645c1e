"""The metrics component's manifest (homework/manifest.py): nothing stored; it reads
every counter (with its help from the manifests) and the traffic events."""
from __future__ import annotations

from ... import events
from ...manifest import Manifest

MANIFEST = Manifest(
    component="metrics",
    hears=(events.Bandwidth, events.Flows),
    counters={
        "metrics.scrapes": "Prometheus scrapes answered",
        "metrics.devices_pruned": "devices dropped from the traffic gauges after leaving",
    },
)
