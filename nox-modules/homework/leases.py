"""The lease: the one shape in which every part of the controller sees a device's /30.

DHCP owns the leases and is the only writer; it offers a LeaseReader (its manifest's
`offers`), which the core puts on the context before it constructs any other component.
Everyone else reads leases through it (`ctx.leases.get(mac)`, `.active()`,
`.by_address(ip)`) and is told of changes by `lease` events that carry the Lease itself,
so nobody asks DHCP again.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol


@dataclass(frozen=True)
class Lease:
    mac: str
    index: int            # the /30's place in the pool (also in the device's flow cookies)
    network: str          # "10.2.0.4/30"
    router: str           # .1, on the bridge's LOCAL interface while the lease lives
    ip: str               # .2, the device's address
    broadcast: str        # .3
    expires: float        # epoch seconds; 0 = offered only, released or ended
    port: int             # OpenFlow port it was granted on (a relay agent's, if relayed)
    hostname: str = ""
    relay: str = ""       # giaddr of the relay agent it came through; "" = on our own port
    active: bool = False  # granted and not yet expired, released or declined

    @property
    def local(self) -> bool:
        """On one of our ports (not behind a relay), so it gets a router address and flows."""
        return not self.relay and bool(self.port)

    def same_place(self, other: Lease | None) -> bool:
        """Same device on the same /30 and port: what its flows depend on. A renewal (new
        expiry, new hostname) is the same place, so nothing is reinstalled for it."""
        return other is not None and (self.mac, self.index, self.ip, self.router, self.port, self.relay) == (
            other.mac, other.index, other.ip, other.router, other.port, other.relay)

    def as_dict(self) -> dict:
        """The JSON view (CLI, API)."""
        view = asdict(self)
        del view["index"]
        return view


class LeaseReader(Protocol):
    """What components may ask about leases (DHCP implements it)."""

    def get(self, mac: str) -> Lease | None: ...

    def active(self) -> list[Lease]: ...

    def is_active(self, mac: str) -> bool:
        """Does this MAC hold a live lease (cheaper than get(mac).active)?"""

    def all(self) -> list[Lease]: ...

    def by_address(self, address: str) -> Lease | None:
        """The lease whose device address (.2) this is."""

    def by_index(self, index: int) -> Lease | None:
        """The lease of the /30 with this index in the pool."""

    def is_router_address(self, address: str) -> bool:
        """Is this a .1 of any block of the pool (the router itself)?"""

    def settle(self) -> None:
        """Book every lease already given out (homework-dhcpd's ACKs not told yet)."""


class NoLeases:
    """The reader when no DHCP component is loaded."""

    def get(self, mac: str) -> Lease | None:
        return None

    def active(self) -> list[Lease]:
        return []

    def is_active(self, mac: str) -> bool:
        return False

    def all(self) -> list[Lease]:
        return []

    def by_address(self, address: str) -> Lease | None:
        return None

    def by_index(self, index: int) -> Lease | None:
        return None

    def is_router_address(self, address: str) -> bool:
        return False

    def settle(self) -> None:
        return None
