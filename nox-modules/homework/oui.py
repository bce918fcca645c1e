"""Vendor names for MAC addresses, from the IEEE registry files of Debian's ieee-data
package (/usr/share/ieee-data). The longest assignment wins: MA-S (36 bits), then MA-M
(28 bits), then MA-L (24 bits, the classic OUI).

The registries are tens of thousands of lines: they are read once, in a real OS thread
(worker.offload), never on the controller's event loop; a caller that asks before they are
read waits for them without holding the loop (`load` at start reads them ahead).

Locally administered addresses (bit 1 of the first octet set) carry no vendor: phones
use them as per-network private ("randomised") addresses, so the board says so instead.
"""
from __future__ import annotations

import csv
import logging
import threading
from pathlib import Path

from .worker import offload

log = logging.getLogger("homework.oui")

IEEE_DIR = Path("/usr/share/ieee-data")
# file name -> number of hex digits of the assignment
REGISTRIES = (("oui36.csv", 9), ("mam.csv", 7), ("oui.csv", 6))


def is_private(mac: str) -> bool:
    """Locally administered (randomised/private) address?"""
    return bool(int(mac[:2], 16) & 0x02)


class OuiTable:
    def __init__(self, directory: Path = IEEE_DIR):
        self.directory = Path(directory)
        self._tables: list[tuple[int, dict[str, str]]] | None = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Read the registries now (a thread at start), not at the first device's view."""
        self._load()

    def _load(self) -> list[tuple[int, dict[str, str]]]:
        tables = self._tables
        if tables is not None:
            return tables
        with self._lock:        # under eventlet a green lock: a second caller waits in the hub
            if self._tables is None:
                self._tables = offload(self._read, self.directory)
            return self._tables

    @staticmethod
    def _read(directory: Path) -> list[tuple[int, dict[str, str]]]:
        tables = []
        for name, digits in REGISTRIES:
            table: dict[str, str] = {}
            try:
                with open(directory / name, newline="", encoding="utf-8", errors="replace") as fh:
                    for row in csv.reader(fh):
                        if len(row) >= 3 and len(row[1]) == digits and row[2] != "Private":
                            table[row[1].upper()] = row[2].strip()
            except OSError as exc:
                log.warning("no IEEE registry %s (%s): vendor names will be missing", name, exc)
            tables.append((digits, table))
        return tables

    def vendor(self, mac: str) -> str:
        """Organisation name for a MAC ('aa:bb:..'), or '' if unknown or private."""
        if is_private(mac):
            return ""
        digits = mac.replace(":", "").replace("-", "").upper()
        for length, table in self._load():
            name = table.get(digits[:length])
            if name:
                return name
        return ""


_default: OuiTable | None = None


def default_table() -> OuiTable:
    global _default
    if _default is None:
        _default = OuiTable()
    return _default
