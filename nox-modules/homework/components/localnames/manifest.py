"""Local names' manifest (homework/manifest.py): nothing stored (the hosts file is made
from the devices and leases), and its counters."""
from __future__ import annotations

from ... import events
from ...manifest import Manifest

MANIFEST = Manifest(
    component="localnames",
    hears=(events.Device, events.Lease),
    counters={
        "localnames.writes": "times the hosts file of local names was written",
        "localnames.write_failures": "writes of the hosts file that failed",
    },
)
