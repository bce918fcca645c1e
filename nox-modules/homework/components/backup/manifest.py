"""The backup component's manifest (homework/manifest.py): no table of its own; it reads
every other manifest's tables (contents.py)."""
from __future__ import annotations

from ...interfaces import DnsdReady, RestoredLists
from ...manifest import Manifest

MANIFEST = Manifest(component="backup", routes=("backup",), needs={"lists": RestoredLists, "dnsd": DnsdReady})
