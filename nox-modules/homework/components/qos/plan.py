"""The shaping plan as pure functions: link rates + rules + leases -> `tc -batch` lines and
an `nft -f` ruleset. No I/O here, so unit tests check the exact text.

Each shaped interface (upload: the WAN; download: the LAN bridge's LOCAL port, where
packets from the internet leave the router's stack post-NAT) gets one HTB tree:

    1:    htb root, default 1:3fff
    1:1   the link: rate = ceil = shape_percent% of the line (download: down_percent%)
    1:10  high:    rate = high_share% of the link, ceil = the link, prio 0
    1:20  medium:  60% of the rest, ceil = the link, prio 1
    1:30  default: 40% of the rest, ceil = the link, prio 2

Every class may use the whole link when nobody else wants it (ceil = the link): a High
device on an idle line is never capped below a Normal one. When the line is busy, each
class first gets its rate (so High cannot starve the rest), and what is left over goes to
the class with the lowest prio first: High is served first.
          1:3fff   the router's own and unknown traffic (under default)
          1:XXXX   one leaf per (class, device): minor = class bits << 14 | the lease's
                   index, each with its own leaf qdisc (fq_codel, else a bfifo of
                   LEAF_QUEUE_MS at the class's ceil), so devices share a class fairly.

nftables (table inet homework_qos, a filter chain in postrouting before masquerade; the
nftables plan, nftplan.py, names the table, its hook and priority, and the ct mark)
sets `meta priority` to the leaf's classid: first from the device's own class (maps
keyed by its /30 and /64), then, when the connection's ct mark names an application,
from (mark . address) maps whose value is the higher of the device's and the app's
class. Classes change by rewriting maps: a running flow moves with its next packet.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ... import nftplan

CLASSES = ("high", "medium", "default")
RANK = {name: i for i, name in enumerate(CLASSES)}          # lower = more important
CLASS_MINOR = {"high": 0x10, "medium": 0x20, "default": 0x30}
CLASS_BITS = {"high": 1, "medium": 2, "default": 3}
OTHER_LEAF = 0x3FFF          # the router's own traffic and anything not from/to a device
MAX_INDEX = 0x3FFF           # lease indexes that fit in a leaf's minor (a /16 pool has 16384)
MEDIUM_OF_REST = 0.6
QUANTUM = 1514               # one full frame per round: fair among leaves at any rate
MIN_LEAF_KBIT = 8
# Without fq_codel (this dev kernel) a leaf is a bfifo holding LEAF_QUEUE_MS at the class's
# ceil: a byte limit, not a packet count, because on the upload a device's leaf also carries
# the ACKs of its downloads (~1400/s at 20 Mbit/s), which filled a 100-packet pfifo and left
# room for a few data frames only (the bulk upload got about half the line).
LEAF_QUEUE_MS = 100
MIN_LEAF_BYTES = 4 * 1514
TABLE = nftplan.QOS.name


@dataclass(frozen=True)
class Member:
    """A device with an active lease: where its traffic comes from and goes to."""
    mac: str
    index: int
    network4: str                   # "10.2.0.4/30"
    network6: str | None = None     # its /64, when the home has IPv6


@dataclass(frozen=True)
class PortRange:
    proto: str      # tcp | udp
    low: int
    high: int

    def text(self) -> str:
        return f"{self.proto}/{self.low}" + (f"-{self.high}" if self.high != self.low else "")

    def nft(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


@dataclass(frozen=True)
class AppRule:
    """An application in force now (its window, if any, is open)."""
    id: int                         # also its ct mark
    cls: str
    ports: tuple[PortRange, ...] = ()
    addrs4: dict = field(default_factory=dict)     # learned address -> seconds left
    addrs6: dict = field(default_factory=dict)
    has_domains: bool = False


@dataclass(frozen=True)
class Side:
    direction: str      # "up" (WAN egress) or "down" (LAN egress)
    dev: str
    kbit: int           # the line's rate; shaped at shape_percent of it


@dataclass(frozen=True)
class Plan:
    tc: list            # tc -batch lines (all `replace`: re-running one changes nothing)
    nft: str            # the whole table, replaced atomically
    leaves: dict        # (direction, minor) -> (class, mac or None)


def leaf_minor(cls: str, index: int) -> int | None:
    return (CLASS_BITS[cls] << 14) | index if 0 <= index <= MAX_INDEX else None


def better(a: str, b: str) -> str:
    return a if RANK[a] <= RANK[b] else b


def class_rates(kbit: int, shape_percent: int, high_share: int) -> dict[str, tuple[int, int]]:
    """class -> (rate, ceil) in kbit; 'link' is the root."""
    link = max(MIN_LEAF_KBIT, kbit * shape_percent // 100)
    high = max(MIN_LEAF_KBIT, link * high_share // 100)
    rest = max(2 * MIN_LEAF_KBIT, link - high)
    medium = max(MIN_LEAF_KBIT, int(rest * MEDIUM_OF_REST))
    return {"link": (link, link), "high": (high, link), "medium": (medium, link),
            "default": (max(MIN_LEAF_KBIT, rest - medium), link)}


def leaf_bytes(ceil_kbit: int) -> int:
    return max(MIN_LEAF_BYTES, ceil_kbit * 1000 // 8 * LEAF_QUEUE_MS // 1000)


def leaf_qdisc(leaf: str, ceil_kbit: int) -> str:
    return "fq_codel" if leaf == "fq_codel" else f"bfifo limit {leaf_bytes(ceil_kbit)}"


def _htb(dev: str, parent: str, minor: int, rate: int, ceil: int, prio: int | None = None) -> str:
    prio_text = f" prio {prio}" if prio is not None else ""
    return (f"class replace dev {dev} parent {parent} classid 1:{minor:x} htb rate {rate}kbit "
            f"ceil {ceil}kbit{prio_text} quantum {QUANTUM}")


def tc_lines(side: Side, members: list[Member], shape_percent: int, high_share: int, leaf: str) -> tuple[list, dict]:
    """The HTB tree of one interface, and its leaves: minor -> (class, mac or None)."""
    rates = class_rates(side.kbit, shape_percent, high_share)
    dev = side.dev
    members = [m for m in members if leaf_minor("high", m.index) is not None]
    share = len(members) + 1            # the devices and the router's own leaf
    lines = [f"qdisc replace dev {dev} root handle 1: htb default {OTHER_LEAF:x}",
             _htb(dev, "1:", 1, *rates["link"])]
    leaves: dict[int, tuple[str, str | None]] = {}
    for cls in CLASSES:
        rate, ceil = rates[cls]
        lines.append(_htb(dev, "1:1", CLASS_MINOR[cls], rate, ceil, RANK[cls]))
    def add_leaf(cls: str, minor: int, mac: str | None) -> None:
        rate, ceil = rates[cls]
        lines.append(_htb(dev, f"1:{CLASS_MINOR[cls]:x}", minor, max(MIN_LEAF_KBIT, rate // share), ceil, RANK[cls]))
        lines.append(f"qdisc replace dev {dev} parent 1:{minor:x} handle {minor:x}: {leaf_qdisc(leaf, ceil)}")
        leaves[minor] = (cls, mac)
    add_leaf("default", OTHER_LEAF, None)
    for m in sorted(members, key=lambda m: m.index):
        for cls in CLASSES:
            minor = leaf_minor(cls, m.index)
            assert minor is not None     # members were kept to the indexes that fit
            add_leaf(cls, minor, m.mac)
    return lines, leaves


def tc_deletes(dev: str, before: set[int], after: set[int]) -> list[str]:
    """Leaves of devices gone (deleting an HTB leaf class takes its qdisc with it)."""
    return [f"class del dev {dev} classid 1:{minor:x}" for minor in sorted(before - after)]


def _elements(pairs: list[str]) -> str:
    return f" elements = {{ {', '.join(pairs)} }};" if pairs else ""


def _timeouts(addrs: dict) -> list[str]:
    return [f"{a} timeout {max(1, int(s))}s" for a, s in sorted(addrs.items()) if s >= 1]


def nft_text(wan: str | None, lan: str | None, members: list[Member], device_class: dict[str, str],
             apps: list[AppRule]) -> str:
    """The whole table; `wan`/`lan` None: that direction is not shaped."""
    members = [m for m in members if leaf_minor("high", m.index) is not None]
    maps, sets, chains = [], [], []
    for direction, dev, own, peer in (("up", wan, "saddr", "daddr"), ("down", lan, "daddr", "saddr")):
        if dev is None:
            continue
        dev4, dev6, app4, app6 = [], [], [], []
        for m in sorted(members, key=lambda m: m.index):
            mine = device_class.get(m.mac, "default")
            classid = f"1:{leaf_minor(mine, m.index):x}"
            dev4.append(f"{m.network4} : {classid}")
            if m.network6:
                dev6.append(f"{m.network6} : {classid}")
            for app in apps:
                leaf = f"1:{leaf_minor(better(mine, app.cls), m.index):x}"
                app4.append(f"{app.id} . {m.network4} : {leaf}")
                if m.network6:
                    app6.append(f"{app.id} . {m.network6} : {leaf}")
        maps += [f"  map dev_{direction}4 {{ type ipv4_addr : classid; flags interval;{_elements(dev4)} }}",
                 f"  map dev_{direction}6 {{ type ipv6_addr : classid; flags interval;{_elements(dev6)} }}",
                 f"  map app_{direction}4 {{ type mark . ipv4_addr : classid; flags interval;{_elements(app4)} }}",
                 f"  map app_{direction}6 {{ type mark . ipv6_addr : classid; flags interval;{_elements(app6)} }}"]
        rules = []
        port_side = "dport" if direction == "up" else "sport"
        for app in apps:
            for proto in ("tcp", "udp"):
                ports = [p.nft() for p in app.ports if p.proto == proto]
                if ports:
                    rules.append(f"    {proto} {port_side} {{ {', '.join(ports)} }} ct mark set {app.id}")
            if app.has_domains:
                rules.append(f"    ip {peer} @app{app.id}_4 ct mark set {app.id}")
                rules.append(f"    ip6 {peer} @app{app.id}_6 ct mark set {app.id}")
        # per-application byte counters (GET /qos/stats "apps", hwdb AppRates)
        rules += [f'    ct mark {app.id} counter name "{app_counter(app.id, direction)}"' for app in apps]
        rules += [f"    meta priority set ip {own} map @dev_{direction}4",
                  f"    meta priority set ip6 {own} map @dev_{direction}6",
                  f"    meta priority set ct mark . ip {own} map @app_{direction}4",
                  f"    meta priority set ct mark . ip6 {own} map @app_{direction}6"]
        chains.append(f"  chain {direction} {{\n" + "\n".join(rules) + "\n  }")
    for app in apps:
        if app.has_domains:
            sets.append(f"  set app{app.id}_4 {{ type ipv4_addr; flags timeout;{_elements(_timeouts(app.addrs4))} }}")
            sets.append(f"  set app{app.id}_6 {{ type ipv6_addr; flags timeout;{_elements(_timeouts(app.addrs6))} }}")
    counters = [f"  counter {app_counter(app.id, d)} {{ }}" for app in apps
                for d, dev in (("up", wan), ("down", lan)) if dev is not None]
    hooks = [f'    oifname "{dev}" goto {d}' for d, dev in (("up", wan), ("down", lan)) if dev is not None]
    postrouting = nftplan.QOS.chain("postrouting")
    post = (f"  chain {postrouting.name} {{\n    {postrouting.header()}\n" + "\n".join(hooks) + "\n  }")
    body = "\n".join(maps + sets + counters + [post] + chains)
    return f"table inet {TABLE}\ndelete table inet {TABLE}\ntable inet {TABLE} {{\n{body}\n}}\n"


def app_counter(app_id: int, direction: str) -> str:
    """The name of an application's nftables byte counter in one direction."""
    return f"app{app_id}_{direction}"


def nft_delete() -> str:
    return f"table inet {TABLE}\ndelete table inet {TABLE}\n"


def nft_learned(app_id: int, addrs: list[str], seconds: int) -> str:
    """Addresses of an app's domains from a DNS answer, added to its set in place."""
    v4 = [a for a in addrs if ":" not in a]
    v6 = [a for a in addrs if ":" in a]
    out = []
    for suffix, found in (("4", v4), ("6", v6)):
        if found:
            out.append(f"add element inet {TABLE} app{app_id}_{suffix} "
                       f"{{ {', '.join(f'{a} timeout {seconds}s' for a in found)} }}")
    return "\n".join(out) + ("\n" if out else "")


def side_percent(side: Side, shape_percent: int, down_percent: int | None) -> int:
    """The download is shaped lower than the upload: the router shapes it *after* the
    modem's queue, which drains only at the rate the shaper leaves spare, so every burst
    the senders push past the shaper stays there for (line / spare) times its length."""
    return down_percent if side.direction == "down" and down_percent else shape_percent


def build(sides: list[Side], members: list[Member], device_class: dict[str, str], apps: list[AppRule],
          shape_percent: int, high_share: int, leaf: str, down_percent: int | None = None) -> Plan:
    tc, leaves = [], {}
    for side in sides:
        lines, side_leaves = tc_lines(side, members, side_percent(side, shape_percent, down_percent),
                                      high_share, leaf)
        tc += lines
        leaves.update({(side.direction, minor): v for minor, v in side_leaves.items()})
    by_dir = {s.direction: s.dev for s in sides}
    return Plan(tc, nft_text(by_dir.get("up"), by_dir.get("down"), members, device_class, apps), leaves)
