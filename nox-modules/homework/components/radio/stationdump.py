"""Parse the text of `iw dev IF station dump` into Station records.

One job: text in, stations out. The format (iw's station.c) is a "Station MAC (on IF)"
header followed by tab-indented "key:<TAB>value" lines. Fields this parser does not use
are ignored; a line that is neither a header nor "key: value", a field line before any
header, or a known field whose value does not parse is *skipped and counted*, so a
truncated or garbled dump gives the stations it can and never raises.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...macaddr import normalize

HEADER = re.compile(r"^Station\s+([0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5})\s*(?:\(on\s+(\S+)\))?\s*$")
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?")


@dataclass
class Station:
    mac: str
    ifname: str = ""
    signal: float | None = None        # dBm (the last frame's; "signal avg" when that is all there is)
    inactive_ms: int | None = None
    rx_bytes: int | None = None
    tx_bytes: int | None = None
    rx_packets: int | None = None
    tx_packets: int | None = None
    tx_retries: int | None = None
    tx_failed: int | None = None
    tx_bitrate: float | None = None    # MBit/s
    rx_bitrate: float | None = None


@dataclass
class Dump:
    stations: list[Station]
    skipped: int                       # malformed lines (garbage, orphans, unparsable values)


def _int(text: str) -> int:
    return int(text.split()[0])


def _float(text: str) -> float:
    match = NUMBER.match(text)
    if match is None:
        raise ValueError(text)
    return float(match.group(0))


# "key as iw prints it" -> (Station attribute, value parser)
FIELDS = {
    "inactive time": ("inactive_ms", _int),
    "rx bytes": ("rx_bytes", _int),
    "tx bytes": ("tx_bytes", _int),
    "rx packets": ("rx_packets", _int),
    "tx packets": ("tx_packets", _int),
    "tx retries": ("tx_retries", _int),
    "tx failed": ("tx_failed", _int),
    "signal": ("signal", _float),
    "signal avg": ("signal", _float),
    "tx bitrate": ("tx_bitrate", _float),
    "rx bitrate": ("rx_bitrate", _float),
}


def parse(text: str, ifname: str = "") -> Dump:
    stations: list[Station] = []
    current: Station | None = None
    has_signal = False
    skipped = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        header = HEADER.match(line)
        if header:
            current = Station(mac=normalize(header.group(1)), ifname=header.group(2) or ifname)
            has_signal = False
            stations.append(current)
            continue
        key, sep, value = line.partition(":")
        if not sep or current is None or not raw[:1].isspace():
            skipped += 1
            continue
        field = FIELDS.get(key.strip())
        if field is None:
            continue                   # a field we do not use (authorized, mfp, ...)
        attr, convert = field
        if attr == "signal" and key.strip() == "signal avg" and has_signal:
            continue                   # the last frame's signal wins over the average
        try:
            setattr(current, attr, convert(value.strip()))
        except (ValueError, IndexError):
            skipped += 1
            continue
        if key.strip() == "signal":
            has_signal = True
    return Dump(stations=stations, skipped=skipped)
