"""Parse hostapd's control-interface event for a received probe request.

One job: a datagram's text in, a ProbeRequest out. hostapd (2.10, src/ap/beacon.c) sends
`<3>RX-PROBE-REQUEST sa=<mac> signal=<dBm>` to every attached monitor when it answers a
probe request (wildcard or for its own SSID); newer or patched builds append more
`key=value` fields (channel, rate, buf), which are ignored. The `<N>` level prefix is
optional. Any other event is not ours (None); an RX-PROBE-REQUEST we cannot read raises
BadEvent, so the caller can count it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...macaddr import BadMac, normalize

EVENT = "RX-PROBE-REQUEST"
LEVEL = re.compile(r"^<\d+>")


class BadEvent(ValueError):
    pass


@dataclass(frozen=True)
class ProbeRequest:
    mac: str
    signal: int            # dBm as hostapd reports it (0 when the driver gives none)


def parse_event(text: str) -> ProbeRequest | None:
    line = LEVEL.sub("", text.strip(), count=1)
    name, _, rest = line.partition(" ")
    if name != EVENT:
        return None
    fields = dict(part.split("=", 1) for part in rest.split() if "=" in part)
    try:
        mac = normalize(fields["sa"])
        signal = int(fields["signal"])
    except (KeyError, ValueError, BadMac) as exc:
        raise BadEvent(f"unreadable probe request event: {line[:120]!r}") from exc
    if not -150 <= signal <= 0:
        raise BadEvent(f"probe request signal out of range: {signal}")
    return ProbeRequest(mac=mac, signal=signal)
