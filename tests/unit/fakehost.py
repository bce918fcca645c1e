"""The unit tests' stand-in for the router's own networking (hostnet.HostNet): records
what would be done instead of running `ip`."""
from __future__ import annotations

import ipaddress

from homework.hostnet import HostNet


class FakeHost(HostNet):
    """Records address changes instead of running `ip` (unit tests)."""

    def __init__(self, bridge: str = "br0", mac: str = "02:00:00:00:00:01"):
        super().__init__(bridge)
        self.flush = lambda timeout=0: None
        self.addresses: set[str] = set()      # the leased devices' router addresses
        self.prefixes6: dict[int, tuple[str, str, str]] = {}
        self.mac = mac
        self.fake_conntrack = None      # unit tests may set a fake ConntrackReader

    def _enqueue(self, line: str) -> None:
        """No `ip`: the spares' bookkeeping is HostNet's own, the addresses are recorded."""

    @property
    def spares(self) -> set[str]:
        return self._spares

    def add_router_address(self, address: str, prefixlen: int = 30) -> bool:
        changed = super().add_router_address(address, prefixlen)
        self.addresses.add(f"{address}/{prefixlen}")
        return changed

    def remove_router_address(self, address: str, prefixlen: int = 30) -> None:
        super().remove_router_address(address, prefixlen)
        self.addresses.discard(f"{address}/{prefixlen}")

    def add_device_prefix6(self, index: int, prefix: str, router: str, mac: str) -> None:
        self.prefixes6[index] = (prefix, router, mac)

    def remove_device_prefix6(self, index: int, prefix: str, router: str) -> None:
        self.prefixes6.pop(index, None)

    def router_addresses(self) -> set[str]:
        return set(self.addresses)

    def interfaces(self):
        """A router of the unit tests: loopback, its LAN addresses, a WAN of its own."""
        own = {ipaddress.ip_address(a.split("/")[0]) for a in self.addresses}
        own |= {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("198.51.100.2")}
        return own, {ipaddress.ip_network("198.51.100.0/24")}

    def local_mac(self) -> str | None:
        return self.mac

    def conntrack_reader(self):
        return self.fake_conntrack
