"""The controller's one configuration file (TOML), validated at start.

A bad value raises ConfigError naming the key, so the daemon stops with a message
instead of running with a half-understood configuration.
"""
from __future__ import annotations

import ipaddress
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

KNOWN_COMPONENTS = ("dhcp", "routing", "dns", "eapol", "hwdb_sync", "api", "linksim")
IFNAME = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")


class ConfigError(ValueError):
    """A configuration value is missing or wrong; the message names the key."""

    def __init__(self, key: str, problem: str):
        super().__init__(f"config: {key}: {problem}")
        self.key = key


@dataclass(frozen=True)
class Config:
    bridge: str = "br0"
    datapath_type: str = "netdev"
    pool: ipaddress.IPv4Network = ipaddress.IPv4Network("10.2.0.0/16")
    lan_ports: tuple[str, ...] = ()
    wan_interface: str = "wan0"
    pending_lease: int = 30
    permitted_lease: int = 3600
    of_listen: str = "127.0.0.1"
    of_port: int = 6653
    control_socket: Path = Path("/run/homework/control.sock")
    components: tuple[str, ...] = ("dhcp", "routing")
    state_dir: Path = Path("/var/lib/homework")
    hwdb_host: str = "127.0.0.1"
    hwdb_port: int = 987
    hwdb_enabled: bool = False
    flow_idle_timeout: int = 30
    flow_stats_interval: int = 10
    per_host_flow_limit: int = 1000
    dns_blocked_answer: str = "nxdomain"
    dns_upstream: str = "127.0.0.1:5353"
    dns_listen: str = "169.254.53.53:5300"       # homework-dnsd; nftables steers port 53 here
    dns_control: str = "/run/homework/dnsd.sock"  # homework-dnsd control socket
    dns_intercept: bool = True                     # install the nftables redirect
    api_listen: str = "127.0.0.1"
    api_port: int = 8080
    api_admin_password_file: str = ""     # first start: the admin password is read from here
    api_session_lifetime: int = 43200     # seconds a Guest Board login lasts
    linksim_interval: int = 2             # seconds between simulated link reports
    hostapd_ctrl: str = ""
    hostapd_deny_file: str = ""
    hostapd_port: str = ""                         # bridge port of hostapd's interface; "" = LOCAL
    extra: dict = field(default_factory=dict)

    @property
    def state_db(self) -> Path:
        return self.state_dir / "state.db"


def _get(table: dict, dotted: str, kind, default):
    section, _, key = dotted.partition(".")
    value = table.get(section, {}).get(key, default) if key else table.get(section, default)
    if value is default:
        return default
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(dotted, f"expected an integer, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise ConfigError(dotted, f"expected a string, got {value!r}")
    if kind is bool and not isinstance(value, bool):
        raise ConfigError(dotted, f"expected true or false, got {value!r}")
    if kind is list and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ConfigError(dotted, f"expected a list of strings, got {value!r}")
    return value


def _positive(key: str, value: int, minimum: int = 1, maximum: int = 10**9) -> int:
    if not minimum <= value <= maximum:
        raise ConfigError(key, f"must be between {minimum} and {maximum}, got {value}")
    return value


def _ifname(key: str, value: str) -> str:
    if not IFNAME.match(value):
        raise ConfigError(key, f"not a valid interface name: {value!r}")
    return value


def _host_port(key: str, value: str) -> str:
    host, _, port = value.rpartition(":")
    try:
        ipaddress.ip_address(host)
        _positive(key, int(port), 1, 65535)
    except (ValueError, ConfigError):
        raise ConfigError(key, f"expected ADDRESS:PORT, got {value!r}") from None
    return value


def parse(data: dict) -> Config:
    """Build a Config from a parsed TOML document, checking every value."""
    known_sections = {"lan", "wan", "dhcp", "controller", "state", "hwdb", "routing", "dns",
                      "api", "eapol", "linksim"}
    for section in data:
        if section not in known_sections:
            raise ConfigError(section, f"unknown section (known: {', '.join(sorted(known_sections))})")

    pool_text = _get(data, "lan.pool", str, "10.2.0.0/16")
    try:
        pool = ipaddress.IPv4Network(pool_text, strict=True)
    except ValueError as exc:
        raise ConfigError("lan.pool", f"not an IPv4 network: {exc}") from None
    if pool.prefixlen > 29:
        raise ConfigError("lan.pool", "must hold at least two /30 blocks (prefix /29 or shorter)")

    datapath_type = _get(data, "lan.datapath_type", str, "netdev")
    if datapath_type not in ("netdev", "system"):
        raise ConfigError("lan.datapath_type", f"must be 'netdev' or 'system', got {datapath_type!r}")

    components = tuple(_get(data, "controller.components", list, ["dhcp", "routing"]))
    for name in components:
        if name not in KNOWN_COMPONENTS:
            raise ConfigError("controller.components", f"unknown component {name!r} (known: {', '.join(KNOWN_COMPONENTS)})")

    pending = _positive("dhcp.pending_lease", _get(data, "dhcp.pending_lease", int, 30), 10, 86400)
    permitted = _positive("dhcp.permitted_lease", _get(data, "dhcp.permitted_lease", int, 3600), 60, 7 * 86400)

    of_listen = _get(data, "controller.listen", str, "127.0.0.1")
    try:
        ipaddress.ip_address(of_listen)
    except ValueError:
        raise ConfigError("controller.listen", f"not an IP address: {of_listen!r}") from None

    api_listen = _get(data, "api.listen", str, "127.0.0.1")
    try:
        ipaddress.ip_address(api_listen)
    except ValueError:
        raise ConfigError("api.listen", f"not an IP address: {api_listen!r}") from None

    blocked = _get(data, "dns.blocked_answer", str, "nxdomain")
    if blocked not in ("nxdomain", "drop"):
        raise ConfigError("dns.blocked_answer", f"must be 'nxdomain' or 'drop', got {blocked!r}")

    known_keys = {
        "lan": {"bridge", "datapath_type", "pool", "ports"},
        "wan": {"interface"},
        "dhcp": {"pending_lease", "permitted_lease"},
        "controller": {"listen", "port", "control_socket", "components"},
        "state": {"dir"},
        "hwdb": {"host", "port", "enabled"},
        "routing": {"flow_idle_timeout", "flow_stats_interval", "per_host_flow_limit"},
        "dns": {"blocked_answer", "upstream", "listen", "control", "intercept"},
        "api": {"listen", "port", "admin_password_file", "session_lifetime"},
        "linksim": {"interval"},
        "eapol": {"hostapd_ctrl", "hostapd_deny_file", "hostapd_port"},
    }
    for section, keys in known_keys.items():
        for key in data.get(section, {}):
            if key not in keys:
                raise ConfigError(f"{section}.{key}", f"unknown key (known: {', '.join(sorted(keys))})")

    return Config(
        bridge=_ifname("lan.bridge", _get(data, "lan.bridge", str, "br0")),
        datapath_type=datapath_type,
        pool=pool,
        lan_ports=tuple(_ifname("lan.ports", p) for p in _get(data, "lan.ports", list, [])),
        wan_interface=_ifname("wan.interface", _get(data, "wan.interface", str, "wan0")),
        pending_lease=pending,
        permitted_lease=permitted,
        of_listen=of_listen,
        of_port=_positive("controller.port", _get(data, "controller.port", int, 6653), 1, 65535),
        control_socket=Path(_get(data, "controller.control_socket", str, "/run/homework/control.sock")),
        components=components,
        state_dir=Path(_get(data, "state.dir", str, "/var/lib/homework")),
        hwdb_host=_get(data, "hwdb.host", str, "127.0.0.1"),
        hwdb_port=_positive("hwdb.port", _get(data, "hwdb.port", int, 987), 1, 65535),
        hwdb_enabled=_get(data, "hwdb.enabled", bool, False),
        flow_idle_timeout=_positive("routing.flow_idle_timeout", _get(data, "routing.flow_idle_timeout", int, 30), 1, 3600),
        flow_stats_interval=_positive("routing.flow_stats_interval", _get(data, "routing.flow_stats_interval", int, 10), 1, 3600),
        per_host_flow_limit=_positive("routing.per_host_flow_limit", _get(data, "routing.per_host_flow_limit", int, 1000), 10, 10**7),
        dns_blocked_answer=blocked,
        dns_upstream=_host_port("dns.upstream", _get(data, "dns.upstream", str, "127.0.0.1:5353")),
        dns_listen=_host_port("dns.listen", _get(data, "dns.listen", str, "169.254.53.53:5300")),
        dns_control=_get(data, "dns.control", str, "/run/homework/dnsd.sock"),
        dns_intercept=_get(data, "dns.intercept", bool, True),
        api_listen=api_listen,
        api_port=_positive("api.port", _get(data, "api.port", int, 8080), 1, 65535),
        api_admin_password_file=_get(data, "api.admin_password_file", str, ""),
        api_session_lifetime=_positive("api.session_lifetime", _get(data, "api.session_lifetime", int, 43200),
                                       60, 30 * 86400),
        linksim_interval=_positive("linksim.interval", _get(data, "linksim.interval", int, 2), 1, 3600),
        hostapd_ctrl=_get(data, "eapol.hostapd_ctrl", str, ""),
        hostapd_deny_file=_get(data, "eapol.hostapd_deny_file", str, ""),
        hostapd_port=_ifname("eapol.hostapd_port", _get(data, "eapol.hostapd_port", str, "")) if _get(data, "eapol.hostapd_port", str, "") else "",
        extra={k: v for k, v in data.items()},
    )


def load(path: str | Path) -> Config:
    """Read and validate a config file."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError("(file)", f"{path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("(file)", f"{path} is not valid TOML: {exc}") from None
    return parse(data)
