"""The link simulator's manifest (homework/manifest.py): link rows for the emulated
home's devices; nothing stored."""
from __future__ import annotations

from ... import events
from ...interfaces import RadioStations
from ...manifest import Manifest

MANIFEST = Manifest(component="linksim", needs={"radio": RadioStations}, publishes=(events.Link,))
