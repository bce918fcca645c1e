"""How many never-seen MACs a port may bring (a DHCP flood of random MACs from
one port must not bury the Guest Board and the state database).

Each port has a token bucket: `burst` new MACs at once, then `per_second`. Known devices
never pass through here. When a port's bucket is empty, a new MAC is remembered and let
in when it asks again at least RETRY_AFTER seconds later, from a second, smaller bucket:
real DHCP clients retransmit their DISCOVER after 1-4 s, while a flood of random MACs
never repeats one. So a party of real guests on the shared Wi-Fi port still gets in
during a flood, a little slower, and the flood gets no further than the buckets allow.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

RETRY_AFTER = 0.5          # seconds: a retransmission, not the same burst
RETRY_WINDOW = 60.0        # a remembered MAC that asks again later than this starts over
WAITING_LIMIT = 4096       # remembered MACs (all ports); the oldest are dropped first
RETRY_BURST = 8


@dataclass
class _Bucket:
    tokens: float
    updated: float

    def take(self, now: float, burst: float, per_second: float) -> bool:
        self.tokens = min(burst, self.tokens + (now - self.updated) * per_second)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class NewMacGate:
    def __init__(self, burst: int, per_second: float):
        self.burst = float(burst)
        self.per_second = per_second
        self._first: dict[int, _Bucket] = {}
        self._retry: dict[int, _Bucket] = {}
        self._waiting: OrderedDict[tuple[int, str], float] = OrderedDict()

    def charge(self, port: int, now: float) -> None:
        """A new MAC let in elsewhere (homework-dhcpd's own offer, from the same figures):
        it spends this port's allowance as if it had come through here. The bucket may go
        below zero, down to minus one burst: the daemon's bucket and this one together
        then let in what one would."""
        first = self._first.setdefault(port, _Bucket(self.burst, now))
        first.tokens = max(-self.burst, min(self.burst, first.tokens + (now - first.updated) * self.per_second) - 1.0)
        first.updated = now

    def admit(self, port: int, mac: str, now: float) -> bool:
        """May this never-seen MAC on this port become a device now?"""
        first = self._first.setdefault(port, _Bucket(self.burst, now))
        if first.take(now, self.burst, self.per_second):
            self._waiting.pop((port, mac), None)
            return True
        key = (port, mac)
        asked = self._waiting.get(key)
        if asked is not None and RETRY_AFTER <= now - asked <= RETRY_WINDOW:
            retry = self._retry.setdefault(port, _Bucket(RETRY_BURST, now))
            if retry.take(now, RETRY_BURST, max(self.per_second, 1.0)):
                del self._waiting[key]
                return True
        if asked is None or now - asked > RETRY_WINDOW:
            self._waiting[key] = now
            self._waiting.move_to_end(key)
            while len(self._waiting) > WAITING_LIMIT:
                self._waiting.popitem(last=False)
        return False
