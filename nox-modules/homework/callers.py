"""Who is calling: one answer, for every door of the router, to "which device is this?"

A device has many addresses: its IPv4 address (the .2 of its /30) and any address in its
/64 (SLAAC, privacy addresses, a new one every day). Every rule that is about a device
(it may not change its own access, a pending device may only ask to pair, failed logins
are counted per device) must see the same device whichever of them it uses, so every
such rule asks this module, with the address the connection came from:

    caller = ctx.callers.resolve("2001:db8:0:5::a1b2")   # or "10.2.0.22", "fe80::…"
    caller.mac          # the device's MAC, or None
    caller.kind         # device | router | stranger | satellite | other
    caller.key          # what per-caller limits count: one per device, per /64, ...

Kinds:
- device: the .2 of a leased /30, or any address in the /64 of a leased block, except
  the router's own ::1 there;
- router: a .1 of the pool, a ::1 of a device /64, loopback;
- stranger: inside the household's pool or site prefix, but no device holds that place
  (the switch drops such sources, so only a forged or stale one gets here);
- satellite: a link-local address heard on a satellite's management link (its cable);
- other: anything else (the management console, a link-local neighbour elsewhere).

Limits that count callers (failed logins, pairing requests) use `key`: the device's MAC
for a device, whatever address it uses; the satellite's index; the whole /64 of an IPv6
source that is not a device (an attacker owns a /64, not one address); the IPv4 address
otherwise.

Framework-free: the leases, the IPv6 plan and the neighbour lookup are read through the
controller's context, so unit tests give fakes."""
from __future__ import annotations

import ipaddress
import json
import logging
import re
import subprocess
from dataclasses import dataclass
from collections.abc import Callable

log = logging.getLogger(__name__)

DEVICE, ROUTER, STRANGER, SATELLITE, OTHER = "device", "router", "stranger", "satellite", "other"
_MANAGEMENT_PORT = re.compile(r"^hwsat(\d+)m$")     # satellites.Satellite.management_port


@dataclass(frozen=True)
class Caller:
    address: str                  # the address the connection came from, as given
    kind: str                     # DEVICE | ROUTER | STRANGER | SATELLITE | OTHER
    key: str                      # what per-caller limits count (see the module docstring)
    mac: str | None = None        # kind DEVICE: the device
    satellite: int | None = None  # kind SATELLITE: its index

    @property
    def is_device(self) -> bool:
        return self.kind == DEVICE

    @property
    def is_household_address(self) -> bool:
        """From the household's own addresses (a device, or a place a device would have)."""
        return self.kind in (DEVICE, STRANGER)

    def describe(self) -> str:
        """For log lines and messages: who, not only which address."""
        if self.kind == DEVICE:
            return f"device {self.mac} ({self.address})"
        if self.kind == SATELLITE:
            return f"satellite {self.satellite}'s link ({self.address})"
        return self.address


def neighbour_interface(address: str) -> str | None:
    """The interface whose neighbour table holds this (link-local) address, if exactly one
    does: the kernel learnt it from the connection that brought the call."""
    try:
        out = subprocess.run(["ip", "-6", "-j", "neigh", "show", "to", address], capture_output=True,
                             text=True, timeout=2).stdout
        devs = {n.get("dev") for n in json.loads(out or "[]") if n.get("dev")}
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return devs.pop() if len(devs) == 1 else None


class Callers:
    """Resolves a caller's address against the controller's context (ctx.config.pool,
    ctx.leases, ctx.ipv6), read at each call: leases and the IPv6 plan change."""

    def __init__(self, ctx, link_interface: Callable[[str], str | None] = neighbour_interface):
        self.ctx = ctx
        self.link_interface = link_interface

    def resolve(self, address: str) -> Caller:
        text = (address or "").strip()
        try:
            addr = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return Caller(text, OTHER, f"addr:{text[:64]}")
        if addr.version == 6 and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped      # ::ffff:10.2.0.2 is the IPv4 device
        if addr.is_loopback:
            return Caller(text, ROUTER, f"ip:{addr}")
        return self._v4(text, addr) if addr.version == 4 else self._v6(text, addr)

    def _v4(self, text: str, addr: ipaddress.IPv4Address) -> Caller:
        key = f"ip:{addr}"
        if addr not in self.ctx.config.pool:
            return Caller(text, OTHER, key)
        leases = self.ctx.leases
        if leases.is_router_address(str(addr)):
            return Caller(text, ROUTER, key)
        lease = leases.by_address(str(addr))
        if lease is None:
            return Caller(text, STRANGER, key)
        return Caller(text, DEVICE, f"device:{lease.mac}", mac=lease.mac)

    def _v6(self, text: str, addr: ipaddress.IPv6Address) -> Caller:
        net64 = ipaddress.IPv6Network((int(addr) >> 64 << 64, 64))
        if addr.is_link_local:
            dev = self.link_interface(str(addr))
            m = _MANAGEMENT_PORT.match(dev or "")
            if m:
                return Caller(text, SATELLITE, f"satellite:{int(m.group(1))}", satellite=int(m.group(1)))
            return Caller(text, OTHER, f"ip:{addr}")     # every link-local shares fe80::/64
        plan = self.ctx.ipv6
        index = plan.index_of(addr) if plan is not None else None
        if index is None:
            return Caller(text, OTHER, f"net:{net64}")
        if addr == plan.router_address(index):
            return Caller(text, ROUTER, f"net:{net64}")
        lease = self.ctx.leases.by_index(index)
        if lease is None:
            return Caller(text, STRANGER, f"net:{net64}")
        return Caller(text, DEVICE, f"device:{lease.mac}", mac=lease.mac)
