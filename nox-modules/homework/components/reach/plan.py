"""What is open from the internet, as nftables text (pure: inputs -> one `nft -f` script).

Two tables take part:

* `inet homework_reach`, this component's own:
  - `prerouting` (nat, dstnat): from the WAN into `forwards` (the household's port
    forwards: DNAT to the device's current /30 address), then miniupnpd's own chain
    `upnp_prerouting`; from the LAN to one of the router's WAN addresses into `hairpin`
    (the same forwards, so a device at home reaching the public address and port reaches
    the target too); a device's NAT-PMP/PCP request to its own gateway goes to the one
    address miniupnpd listens on (`upnp_address`).
  - `postrouting` (nat, srcnat): a hairpinned connection leaves from the router's address,
    so the target answers through the router (else it would answer the other device
    directly, from an address that device never called); then miniupnpd's
    `upnp_postrouting`.
  - `gate` (filter input, before the router's other input chains): UPnP (SSDP, its HTTP
    port), NAT-PMP and PCP reach the router only from the devices the household lets
    open ports now (sets `upnp4`, `upnp6`); every other device is refused at the door.
    miniupnpd's own permission rules are by address and IPv4 only (its PCP server takes
    "anyone on IPv6" as allowed), so the door is where Homework decides, per device.
* `inet homework` (scripts/router-net.sh): its WAN filter drops whatever comes in
  unasked. It lets through connections this table DNATed (`ct status dnat`), and jumps
  into `reach_forward` (filled here: each open forward's IPv6 pinhole, the device's /64
  and port, as IPv6 has no NAT) and `upnp_forward` (miniupnpd's: its mappings and
  pinholes) before that drop.

Only the dynamic parts are rewritten (flush + fill in one transaction); miniupnpd's
chains are created once and never flushed here, so its mappings survive a new plan. The
nftables plan (homework/nftplan.py) names both tables, their chains, hooks and priorities.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ... import nftplan
from .forwards import Forward

TABLE = nftplan.REACH.name
ROUTER_TABLE = nftplan.ROUTER.name   # scripts/router-net.sh's
FORWARD6_CHAIN = nftplan.ROUTER.chain("reach_forward").name        # the forwards' IPv6 pinholes
UPNP_FILTER_CHAIN = nftplan.ROUTER.chain("upnp_forward").name      # miniupnpd's filter rules
UPNP_NAT_CHAIN = nftplan.REACH.chain("upnp_prerouting").name       # miniupnpd's DNAT rules
UPNP_POST_CHAIN = nftplan.REACH.chain("upnp_postrouting").name     # miniupnpd's PCP PEER rules
NATPMP_PORT = 5351                    # NAT-PMP and PCP (RFC 6886, RFC 6887)
SSDP_PORT = 1900


@dataclass(frozen=True)
class OpenForward:
    """A forward whose device has access now, with where the device is now."""
    forward: Forward
    ip4: str                          # the device's /30 address
    prefix6: str | None               # its /64, when devices have IPv6


@dataclass(frozen=True)
class Upnp:
    """miniupnpd's door: where it listens and who may knock."""
    address: str                      # its IPv4 listening address (upnp.py: the veth it owns)
    http_port: int
    allowed4: tuple[str, ...]         # the /30 addresses of the devices allowed now
    allowed6: tuple[str, ...]         # their /64s


def _l4(protocols: tuple[str, ...]) -> str:
    return f"meta l4proto {{ {', '.join(protocols)} }} th" if len(protocols) > 1 else protocols[0]


def dnat_rule(open_fwd: OpenForward) -> str:
    f = open_fwd.forward
    if f.first == f.last:
        target = f"{open_fwd.ip4}:{f.to_port}"
    else:
        target = open_fwd.ip4            # a range keeps its ports
    return (f"meta nfproto ipv4 {_l4(f.protocols)} dport {f.ports_text} dnat ip to {target}"
            f' comment "forward {f.id}"')


def pinhole_rule(open_fwd: OpenForward) -> str | None:
    if not open_fwd.prefix6:
        return None
    f = open_fwd.forward
    first, last = f.device_ports()
    ports = str(first) if first == last else f"{first}-{last}"
    return f'ip6 daddr {open_fwd.prefix6} {_l4(f.protocols)} dport {ports} accept comment "forward {f.id}"'


def setup(bridge: str, wan: str, upnp: Upnp | None) -> str:
    """The table and its hooks (idempotent: `add` never fails on what exists, and only
    the base chains' rules are rewritten, never miniupnpd's chains)."""
    t = f"inet {TABLE}"
    lines = [
        f"add table {t}",
        f"add set {t} wan4 {{ type ipv4_addr; }}",
        f"add set {t} upnp4 {{ type ipv4_addr; }}",
        f"add set {t} upnp6 {{ type ipv6_addr; flags interval; }}",
        f"add chain {t} forwards",
        f"add chain {t} hairpin",
        f"add chain {t} {UPNP_NAT_CHAIN}",
        f"add chain {t} {UPNP_POST_CHAIN}",
        *(f"add chain {t} {c.name} {{ {c.header()} }}" for c in nftplan.REACH.chains if c.base),
        f"add table inet {ROUTER_TABLE}",
        f"add chain inet {ROUTER_TABLE} {FORWARD6_CHAIN}",
        f"add chain inet {ROUTER_TABLE} {UPNP_FILTER_CHAIN}",
        f"flush chain {t} prerouting",
        f"flush chain {t} postrouting",
        f"flush chain {t} gate",
    ]
    pre = [f'iifname "{wan}" jump forwards',
           f'iifname "{bridge}" meta nfproto ipv4 ip daddr @wan4 jump hairpin']
    post = [f'iifname "{bridge}" oifname "{bridge}" ct status dnat masquerade']
    gate = []
    if upnp is not None:
        pre.append(f'iifname "{bridge}" meta nfproto ipv4 udp dport {NATPMP_PORT} fib daddr type local '
                   f"dnat ip to {upnp.address}:{NATPMP_PORT}")
        pre.append(f'iifname "{wan}" jump {UPNP_NAT_CHAIN}')
        post.append(f"jump {UPNP_POST_CHAIN}")
        ports = f"{{ {SSDP_PORT}, {NATPMP_PORT} }}"
        gate += [
            # SSDP discovery over IPv6 comes from link-local addresses, which name no
            # device; it only finds the router: the mapping itself is asked from the
            # device's own address and checked below.
            f'iifname "{bridge}" ip6 saddr fe80::/10 udp dport {SSDP_PORT} accept',
            f'iifname "{bridge}" meta nfproto ipv4 udp dport {ports} ip saddr != @upnp4 reject',
            f'iifname "{bridge}" meta nfproto ipv4 tcp dport {upnp.http_port} ip saddr != @upnp4 reject with tcp reset',
            f'iifname "{bridge}" meta nfproto ipv6 udp dport {ports} ip6 saddr != @upnp6 reject',
            f'iifname "{bridge}" meta nfproto ipv6 tcp dport {upnp.http_port} ip6 saddr != @upnp6 '
            "reject with tcp reset",
            # nothing but the LAN asks miniupnpd (refused, as the WAN filter refuses the rest)
            f'iifname != "{bridge}" iifname != "lo" udp dport {ports} reject',
            f'iifname != "{bridge}" iifname != "lo" tcp dport {upnp.http_port} reject with tcp reset',
        ]
    else:
        pre.append(f'iifname "{wan}" jump {UPNP_NAT_CHAIN}')
        post.append(f"jump {UPNP_POST_CHAIN}")
    lines += [f"add rule {t} prerouting {r}" for r in pre]
    lines += [f"add rule {t} postrouting {r}" for r in post]
    lines += [f"add rule {t} gate {r}" for r in gate]
    return "\n".join(lines) + "\n"


def fill(forwards: list[OpenForward], wan4: list[str], upnp: Upnp | None) -> str:
    """The dynamic part: every open forward's DNAT (from the WAN and hairpinned) and IPv6
    pinhole, the WAN addresses, and who may ask miniupnpd."""
    t = f"inet {TABLE}"
    lines = [f"flush chain {t} forwards", f"flush chain {t} hairpin",
             f"flush chain inet {ROUTER_TABLE} {FORWARD6_CHAIN}",
             f"flush set {t} wan4", f"flush set {t} upnp4", f"flush set {t} upnp6"]
    for of in forwards:
        rule = dnat_rule(of)
        lines.append(f"add rule {t} forwards {rule}")
        lines.append(f"add rule {t} hairpin {rule}")
        pin = pinhole_rule(of)
        if pin:
            lines.append(f"add rule inet {ROUTER_TABLE} {FORWARD6_CHAIN} {pin}")
    if wan4:
        lines.append(f"add element {t} wan4 {{ {', '.join(sorted(set(wan4)))} }}")
    if upnp is not None and upnp.allowed4:
        lines.append(f"add element {t} upnp4 {{ {', '.join(sorted(set(upnp.allowed4)))} }}")
    if upnp is not None and upnp.allowed6:
        lines.append(f"add element {t} upnp6 {{ {', '.join(sorted(set(upnp.allowed6)))} }}")
    return "\n".join(lines) + "\n"


def remove() -> str:
    """Everything this component opened goes (the controller stops: nothing stays open
    that nobody watches)."""
    return (f"add table inet {TABLE}\ndelete table inet {TABLE}\n"
            f"add table inet {ROUTER_TABLE}\nadd chain inet {ROUTER_TABLE} {FORWARD6_CHAIN}\n"
            f"add chain inet {ROUTER_TABLE} {UPNP_FILTER_CHAIN}\n"
            f"flush chain inet {ROUTER_TABLE} {FORWARD6_CHAIN}\nflush chain inet {ROUTER_TABLE} {UPNP_FILTER_CHAIN}\n")


def upnp_address(pool: str) -> tuple[str, int]:
    """The address (and prefix length) miniupnpd listens on: outside the pool, so no
    device ever holds it and the switch sends it to the router, but in a prefix that
    covers the pool, because miniupnpd serves only clients inside its listening address's
    prefix. The pool's supernet one bit shorter, the other half's last host address:
    10.2.0.0/16 -> 10.3.255.254/15."""
    net = ipaddress.ip_network(pool)
    supernet = net.supernet(prefixlen_diff=1)
    other = next(s for s in supernet.subnets(prefixlen_diff=1) if s != net)
    return str(other.broadcast_address - 1), supernet.prefixlen
