"""The edge's configuration (TOML): the bridge, its shaped ports, the control interface
and one entry per household. Every value is checked here, once, with a message naming it."""
from __future__ import annotations

import ipaddress
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
MAX_HOUSEHOLDS = 1000          # queue ids are household index * 4 + 1..3, under OVS's 0xffff


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Household:
    name: str
    index: int                       # 1-based, fixed by the config's order; names the queues
    addresses: tuple[IPNetwork, ...]  # its public IPv4 address(es) and delegated IPv6 prefix(es)
    line_kbit: int                   # the line's rate: ceiling of its queues
    guaranteed_kbit: int             # the high queue's rate (and ceiling)
    budget: int                      # placements it may hold at once

    def owns(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return any(addr.version == net.version and addr in net for net in self.addresses)


@dataclass(frozen=True)
class Port:
    name: str
    rate_kbit: int                   # what the edge sends on it at most: the shaped backhaul
    # '' : the queues are the port's own (OVS QoS linux-htb on what the bridge sends out of
    # it). Another interface's name: the queues are built with tc on it. The userspace
    # datapath sends out of a system port through a packet socket, whose send buffer
    # (~140 full-size packets for every class together) caps any queue on that port and
    # drops whatever class overflows it; so there the port is a tap (`tap = true`) joined
    # by a kernel bridge to the backhaul's interface, which holds the queues: the kernel
    # forwards into them with no socket in the way.
    queue_device: str = ""
    tap: bool = False

    @property
    def queues_on(self) -> str:
        return self.queue_device or self.name


@dataclass
class EdgeConfig:
    bridge: str = "edge0"
    datapath: str = "netdev"          # "system" (kernel) or "netdev" (userspace)
    classifier: str = "auto"          # "openflow" (set_queue), "tc" (u32 on the same HTB), auto
    listen_host: str = "0.0.0.0"
    listen_port: int = 6700
    pki_dir: Path = Path("/var/lib/ispedge/pki")
    budget: int = 64
    messages_per_second: float = 10.0
    burst: int = 20
    ports: list[Port] = field(default_factory=list)
    households: list[Household] = field(default_factory=list)

    @property
    def tc_classifies(self) -> bool:
        """On the userspace datapath set_queue reaches no kernel qdisc (OVS sends through a
        packet socket, the skb priority is lost), so the edge mirrors every flow's queue
        into u32 filters on the same HTB tree."""
        if self.classifier == "auto":
            return self.datapath == "netdev"
        return self.classifier == "tc"

    def household(self, name: str) -> Household | None:
        return next((h for h in self.households if h.name == name), None)


def _int(section: str, key: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(f"[{section}] {key} must be a whole number from {lo} to {hi}, not {value!r}")
    return value


def parse(doc: dict) -> EdgeConfig:
    edge = doc.get("edge", {})
    cfg = EdgeConfig()
    cfg.bridge = str(edge.get("bridge", cfg.bridge))
    if not IFNAME.match(cfg.bridge):
        raise ConfigError(f"[edge] bridge is not an interface name: {cfg.bridge!r}")
    cfg.datapath = str(edge.get("datapath", cfg.datapath))
    if cfg.datapath not in ("system", "netdev"):
        raise ConfigError(f"[edge] datapath must be system or netdev, not {cfg.datapath!r}")
    cfg.classifier = str(edge.get("classifier", cfg.classifier))
    if cfg.classifier not in ("auto", "openflow", "tc"):
        raise ConfigError(f"[edge] classifier must be auto, openflow or tc, not {cfg.classifier!r}")
    listen = str(edge.get("listen", f"{cfg.listen_host}:{cfg.listen_port}"))
    host, _, port = listen.rpartition(":")
    try:
        ipaddress.ip_address(host.strip("[]"))
        cfg.listen_host, cfg.listen_port = host.strip("[]"), _int("edge", "listen's port", int(port), 1, 65535)
    except ValueError:
        raise ConfigError(f"[edge] listen must be ADDRESS:PORT, not {listen!r}") from None
    cfg.pki_dir = Path(edge.get("pki_dir", cfg.pki_dir))
    cfg.budget = _int("edge", "budget", edge.get("budget", cfg.budget), 1, 100000)
    mps = edge.get("messages_per_second", cfg.messages_per_second)
    if isinstance(mps, bool) or not isinstance(mps, (int, float)) or not 0.1 <= mps <= 10000:
        raise ConfigError(f"[edge] messages_per_second must be from 0.1 to 10000, not {mps!r}")
    cfg.messages_per_second = float(mps)
    cfg.burst = _int("edge", "burst", edge.get("burst", cfg.burst), 1, 100000)
    for p in doc.get("port", []):
        name = str(p.get("name", ""))
        if not IFNAME.match(name):
            raise ConfigError(f"[[port]] name is not an interface name: {name!r}")
        qdev = str(p.get("queue_device", ""))
        if qdev and not IFNAME.match(qdev):
            raise ConfigError(f"[[port]] {name}: queue_device is not an interface name: {qdev!r}")
        tap = p.get("tap", False)
        if not isinstance(tap, bool):
            raise ConfigError(f"[[port]] {name}: tap must be true or false")
        cfg.ports.append(Port(name, _int("port", "rate_kbit", p.get("rate_kbit"), 64, 100_000_000), qdev, tap))
    if not cfg.ports:
        raise ConfigError("at least one [[port]] (a backhaul the edge shapes) is needed")
    seen: list[IPNetwork] = []
    for i, h in enumerate(doc.get("household", []), start=1):
        name = str(h.get("name", ""))
        if not NAME.match(name):
            raise ConfigError(f"[[household]] name must be 1-32 of a-z, 0-9 and -, not {name!r}")
        if cfg.household(name):
            raise ConfigError(f"household {name!r} is listed twice")
        nets = []
        for a in h.get("addresses", []):
            try:
                net = ipaddress.ip_network(str(a), strict=True)
            except ValueError as exc:
                raise ConfigError(f"household {name}: {a!r} is not an address or prefix ({exc})") from None
            if any(net.version == o.version and net.overlaps(o) for o in seen):
                raise ConfigError(f"household {name}: {net} overlaps another household's addresses")
            nets.append(net)
            seen.append(net)
        if not nets:
            raise ConfigError(f"household {name}: addresses (its public address and prefix) are needed")
        line = _int(name, "line_kbit", h.get("line_kbit"), 64, 100_000_000)
        guaranteed = _int(name, "guaranteed_kbit", h.get("guaranteed_kbit"), 8, line)
        budget = _int(name, "budget", h.get("budget", cfg.budget), 1, 100000)
        cfg.households.append(Household(name, i, tuple(nets), line, guaranteed, budget))
        if i > MAX_HOUSEHOLDS:
            raise ConfigError(f"at most {MAX_HOUSEHOLDS} households per edge")
    return cfg


def load(path: Path) -> EdgeConfig:
    try:
        return parse(tomllib.loads(Path(path).read_text()))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
