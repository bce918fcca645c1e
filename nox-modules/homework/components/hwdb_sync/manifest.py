"""hwdb_sync's manifest (homework/manifest.py): the topics it writes to hwdb and its
counters (the sink counts under "hwdb_sync.")."""
from __future__ import annotations

from ... import events
from ...manifest import Manifest

MANIFEST = Manifest(
    component="hwdb_sync",
    hears=(events.Lease, events.Device, events.Flows, events.Bandwidth, events.Alert, events.DnsQuery,
           events.Link, events.QosRate, events.QosApp, events.QosAppRate, events.QosDevice,
           events.AppTuple),
    counters={
        "hwdb_sync.queued": "rows queued for hwdb",
        "hwdb_sync.written": "rows hwdb took",
        "hwdb_sync.rejected": "rows hwdb refused",
        "hwdb_sync.dropped_overflow": "rows dropped because the queue was full (hwdb away for long)",
        "hwdb_sync.batches": "batches sent",
        "hwdb_sync.connects": "connections made to hwdbd",
        "hwdb_sync.failures": "batches that failed (hwdbd away or timing out)",
    },
)
