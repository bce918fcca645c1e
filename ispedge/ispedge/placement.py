"""What a household may ask of the edge, checked: a placement is one connection (the
5-tuple the edge sees, after the router's NAT) put in one of the household's three queues.
Pure: no OVS, no sockets (unit tested)."""
from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass

from .config import Household

QUEUES = ("high", "medium", "default")
PROTOCOLS = {"tcp": 6, "udp": 17}
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class PlacementError(ValueError):
    """Refused: `status` is the HTTP answer (400 malformed, 403 not the household's, 409 budget)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def queue_id(household: Household, queue: str) -> int:
    """The OVS queue number of one of a household's queues (0 is everyone else's)."""
    return household.index * 4 + 1 + QUEUES.index(queue)


@dataclass(frozen=True)
class FiveTuple:
    proto: str
    src: Address
    sport: int
    dst: Address
    dport: int

    def reverse(self) -> FiveTuple:
        return FiveTuple(self.proto, self.dst, self.dport, self.src, self.sport)

    def key(self) -> tuple:
        """The same key for both directions of one connection."""
        a, b = (str(self.src), self.sport), (str(self.dst), self.dport)
        return (self.proto, *min(a, b), *max(a, b))

    def as_dict(self) -> dict:
        return {"proto": self.proto, "src": str(self.src), "sport": self.sport,
                "dst": str(self.dst), "dport": self.dport}


@dataclass
class Placement:
    id: int
    flow: FiveTuple
    queue: str

    def as_dict(self) -> dict:
        return {"id": self.id, **self.flow.as_dict(), "queue": self.queue}


def _port(body: dict, key: str) -> int:
    v = body.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 65535:
        raise PlacementError(f"{key} must be a port number from 1 to 65535, not {v!r}")
    return v


def _addr(body: dict, key: str) -> Address:
    v = body.get(key)
    try:
        a = ipaddress.ip_address(str(v)) if isinstance(v, str) else None
    except ValueError:
        a = None
    if a is None:
        raise PlacementError(f"{key} must be one IPv4 or IPv6 address, not {v!r}")
    return a


def parse_request(household: Household, body: object) -> tuple[FiveTuple, str]:
    """A placement request's connection and queue, or PlacementError. One end of the
    connection must be the household's own (its public address or an address in its
    delegated prefix): anything else is someone else's traffic."""
    if not isinstance(body, dict):
        raise PlacementError("the request must be a JSON object")
    unknown = set(body) - {"proto", "src", "sport", "dst", "dport", "queue"}
    if unknown:
        raise PlacementError(f"unknown fields: {', '.join(sorted(unknown))}")
    proto = body.get("proto")
    if proto not in PROTOCOLS:
        raise PlacementError(f"proto must be tcp or udp, not {proto!r}")
    queue = body.get("queue")
    if queue not in QUEUES:
        raise PlacementError(f"queue must be high, medium or default, not {queue!r}")
    flow = FiveTuple(str(proto), _addr(body, "src"), _port(body, "sport"), _addr(body, "dst"), _port(body, "dport"))
    if flow.src.version != flow.dst.version:
        raise PlacementError("src and dst must both be IPv4 or both IPv6")
    if not (household.owns(flow.src) or household.owns(flow.dst)):
        raise PlacementError(f"neither {flow.src} nor {flow.dst} is an address of household {household.name}: "
                             "a household places only its own connections", status=403)
    return flow, str(queue)


class HouseholdPlacements:
    """One household's placements: at most its budget, one per connection."""

    def __init__(self, household: Household):
        self.household = household
        self.by_id: dict[int, Placement] = {}
        self._next = 1

    def find(self, flow: FiveTuple) -> Placement | None:
        k = flow.key()
        return next((p for p in self.by_id.values() if p.flow.key() == k), None)

    def place(self, flow: FiveTuple, queue: str) -> tuple[Placement, bool]:
        """(placement, created). The same connection again moves it to the new queue."""
        old = self.find(flow)
        if old is not None:
            old.queue = queue
            return old, False
        if len(self.by_id) >= self.household.budget:
            raise PlacementError(f"household {self.household.name} already holds its {self.household.budget} "
                                 "placements: remove one first", status=409)
        p = Placement(self._next, flow, queue)
        self._next += 1
        self.by_id[p.id] = p
        return p, True

    def remove(self, pid: int) -> Placement:
        p = self.by_id.pop(pid, None)
        if p is None:
            raise PlacementError(f"household {self.household.name} has no placement {pid}", status=404)
        return p


class TokenBucket:
    """Control messages per household: `rate` a second on average, `burst` at once."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = float(burst)
        self.at = clock()

    def take(self) -> float:
        """0 if the message may go now, else the seconds until it may."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate
