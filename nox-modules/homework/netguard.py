"""Where the router itself may connect when a household-given URL tells it to (webhooks,
blocklist subscriptions): never, unless the household allowed it for that URL, to

- loopback, link-local, unspecified, multicast or reserved addresses;
- the router's own addresses and the networks its interfaces are on (its services, the
  management links, the ISP's box on the WAN link);
- the household's own network (the device pool and the IPv6 site prefix).

Otherwise anyone holding an admin token could use the router as a port scanner of its
own services and of the LAN ("ECONNREFUSED", "401", "timed out" told them what is
there). Every address a name resolves to is checked, at the moment of connecting (a
name that resolved to the internet when it was added may point inside later), and the
connection goes to an address that passed. What failed is reported in the household's
words, never with the remote's own answer (see `describe_failure`).

`Guard.connect_addresses(host, port)` is the one check; `LocalAddress` says why not."""
from __future__ import annotations

import ipaddress
import json
import logging
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
OWN_CACHE_SECONDS = 10.0
ALLOW_LOCAL_HELP = "tick \"allow local addresses\" if it really is on your own network"


class LocalAddress(ValueError):
    """The destination is local and local addresses are not allowed for it."""


def router_interfaces() -> tuple[set[Address], set[Network]]:
    """The router's own addresses and the networks they are on (`ip -j addr`)."""
    try:
        out = subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True, timeout=3).stdout
        links = json.loads(out or "[]")
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        log.warning("cannot read the router's addresses (%s): only fixed ranges are refused", exc)
        return set(), set()
    own: set[Address] = set()
    nets: set[Network] = set()
    for link in links:
        for info in link.get("addr_info", []):
            try:
                iface = ipaddress.ip_interface(f"{info['local']}/{info['prefixlen']}")
            except (KeyError, ValueError):
                continue
            own.add(iface.ip)
            if iface.network.prefixlen >= (16 if iface.version == 4 else 48):     # never a whole default route
                nets.add(iface.network)
    return own, nets


def why_local(addr: Address, own: Iterable[Address] = (), networks: Iterable[Network] = ()) -> str | None:
    """Why this address is local (a phrase for the household), or None."""
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if addr.is_loopback:
        return "a loopback address (the router itself)"
    if addr.is_link_local:
        return "a link-local address"
    if addr.is_unspecified or addr.is_multicast or addr.is_reserved or addr == ipaddress.IPv4Address(
            "255.255.255.255") or (addr.version == 4 and addr in ipaddress.IPv4Network("0.0.0.0/8")):
        return "not an address one can connect to"
    if addr in set(own):
        return "one of the router's own addresses"
    if any(addr in net for net in networks if net.version == addr.version):
        return "an address on the router's own networks (the household's devices, the router's links)"
    return None


class Guard:
    """`household_networks()`: the device pool and the IPv6 site prefix, read at each check;
    `interfaces()`: the router's addresses and networks (cached OWN_CACHE_SECONDS)."""

    def __init__(self, household_networks: Callable[[], Iterable[Network]] = lambda: (),
                 interfaces: Callable[[], tuple[set, set]] = router_interfaces,
                 resolve: Callable[..., list] = socket.getaddrinfo, clock: Callable[[], float] = time.monotonic):
        self.household_networks = household_networks
        self.interfaces = interfaces
        self.resolve = resolve
        self.clock = clock
        self._lock = threading.Lock()
        self._own: tuple[float, set, set] | None = None

    def _router(self) -> tuple[set, set]:
        with self._lock:
            if self._own is None or self.clock() - self._own[0] > OWN_CACHE_SECONDS:
                own, nets = self.interfaces()
                self._own = (self.clock(), own, nets)
            return self._own[1], self._own[2]

    def why_local(self, addr: Address) -> str | None:
        own, nets = self._router()
        return why_local(addr, own, [*nets, *self.household_networks()])

    def connect_addresses(self, host: str, port: int, allow_local: bool = False) -> list[tuple]:
        """The (family, sockaddr) pairs a connection to host:port may use, in the resolver's
        order. LocalAddress if every address is local (and local ones are not allowed);
        OSError if the name does not resolve."""
        try:
            literal = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
        except ValueError:
            literal = None
        if literal is not None:
            infos = [(socket.AF_INET6 if literal.version == 6 else socket.AF_INET, socket.SOCK_STREAM, 0, "",
                      (str(literal), port) if literal.version == 4 else (str(literal), port, 0, 0))]
        else:
            infos = self.resolve(host, port, 0, socket.SOCK_STREAM)
        allowed, refused = [], None
        for family, _type, _proto, _canon, sockaddr in infos:
            addr = ipaddress.ip_address(sockaddr[0].split("%", 1)[0])
            why = None if allow_local else self.why_local(addr)
            if why is None:
                allowed.append((family, sockaddr))
            else:
                refused = refused or why
        if not allowed:
            raise LocalAddress(f"{host} is {refused}: the router does not connect there unless you allow local "
                               f"addresses ({ALLOW_LOCAL_HELP})")
        return allowed

    def check_url_host(self, host: str, port: int, allow_local: bool = False) -> None:
        """When a URL is given: refuse it if its host is local now (a name that does not
        resolve yet is let through; it is checked again at each connection)."""
        try:
            self.connect_addresses(host, port, allow_local)
        except LocalAddress:
            raise
        except OSError:
            pass


def household_networks_of(ctx) -> Callable[[], list[Network]]:
    """The device pool and the current IPv6 site prefix of the controller's context."""
    def networks() -> list[Network]:
        nets: list[Network] = [ctx.config.pool]
        if ctx.ipv6 is not None:
            nets.append(ctx.ipv6.site)
        return nets
    return networks


def describe_failure(exc: BaseException) -> str:
    """A failed connection in the household's words, without the remote's own details (its
    status code, its error text, which port refused): those would make the router a probe."""
    if isinstance(exc, LocalAddress):
        return "not sent: a local address (allow local addresses for it)"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "no answer in time"
    if isinstance(exc, socket.gaierror):
        return "the name does not resolve"
    return "could not connect"
