"""The band an interface is on, from the text of `iw dev IF info`.

One job: text in, band out. iw prints the channel as `channel 6 (2437 MHz), width: ...`;
the frequency decides the band (the channel number alone is ambiguous: 6 GHz reuses 1..233).
No channel line (interface down, not an AP yet) or an unreadable one: None.
"""
from __future__ import annotations

import re

CHANNEL = re.compile(r"^\s*channel\s+\d+\s+\((\d+)(?:\.\d+)?\s*MHz\)", re.MULTILINE)


def band_of(mhz: int) -> str | None:
    if 2400 <= mhz < 2500:
        return "2.4 GHz"
    if 4900 <= mhz < 5925:          # 5.9 GHz ITS channels (5855-5925) are still the 5 GHz band
        return "5 GHz"
    if 5925 <= mhz <= 7125:
        return "6 GHz"
    if 57000 <= mhz <= 71000:
        return "60 GHz"
    return None


def parse_band(text: str) -> str | None:
    match = CHANNEL.search(text or "")
    return band_of(int(match.group(1))) if match else None
