"""Which Wi-Fi band a frequency is in: one home for the rule, used by the radio monitor
(an interface's channel) and the hardware report (a card's channels). Kept apart from
both so the report, which runs at boot, does not import the radio component."""
from __future__ import annotations


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
