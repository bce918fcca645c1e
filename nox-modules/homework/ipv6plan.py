"""The IPv6 address plan: one /64 per device, taken from the household's site prefix in
the same place as the device's IPv4 /30 (the lease's block index), so a device keeps its
/64 exactly as long as it keeps its /30: across renewals, restarts and reboots.

The site prefix is the one configured (the ISP's delegated prefix), or else a unique
local /48 (RFC 4193) generated once and kept in the state directory, so local IPv6 works
without the ISP. In every device /64 the router is ::1; on the link it is fe80::1.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path

ROUTER_LINK_LOCAL = ipaddress.IPv6Address("fe80::1")
LINK_LOCAL = ipaddress.IPv6Network("fe80::/10")
ULA_FILE = "ula-prefix"


class PlanError(ValueError):
    pass


def parse_site_prefix(text: str) -> ipaddress.IPv6Network:
    try:
        site = ipaddress.IPv6Network(text, strict=True)
    except ValueError as exc:
        raise PlanError(f"not an IPv6 prefix: {exc}") from None
    if site.prefixlen > 63:
        raise PlanError(f"{site} holds no /64 per device: a /63 or shorter is needed (ISPs delegate /48 to /60)")
    if site.is_link_local or site.is_multicast or site.is_loopback:
        raise PlanError(f"{site} cannot be a site prefix")
    return site


def ula_prefix(state_dir: Path) -> ipaddress.IPv6Network:
    """The household's unique local /48: fd00::/8 plus a random 40-bit global ID, made on
    first use and then always the same (devices' addresses must not move)."""
    path = Path(state_dir) / ULA_FILE
    try:
        return parse_site_prefix(path.read_text().strip())
    except (OSError, PlanError):
        pass
    global_id = secrets.randbits(40)
    site = ipaddress.IPv6Network(((0xFD << 120) | (global_id << 80), 48))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{site}\n")
    os.replace(tmp, path)
    return site


class AddressPlan:
    """Which /64 belongs to which block index, and back."""

    def __init__(self, site: ipaddress.IPv6Network):
        self.site = site
        self.subnets = 1 << (64 - site.prefixlen)

    def device_prefix(self, index: int) -> ipaddress.IPv6Network | None:
        """The device's /64; None if the site prefix is too short for this many devices
        (a /56 has 256), and the device then has IPv4 only."""
        if not 0 <= index < self.subnets:
            return None
        return ipaddress.IPv6Network((int(self.site.network_address) | (index << 64), 64))

    def router_address(self, index: int) -> ipaddress.IPv6Address | None:
        prefix = self.device_prefix(index)
        return prefix.network_address + 1 if prefix else None

    def index_of(self, address: str | ipaddress.IPv6Address) -> int | None:
        """The block index whose /64 holds this address (None outside the site)."""
        addr = ipaddress.IPv6Address(address)
        if addr not in self.site:
            return None
        return (int(addr) >> 64) & (self.subnets - 1)


def read_prefix_file(path: Path) -> ipaddress.IPv6Network | None:
    """The prefix the WAN's DHCPv6 client last wrote (scripts/wan-pd-hook.sh); None if
    there is none (no file, empty: the delegation ended, or unreadable)."""
    try:
        text = Path(path).read_text().strip()
        return parse_site_prefix(text) if text else None
    except (OSError, PlanError):
        return None


class PrefixSource:
    """Where the site prefix comes from, first that has one: the configured prefix, the
    ISP's delegation (the prefix file), the household's ULA."""

    def __init__(self, prefix: str, prefix_file: str, state_dir: Path):
        self.static = parse_site_prefix(prefix) if prefix else None
        self.prefix_file = Path(prefix_file) if prefix_file else None
        self.state_dir = Path(state_dir)

    def site(self) -> ipaddress.IPv6Network:
        if self.static is not None:
            return self.static
        delegated = read_prefix_file(self.prefix_file) if self.prefix_file else None
        return delegated or ula_prefix(self.state_dir)
