"""The band an interface is on, from the text of `iw dev IF info`.

One job: text in, band out. iw prints the channel as `channel 6 (2437 MHz), width: ...`;
the frequency decides the band (the channel number alone is ambiguous: 6 GHz reuses 1..233).
No channel line (interface down, not an AP yet) or an unreadable one: None.
"""
from __future__ import annotations

import re

from ...wifiband import band_of

CHANNEL = re.compile(r"^\s*channel\s+\d+\s+\((\d+)(?:\.\d+)?\s*MHz\)", re.MULTILINE)


def parse_band(text: str) -> str | None:
    match = CHANNEL.search(text or "")
    return band_of(int(match.group(1))) if match else None
