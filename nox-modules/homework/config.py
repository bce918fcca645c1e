"""The controller's one configuration file (TOML), validated at start.

Every key is written once, in KEYS: its place in the file, the Config attribute it
fills, its type, default, check and a line of help. The Config dataclass, the list of
known keys, the type and range checks and `python3 -m homework.config --help-keys` all
come from that table. A bad value raises ConfigError naming the key, so the daemon
stops with a message instead of running with a half-understood configuration.

The file carries a `version`; older files are brought up to date by the numbered steps
in MIGRATIONS (in memory: the image writes its file afresh at every boot), and a file
from a newer release is refused rather than half understood.
"""
from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import logging
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from collections.abc import Callable

log = logging.getLogger("homework.config")

KNOWN_COMPONENTS: tuple[str, ...] = ("dhcp", "routing", "dns", "eapol", "hwdb_sync", "api", "linksim", "usage",
                                     "metrics", "notify", "mqtt", "wanwatch", "localnames")
KNOWN_COMPONENTS += ("schedules",)     # bedtime windows and pauses
KNOWN_COMPONENTS += ("blocklists",)    # blocklist subscriptions and safe-search
KNOWN_COMPONENTS += ("backup",)        # settings backup and restore
KNOWN_COMPONENTS += ("radio",)         # the real radio's link monitor
KNOWN_COMPONENTS += ("qos",)           # priorities and shaping
KNOWN_COMPONENTS += ("satlink",)       # the satellite agents' channel
KNOWN_COMPONENTS += ("reach",)         # port forwards, UPnP/NAT-PMP/PCP per device
KNOWN_COMPONENTS += ("remote",)        # remote access over WireGuard
KNOWN_COMPONENTS += ("identify",)      # what each device is, from what it says about itself
IFNAME = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
CURRENT_VERSION = 2


class ConfigError(ValueError):
    """A configuration value is missing or wrong; the message names the key."""

    def __init__(self, key: str, problem: str):
        super().__init__(f"config: {key}: {problem}")
        self.key = key


# -- checks: each takes (key, value already of the right TOML type) and returns the value --------
# What a made check accepts, in words (the docs' "allowed" column): check -> words.
ALLOWED: dict[Callable, str] = {}


def int_range(low: int, high: int) -> Callable[[str, int], int]:
    def check(key: str, value: int) -> int:
        if not low <= value <= high:
            raise ConfigError(key, f"must be between {low} and {high}, got {value}")
        return value
    ALLOWED[check] = f"{low} to {high}"
    return check


def one_of(*choices: str) -> Callable[[str, str], str]:
    def check(key: str, value: str) -> str:
        if value not in choices:
            raise ConfigError(key, f"must be {' or '.join(repr(c) for c in choices)}, got {value!r}")
        return value
    ALLOWED[check] = " or ".join(f"`{c}`" for c in choices)
    return check


def ifname(key: str, value: str) -> str:
    if not IFNAME.match(value):
        raise ConfigError(key, f"not a valid interface name: {value!r}")
    return value


def ifname_or_empty(key: str, value: str) -> str:
    return ifname(key, value) if value else ""


def ip_address_or_empty(key: str, value: str) -> str:
    return ip_address(key, value) if value else ""


def ip_address(key: str, value: str) -> str:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise ConfigError(key, f"not an IP address: {value!r}") from None
    return value


def host_port(key: str, value: str) -> str:
    """ADDRESS:PORT, an IPv6 address in brackets ([fd00:53::53]:5300)."""
    host, _, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ipaddress.ip_address(host)
        if not 1 <= int(port) <= 65535:
            raise ValueError
    except ValueError:
        raise ConfigError(key, f"expected ADDRESS:PORT, got {value!r}") from None
    return value


def host_port_or_empty(key: str, value: str) -> str:
    return host_port(key, value) if value else ""


def pool(key: str, value: str) -> ipaddress.IPv4Network:
    try:
        network = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ConfigError(key, f"not an IPv4 network: {exc}") from None
    if network.prefixlen > 29:
        raise ConfigError(key, "must hold at least two /30 blocks (prefix /29 or shorter)")
    return network


def components(key: str, value: list) -> tuple[str, ...]:
    for name in value:
        if name not in KNOWN_COMPONENTS:
            raise ConfigError(key, f"unknown component {name!r} (known: {', '.join(KNOWN_COMPONENTS)})")
    return tuple(value)


def ipv4_list(key: str, value: list) -> tuple[str, ...]:
    out = []
    for text in value:
        try:
            out.append(str(ipaddress.IPv4Address(text)))
        except ValueError:
            raise ConfigError(key, f"not an IPv4 address: {text!r}") from None
    return tuple(out)


def lan_ports(key: str, value: list) -> tuple[str, ...]:
    return tuple(ifname(key, name) for name in value)


def satellite_list(key: str, value: list) -> tuple:
    from . import satellites
    try:
        return satellites.parse(value)
    except satellites.SatelliteError as exc:
        raise ConfigError(key, str(exc)) from None


def timezone_name(key: str, value: str) -> str:
    if value:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(key, f"unknown time zone {value!r} (an IANA name like 'Europe/London')") from None
    return value


def ipv6_site_prefix(key: str, value: str) -> str:
    if value:
        from .ipv6plan import PlanError, parse_site_prefix
        try:
            parse_site_prefix(value)
        except PlanError as exc:
            raise ConfigError(key, str(exc)) from None
    return value


def domain_list(key: str, value: str) -> str:
    """'lan,home.arpa': comma-separated domain names (dnsd's --local-domains)."""
    for name in filter(None, (d.strip() for d in value.split(","))):
        if not re.fullmatch(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?", name):
            raise ConfigError(key, f"{name!r} is not a domain name (expected e.g. 'lan,home.arpa')")
    return value


def domain_names(key: str, value: list) -> tuple[str, ...]:
    return tuple(domain_list(key, name) for name in value)


def edge_url(key: str, value: str) -> str:
    """'' or https://ADDRESS:PORT: an ISP edge's control interface."""
    if value and not re.fullmatch(r"https://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}/?", value):
        raise ConfigError(key, f"{value!r} is not https://HOST:PORT (e.g. https://100.64.0.254:6700)")
    return value


ALLOWED[edge_url] = "'' (none) or https://HOST:PORT"


def _zero_or_rate(key: str, value: int) -> int:
    return value if value == 0 else int_range(64, 10_000_000)(key, value)


ALLOWED[_zero_or_rate] = "0 (unset) or 64 to 10000000"


def path(key: str, value: str) -> Path:
    return Path(value)


@dataclass(frozen=True)
class Key:
    name: str                 # "section.key" in the file
    attr: str                 # Config attribute
    kind: type                # the TOML type: int, str, bool or list (of strings)
    default: Any              # as written in the file (checked like a value from the file)
    help: str
    check: Callable | None = None


KEYS: tuple[Key, ...] = (
    Key("lan.bridge", "bridge", str, "br0", "the Open vSwitch bridge of the LAN", ifname),
    Key("lan.datapath_type", "datapath_type", str, "netdev",
        "'system' (kernel datapath, the router) or 'netdev' (userspace, dev/CI)", one_of("netdev", "system")),
    Key("lan.pool", "pool", str, "10.2.0.0/16", "addresses handed out, one /30 per device", pool),
    Key("lan.ports", "lan_ports", list, [],
        "LAN interfaces on the bridge; one missing when the switch connects raises an Alert", lan_ports),
    Key("satellites.switches", "satellites", list, [],
        "satellite switches the controller drives besides the bridge, each 'DPID:UPLINK:ROUTER_PORT' "
        "(its datapath id in hex, its uplink port, the router port its cable plugs into, or hws<i>p<port>: "
        "port <port> of satellite <i>, listed before it, for a tree); until "
        "pairing, a datapath not listed here is refused", satellite_list),
    Key("satellites.radio_ports", "satellites_radio_ports", list, [],
        "names of satellite ports that are radios (e.g. 'wlan0'): a station that shows up on another radio "
        "has roamed, and its lease follows it although its old radio still has link", lan_ports),
    Key("satellites.tls_port", "satellites_tls_port", int, 6654,
        "OpenFlow over TLS for satellites (certificates from the household CA in <state.dir>/pki); 0: none",
        int_range(0, 65535)),
    Key("satellites.tls_listen", "satellites_tls_listen", str, "",
        "the TLS listener's address (and the agents'); '' = controller.listen. Satellites reach the router "
        "in band at fe80::1 on their management link, so '::' where there are satellites: TLS with a "
        "certificate the household CA signed is what admits one", ip_address_or_empty),
    Key("satellites.agent_port", "satellites_agent_port", int, 6655,
        "the satellite agents' channel (TLS, the same certificates; component satlink): Wi-Fi settings and "
        "the deny list out, station dumps in; 0: none", int_range(0, 65535)),
    Key("satellites.require_tls", "satellites_require_tls", bool, True,
        "a satellite is driven only over TLS with the certificate paired for its datapath id "
        "(false: plain tcp is believed too, for an emulated home whose satellites share one OVS)"),
    Key("dhcp.pending_lease", "pending_lease", int, 30, "lease seconds while pending or denied",
        int_range(10, 86400)),
    Key("dhcp.permitted_lease", "permitted_lease", int, 3600, "lease seconds once permitted",
        int_range(60, 7 * 86400)),
    Key("dhcp.relays", "dhcp_relays", list, [], "relay agents (giaddr) we answer; none by default", ipv4_list),
    Key("dhcp.fast_path", "dhcp_fast_path", bool, True,
        "DHCP through a raw socket on the bridge's LOCAL interface instead of OpenFlow packet-in "
        "(falls back to packet-in if the socket cannot be opened)"),
    Key("dhcp.answerer", "dhcp_answerer", str, "dhcpd",
        "who answers the fast path's requests: 'dhcpd' (homework-dhcpd answers devices with a live lease "
        "from a table the controller keeps, and hands it everything else; the controller answers if the "
        "binary is missing), or 'controller' (every request)",
        one_of("controller", "dhcpd")),
    Key("dhcp.dhcpd_binary", "dhcpd_binary", str, "homework-dhcpd",
        "homework-dhcpd: a path, or a name on PATH (a checkout's dhcpd/target/release build is found too)"),
    Key("dhcp.spare_router_addresses", "spare_router_addresses", int, 128,
        "router .1 addresses of the next free /30s put on the bridge ahead of their devices, so a burst "
        "of new devices changes no address (each change costs Open vSwitch a routing-table reload); "
        "topped up once new devices stop coming", int_range(0, 4096)),
    Key("dhcp.daemon_new_offers", "daemon_new_offers", int, 1024,
        "free /30s homework-dhcpd holds to offer never-seen devices by itself (the controller claims "
        "each one it gave and tops them up; known, relayed and spoofed requests still come to the "
        "controller, and the per-port new-MAC limits apply); 0: every new device's DISCOVER goes to "
        "the controller", int_range(0, 4096)),
    Key("dhcp.new_macs_burst", "new_macs_burst", int, 16, "never-seen MACs a port may bring at once",
        int_range(1, 100000)),
    Key("dhcp.new_macs_per_minute", "new_macs_per_minute", int, 60,
        "never-seen MACs a port may bring per minute after the burst", int_range(1, 10**6)),
    Key("devices.max_pending", "max_pending", int, 256,
        "pending devices kept; the oldest that never finished DHCP are forgotten first", int_range(1, 10**6)),
    Key("devices.forget_unapproved_after", "forget_unapproved_after", int, 86400,
        "seconds unseen before a pending device is forgotten", int_range(60, 10**8)),
    Key("controller.listen", "of_listen", str, "127.0.0.1", "OpenFlow listen address", ip_address),
    Key("controller.port", "of_port", int, 6653, "OpenFlow port", int_range(1, 65535)),
    Key("controller.control_socket", "control_socket", str, "/run/homework/control.sock",
        "the CLI's Unix socket", path),
    Key("controller.components", "components", list, ["dhcp", "routing"], "components to load", components),
    Key("controller.lean_encoder", "openflow_lean_encoder", bool, True,
        "pack common OpenFlow messages (flow-mods, packet-outs) with struct instead of os-ken's "
        "parser objects (adapter/ofencode.py: the same bytes, several times less CPU)"),
    Key("controller.flow_hold_ms", "openflow_flow_hold_ms", int, 25,
        "a flow addition within this many ms of the last write of flow changes waits out the rest, "
        "with the others that come meanwhile: Open vSwitch revalidates its datapath once a write, so a "
        "burst of new devices costs it one revalidation a window instead of one a device; 0: at once",
        int_range(0, 1000)),
    Key("state.dir", "state_dir", str, "/var/lib/homework", "where state.db lives", path),
    Key("hwdb.host", "hwdb_host", str, "127.0.0.1", "hwdbd address", ip_address),
    Key("hwdb.port", "hwdb_port", int, 987, "hwdbd port", int_range(1, 65535)),
    Key("hwdb.enabled", "hwdb_enabled", bool, False, "log to hwdb"),
    Key("routing.flow_idle_timeout", "flow_idle_timeout", int, 30, "seconds before an idle flow entry goes",
        int_range(1, 3600)),
    Key("routing.flow_stats_interval", "flow_stats_interval", int, 10, "seconds between flow counter polls",
        int_range(1, 3600)),
    Key("routing.flow_records", "flow_records", str, "conntrack",
        "where per-flow records of NATed (internet) traffic come from: 'conntrack' (the kernel's "
        "NAT entries; the switch counts per host) or 'switch' (a learned entry per flow)",
        one_of("conntrack", "switch")),
    Key("routing.per_host_flow_limit", "per_host_flow_limit", int, 16000,
        "connections a device may hold before it is counted per host (checked every flow_stats_interval): "
        "its NATed ones in conntrack (open, or closed within the last minute) or its learned entries; "
        "a browser opening 2,000 at once or a game launcher 5,000 in 10 s stays well below, a flood of "
        "1,500 a second crosses it in about 11 s", int_range(10, 10**7)),
    Key("dns.blocked_answer", "dns_blocked_answer", str, "nxdomain", "answer to a blocked name",
        one_of("nxdomain", "drop")),
    Key("dns.upstream", "dns_upstream", str, "127.0.0.1:5353", "where homework-dnsd forwards allowed queries",
        host_port),
    Key("dns.listen", "dns_listen", str, "169.254.53.53:5300", "homework-dnsd; nftables steers port 53 here",
        host_port),
    Key("dns.listen6", "dns_listen6", str, "[fd00:53::53]:5300",
        "homework-dnsd for devices' DNS over IPv6 ([ipv6] enabled); nftables steers it here", host_port),
    Key("dns.control", "dns_control", str, "/run/homework/dnsd.sock", "homework-dnsd's control socket"),
    Key("dns.resolv_file", "dns_resolv_file", str, "/run/homework/resolv.upstream",
        "upstream resolvers (the file the WAN lease writes, dnsmasq's resolv-file): dnsd asks them directly; "
        "empty: everything via dns.upstream"),
    Key("dns.local_domains", "dns_local_domains", str, "lan,home.arpa",
        "names under these (and single labels, private PTR) go to dnsmasq, not upstream", domain_list),
    Key("dns.intercept", "dns_intercept", bool, True, "install the nftables redirect"),
    Key("dns.resolver", "dns_resolver", str, "127.0.0.1:5335",
        "the validating resolver (unbound) homework-dnsd sends every name but the household's own to: "
        "DNSSEC, and the upstreams the household chose, plain or over TLS; '' = none (dnsd asks "
        "resolv_file's servers itself and nothing is validated)", host_port_or_empty),
    Key("dns.resolver_control", "dns_resolver_control", str, "/run/homework/unbound.ctl",
        "the resolver's control socket (unbound's remote-control, a Unix socket)"),
    Key("dns.resolver_user", "dns_resolver_user", str, "unbound",
        "the user unbound drops to after start; '' = stay root (the emulated home)"),
    Key("dns.dnssec", "dns_dnssec", bool, True,
        "validate DNSSEC (a forged or broken answer becomes SERVFAIL), until set on the board/API/CLI"),
    Key("dns.trust_anchor", "dns_trust_anchor", str, "",
        "a file of DNSKEY or DS records to trust instead of the root's keys ('' = the root's, from "
        "dns-root-data, kept current by RFC 5011); the emulated internet's signed zones use it"),
    Key("dns.resolver_special_zones", "dns_resolver_special_zones", list, [],
        "special-use zones (RFC 6761) the resolver normally answers NXDOMAIN itself, sent upstream like any "
        "other name instead (the emulated internet's 'test')", domain_names),
    Key("dns.dot_listen", "dns_dot_listen", str, "169.254.53.53:853",
        "homework-dnsd's DNS over TLS for devices; nftables steers TCP 853 to the router's own addresses "
        "here; '' = no DNS over TLS", host_port_or_empty),
    Key("dns.dot_listen6", "dns_dot_listen6", str, "[fd00:53::53]:853",
        "the same over IPv6 ([ipv6] enabled)", host_port_or_empty),
    Key("dns.tls_cert", "dns_tls_cert", str, "/var/lib/homework/tls/server.crt",
        "the certificate (PEM) dnsd presents to devices over TLS: the Guest Board's own"),
    Key("dns.tls_key", "dns_tls_key", str, "/var/lib/homework/tls/server.key", "its private key (PEM)"),
    Key("dns.doh_socket", "dns_doh_socket", str, "/run/homework/dnsd-doh.sock",
        "where homework-dnsd takes DNS over HTTPS from the web server (SCGI: lighttpd's /dns-query); "
        "'' = no DNS over HTTPS"),
    Key("dns.resolver_name", "dns_resolver_name", str, "homework.home.arpa",
        "the router's name in the announcements of its encrypted DNS (DDR, DHCP/RA); dnsd answers it with "
        "the asking device's own gateway", domain_list),
    Key("dns.tls_ca_file", "dns_tls_ca_file", str, "/etc/ssl/certs/ca-certificates.crt",
        "the certificate authorities an encrypted upstream's certificate must chain to"),
    Key("dns.safe_search", "dns_safe_search", bool, False,
        "answer Google, Bing, DuckDuckGo and YouTube with their safe-search hosts, until set on the "
        "board/API/CLI (the blocklists component)"),
    Key("blocklists.refresh_interval", "blocklists_refresh_interval", int, 86400,
        "seconds between fetches of each subscribed blocklist", int_range(60, 30 * 86400)),
    Key("blocklists.max_bytes", "blocklists_max_bytes", int, 64 * 1024 * 1024,
        "largest list download accepted", int_range(1024, 1024 ** 3)),
    Key("blocklists.fetch_timeout", "blocklists_fetch_timeout", int, 120,
        "seconds a list download may take in all (connect, answer and every byte)", int_range(1, 900)),
    Key("blocklists.max_names", "blocklists_max_names", int, 1_000_000,
        "names one list may hold; a longer list is refused (dnsd holds about 45 MiB per million)",
        int_range(1000, 20_000_000)),
    Key("blocklists.max_names_total", "blocklists_max_names_total", int, 2_000_000,
        "names all lists together may hold; a list that would pass it is refused", int_range(1000, 50_000_000)),
    Key("localnames.hosts_dir", "localnames_hosts_dir", str, "/run/homework/hosts.d",
        "where the localnames component writes permitted devices' names for dnsmasq (its hostsdir=)", path),
    Key("api.listen", "api_listen", str, "127.0.0.1", "ws.v1 API address (lighttpd proxies to it)", ip_address),
    Key("api.port", "api_port", int, 8080, "ws.v1 API port", int_range(1, 65535)),
    Key("api.admin_password_file", "api_admin_password_file", str, "",
        "first start: the admin password is read from here"),
    Key("api.session_lifetime", "api_session_lifetime", int, 43200, "seconds a Guest Board login lasts",
        int_range(60, 30 * 86400)),
    Key("api.check_answers", "api_check_answers", bool, False,
        "tests: check every answer against its declared shape (one that does not fit is a 500 naming the field)"),
    Key("api.hash_off_loop", "api_hash_off_loop", bool, True,
        "check passwords in a worker thread, never on the event loop; false only for the benchmark's peer"),
    Key("linksim.interval", "linksim_interval", int, 2, "seconds between simulated link reports",
        int_range(1, 3600)),
    Key("radio.interfaces", "radio_interfaces", list, [], "Wi-Fi interfaces whose stations are read; [] = none",
        lan_ports),
    Key("radio.interval", "radio_interval", int, 1, "seconds between station dumps", int_range(1, 3600)),
    Key("radio.station_dump_command", "radio_station_dump_command", str, "iw dev {ifname} station dump",
        "command printing one interface's stations in `iw station dump` format ({ifname} is replaced)"),
    Key("radio.leave_after", "radio_leave_after", int, 600,
        "seconds a device may stay unseen (no traffic, not associated) before its label leaves the board's middle",
        int_range(10, 7 * 86400)),
    Key("radio.info_command", "radio_info_command", str, "iw dev {ifname} info",
        "command printing one interface's `iw dev IF info` (its channel gives the band; {ifname} is replaced)"),
    Key("radio.hostapd_ctrl_dir", "radio_hostapd_ctrl_dir", str, "/run/hostapd",
        "hostapd's control sockets (one per interface), read for probe requests (nearby devices); '' = off"),
    Key("radio.nearby_interval", "radio_nearby_interval", int, 10,
        "at most one nearby-device report per MAC this often (seconds)", int_range(1, 3600)),
    Key("radio.nearby_forget", "radio_nearby_forget", int, 300,
        "seconds a nearby device stays listed after its last probe request", int_range(10, 86400)),
    Key("radio.nearby_max", "radio_nearby_max", int, 30,
        "most nearby devices listed (the strongest signals win)", int_range(1, 1000)),
    Key("wifi.apply_command", "wifi_apply_command", str, "",
        "run after the Wi-Fi SSID/passphrase change (in <state.dir>/wifi.env) to restart the access point; "
        "'' = just store"),
    # signed .hwup updates into the inactive A/B slot (homework/update/)
    Key("update.enabled", "update_enabled", bool, False,
        "accept .hwup updates (the router image turns it on; a dev machine has no A/B slots)"),
    Key("update.esp_dir", "update_esp_dir", str, "/boot/efi",
        "the mounted ESP: kernels, systemd-boot loader entries, GRUB env block", path),
    Key("update.esp_mount_command", "update_esp_mount_command", str, "",
        "run when esp_dir has no loader/ directory (an ESP mounted noauto); '' = never"),
    Key("update.slot_device", "update_slot_device", str, "/dev/disk/by-partlabel/hw-root-{slot}",
        "the block device of a system slot ({slot} is a or b)"),
    Key("update.cmdline_file", "update_cmdline_file", str, "/proc/cmdline",
        "the kernel command line naming the running slot (root=PARTLABEL=hw-root-<slot>)", path),
    Key("update.public_key", "update_public_key", str, "/usr/share/homework/update-key.pub",
        "the ed25519 public key (PEM or raw 32 bytes) updates must be signed with", path),
    Key("update.version_file", "update_version_file", str, "/etc/homework/version",
        "the running version (first line) and `sequence N` (an update must be newer)", path),
    Key("update.work_dir", "update_work_dir", str, "",
        "where an uploaded .hwup is kept while it is checked and written; '' = <state.dir>/update"),
    Key("update.max_upload_mb", "update_max_upload_mb", int, 1024, "largest .hwup accepted (MiB)",
        int_range(1, 16384)),
    Key("update.reboot_command", "update_reboot_command", str, "systemctl reboot",
        "run by the board's / API's / CLI's reboot"),
    Key("eapol.hostapd_ctrl", "hostapd_ctrl", str, "", "hostapd's control socket; '' = none"),
    Key("eapol.hostapd_deny_file", "hostapd_deny_file", str, "", "hostapd's deny list file"),
    Key("eapol.hostapd_port", "hostapd_port", str, "", "bridge port of hostapd's interface; '' = LOCAL",
        ifname_or_empty),
    Key("router.wan_lease_file", "wan_lease_file", str, "",
        "the WAN's DHCP lease as KEY='value' lines (the image's udhcpc hook writes it) for the settings "
        "page's WAN status; '' = not shown"),
    Key("router.interfaces_file", "interfaces_file", str, "",
        "the bring-up's record of the ports (WAN= and why, LAN_PORTS=, WIFI_IFACES=; the image's "
        "/run/homework/interfaces.env) for the hardware report; '' = [lan] ports and [wanwatch] interface"),
    Key("router.timezone", "timezone", str, "",
        "IANA zone of the household's clock (schedules' windows; usage's hours and months unless "
        "usage.timezone says otherwise); '' = /etc/localtime", timezone_name),
    Key("schedules.check_interval", "schedules_check_interval", int, 15,
        "seconds between looks at the clock for schedule windows opening or closing (changes apply at once)",
        int_range(1, 60)),
    Key("usage.timezone", "usage_timezone", str, "",
        "IANA zone whose hours, days and months usage is counted in; '' = router.timezone", timezone_name),
    Key("usage.flush_interval", "usage_flush_interval", int, 60,
        "seconds usage is summed in memory before one batched write (a restart loses at most this)",
        int_range(1, 3600)),
    Key("usage.keep_months", "usage_keep_months", int, 13, "months of hourly usage kept", int_range(2, 120)),
    Key("usage.monthly_cap", "usage_monthly_cap", int, 0,
        "the plan's bytes per billing period until set on the board/API/CLI; 0 = no cap", int_range(0, 10**18)),
    Key("usage.billing_day", "usage_billing_day", int, 1,
        "day of the month a billing period starts, until set on the board/API/CLI", int_range(1, 31)),
    Key("usage.test_period_seconds", "usage_test_period_seconds", int, 0,
        "tests only: every limit period (day or month) lasts this many seconds; 0 = real days and months",
        int_range(0, 86400)),
    Key("metrics.device_keep_seconds", "metrics_device_keep_seconds", int, 86400,
        "a device without a lease keeps its Prometheus series this long after it was last seen",
        int_range(60, 30 * 86400)),
    Key("notify.keep", "notify_keep", int, 200, "notifications kept (the oldest go first)", int_range(10, 10000)),
    Key("notify.delivery_log_keep", "notify_delivery_log_keep", int, 500,
        "webhook delivery attempts kept in the log", int_range(10, 100000)),
    Key("notify.webhook_attempts", "notify_webhook_attempts", int, 5,
        "tries per webhook delivery before giving up", int_range(1, 20)),
    Key("notify.webhook_backoff", "notify_webhook_backoff", int, 2,
        "seconds before the first retry; doubled for each further one", int_range(1, 600)),
    Key("notify.webhook_deadline", "notify_webhook_deadline", int, 10,
        "seconds one delivery attempt may take in all (connect, TLS, request, the answer's status)",
        int_range(1, 120)),
    Key("wanwatch.interface", "wanwatch_interface", str, "wan0",
        "the WAN interface whose loss makes a wan-down notification (the image's WAN)", ifname),
    Key("wanwatch.interval", "wanwatch_interval", int, 5, "seconds between looks at the WAN",
        int_range(1, 3600)),
    Key("wanwatch.down_after", "wanwatch_down_after", int, 3,
        "failed looks in a row before the WAN counts as down", int_range(1, 100)),
    Key("wanwatch.up_after", "wanwatch_up_after", int, 2,
        "good looks in a row before it counts as up again", int_range(1, 100)),
    Key("qos.enabled", "qos_enabled", bool, False,
        "shape the line and apply priorities (loads the qos component); the board's setting wins once set"),
    Key("qos.down_kbit", "qos_down_kbit", int, 0, "the line's download rate in kbit/s; 0 = unset (not shaped)",
        _zero_or_rate),
    Key("qos.up_kbit", "qos_up_kbit", int, 0, "the line's upload rate in kbit/s; 0 = unset (not shaped)",
        _zero_or_rate),
    Key("qos.high_share", "qos_high_share", int, 30,
        "percent of the line the high class is sure of when the line is busy (the other classes share the "
        "rest); on an idle line every class may use all of it, and High is served first", int_range(5, 90)),
    Key("qos.shape_percent", "qos_shape_percent", int, 95,
        "shape at this percent of the line's rates, so the queue builds in the router", int_range(80, 100)),
    Key("qos.down_percent", "qos_down_percent", int, 90,
        "shape the download at this percent of the line's download rate (lower than shape_percent: "
        "the router shapes after the modem's queue, which drains only at the spare)", int_range(50, 100)),
    Key("qos.lan_interface", "qos_lan_interface", str, "", "where download is shaped; '' = the bridge",
        ifname_or_empty),
    Key("qos.wan_interface", "qos_wan_interface", str, "", "where upload is shaped; '' = wanwatch.interface",
        ifname_or_empty),
    Key("isp.edge", "isp_edge", str, "",
        "the ISP edge's control interface (ispedge/), where the household's priorities are placed too; "
        "'' = none", edge_url),
    Key("isp.ca", "isp_ca", str, "/var/lib/homework/isp/isp-ca.crt", "the ISP's CA certificate (PEM)"),
    Key("isp.cert", "isp_cert", str, "/var/lib/homework/isp/edge.crt",
        "the household's certificate the ISP issued for the edge (PEM)"),
    Key("isp.key", "isp_key", str, "/var/lib/homework/isp/edge.key", "its key (PEM; made on the router)"),
    Key("mqtt.host", "mqtt_host", str, "", "the MQTT broker's host name or address; '' = no MQTT"),
    Key("mqtt.port", "mqtt_port", int, 1883, "the broker's port", int_range(1, 65535)),
    Key("mqtt.username", "mqtt_username", str, "", "the controller's MQTT user; '' = anonymous"),
    Key("mqtt.password_file", "mqtt_password_file", str, "", "file holding that user's password (not in this file)"),
    Key("mqtt.topic_prefix", "mqtt_topic_prefix", str, "homework", "root of the devices' topics"),
    Key("mqtt.discovery_prefix", "mqtt_discovery_prefix", str, "homeassistant", "Home Assistant's discovery prefix"),
    Key("mqtt.accept_commands", "mqtt_accept_commands", bool, False,
        "apply permit/deny from PREFIX/device/ID/set (the broker's ACL must allow only the admin user there)"),
    Key("reach.wan_interface", "reach_wan_interface", str, "",
        "where port forwards, UPnP mappings and pinholes come in; '' = wanwatch.interface", ifname_or_empty),
    Key("reach.check_interval", "reach_check_interval", int, 5,
        "seconds between looks at who may be reached (a pause, a usage block or a lease ending closes "
        "ports within this; decisions close them at once)", int_range(1, 300)),
    Key("reach.upnp", "reach_upnp", bool, True,
        "run miniupnpd (UPnP IGD, NAT-PMP, PCP) for the devices the household lets open ports; false: none may"),
    Key("reach.upnp_http_port", "reach_upnp_http_port", int, 5000, "miniupnpd's HTTP port on the LAN",
        int_range(1024, 65535)),
    Key("reach.upnp_run_dir", "reach_upnp_run_dir", str, "/run/homework/upnp",
        "miniupnpd's configuration and lease files (written by the controller)", path),
    Key("reach.pcp_min_lifetime", "reach_pcp_min_lifetime", int, 120,
        "shortest PCP mapping in seconds (RFC 6887 suggests 120)", int_range(60, 3600)),
    Key("reach.pcp_max_lifetime", "reach_pcp_max_lifetime", int, 86400,
        "longest PCP mapping in seconds (RFC 6887 suggests 86400)", int_range(600, 604800)),
    Key("remote.listen_port", "remote_listen_port", int, 51820,
        "the router's WireGuard port on the WAN (UDP): the only opening remote access adds", int_range(1, 65535)),
    Key("remote.endpoint", "remote_endpoint", str, "",
        "the host name (or address) clients reach the router at, e.g. a dynamic DNS name; '' = the "
        "router's WAN address when the configuration is made"),
    Key("remote.backend", "remote_backend", str, "auto",
        "'kernel' (the image's WireGuard), 'wireguard-go' (userspace, over TUN) or 'auto': the kernel's "
        "when it has the module", one_of("auto", "kernel", "wireguard-go")),
    Key("remote.interface", "remote_interface", str, "wg0", "the WireGuard interface's name", ifname),
    Key("remote.run_dir", "remote_run_dir", str, "/run/homework/remote",
        "where the away namespace's holder and DHCP clients keep their pid files", path),
    Key("remote.check_interval", "remote_check_interval", int, 5,
        "seconds between looks at where each remote device connects from", int_range(1, 300)),
    Key("ipv6.enabled", "ipv6_enabled", bool, True,
        "give every device its own /64 (Router Advertisements, routed like IPv4); off: IPv4 only"),
    Key("ipv6.prefix", "ipv6_prefix", str, "",
        "the site prefix the /64s come from (the ISP's delegated /48-/60); '' = a unique local /48 made once",
        ipv6_site_prefix),
    Key("ipv6.prefix_file", "ipv6_prefix_file", str, "/run/homework/ipv6-delegated-prefix",
        "where the WAN's DHCPv6 client writes the ISP's delegated prefix (scripts/wan-pd-hook.sh); "
        "used when prefix is ''"),
)
SECTIONS = tuple(dict.fromkeys(k.name.partition(".")[0] for k in KEYS))


def _typed(key: Key, value: Any) -> Any:
    kind = key.kind
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(key.name, f"expected an integer, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise ConfigError(key.name, f"expected a string, got {value!r}")
    if kind is bool and not isinstance(value, bool):
        raise ConfigError(key.name, f"expected true or false, got {value!r}")
    if kind is list and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ConfigError(key.name, f"expected a list of strings, got {value!r}")
    return key.check(key.name, value) if key.check else value


def _state_db(self) -> Path:
    return self.state_dir / "state.db"


def _pki_dir(self) -> Path:
    return self.state_dir / "pki"


# The dataclass the rest of the controller reads (config.pool, config.pending_lease, ...).
if TYPE_CHECKING:
    class Config:
        """What the type checker sees: the attributes are made from KEYS at import, so each
        is Any to it; KEYS' types and checks hold them at load (and the tests, every name)."""
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
        version: int

        def __init__(self, **values: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

        @property
        def state_db(self) -> Path: ...

        @property
        def pki_dir(self) -> Path: ...
else:
    Config = dataclasses.make_dataclass(
        "Config",
        [(k.attr, Any, dataclasses.field(default=_typed(k, k.default))) for k in KEYS]
        + [("version", int, dataclasses.field(default=CURRENT_VERSION))],
        namespace={"state_db": property(_state_db), "pki_dir": property(_pki_dir), "__module__": __name__,
                   "__doc__": "The validated configuration; built from KEYS."},
        frozen=True,
    )


# -- migrations ---------------------------------------------------------------------------------
def _v1_to_v2(data: dict) -> None:
    """Version 2 drops [wan] interface, which never did anything: the image's bring-up
    script finds the WAN itself, and NAT is set up outside the controller."""
    wan = data.get("wan", {})
    wan.pop("interface", None)
    if "wan" in data and not wan:
        del data["wan"]


# MIGRATIONS[n] turns a version n+1 file into version n+2 (an unversioned file is version 1).
MIGRATIONS: tuple[Callable[[dict], None], ...] = (_v1_to_v2,)
assert len(MIGRATIONS) == CURRENT_VERSION - 1


def migrate(data: dict) -> dict:
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError("version", f"expected a whole number from 1, got {version!r}")
    if version > CURRENT_VERSION:
        raise ConfigError("version", f"this file is version {version}, newer than this controller "
                          f"understands ({CURRENT_VERSION}); refusing to guess")
    data = {section: dict(table) if isinstance(table, dict) else table for section, table in data.items()}
    for step in MIGRATIONS[version - 1:]:
        step(data)
    if version < CURRENT_VERSION:
        log.info("config version %d read as version %d", version, CURRENT_VERSION)
    data["version"] = CURRENT_VERSION
    return data


def parse(data: dict) -> Config:
    """Build a Config from a parsed TOML document, checking every value."""
    data = migrate(data)
    known = {section: {k.name.partition(".")[2]: k for k in KEYS if k.name.startswith(section + ".")}
             for section in SECTIONS}
    values = {}
    for section, table in data.items():
        if section == "version":
            continue
        if section not in known:
            raise ConfigError(section, f"unknown section (known: {', '.join(sorted(known))})")
        if not isinstance(table, dict):
            raise ConfigError(section, "expected a [section] table")
        for name, value in table.items():
            key = known[section].get(name)
            if key is None:
                raise ConfigError(f"{section}.{name}",
                                  f"unknown key (known: {', '.join(sorted(known[section]))})")
            values[key.attr] = _typed(key, value)
    return Config(**values)


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


def dnsd_args(config: Config) -> list[str]:
    """homework-dnsd's command line, from the same file the controller reads (so the
    nftables redirect and dnsd never point at different places)."""
    args = ["--listen", config.dns_listen, "--upstream", config.dns_upstream, "--control", config.dns_control]
    # Left out when empty: the systemd unit word-splits this line.
    if config.dns_resolv_file:
        args += ["--resolv-file", config.dns_resolv_file]
    local = ",".join(local_domains(config))
    if local:
        args += ["--local-domains", local]
    if config.ipv6_enabled:
        args += ["--listen6", config.dns_listen6]
    if config.dns_resolver:
        args += ["--resolver", config.dns_resolver]
    if config.dns_dot_listen and config.dns_tls_cert and config.dns_tls_key:
        args += ["--dot-listen", config.dns_dot_listen]
        if config.ipv6_enabled and config.dns_dot_listen6:
            args += ["--dot-listen6", config.dns_dot_listen6]
        args += ["--tls-cert", config.dns_tls_cert, "--tls-key", config.dns_tls_key]
    if config.dns_doh_socket:
        args += ["--doh-socket", config.dns_doh_socket]
    if config.dns_dot_listen or config.dns_doh_socket:
        args += ["--resolver-name", config.dns_resolver_name.strip(".")]
    return args


def dnsmasq_args(config: Config) -> list[str]:
    """The router dnsmasq's arguments beyond conf/dnsmasq.conf: the household's own domains
    are answered from its hosts directory and never asked upstream. A name the localnames
    component is about to publish must not be in flight to the upstream resolver when the
    hosts file changes: dnsmasq turns the upstream's NXDOMAIN for a name it now knows into
    NOERROR with no address (NODATA), a wrong answer for a name that has one. And
    <device>.home.arpa is nobody's business outside the home (RFC 8375)."""
    return [f"--local=/{d}/" for d in local_domains(config)]


def local_domains(config: Config) -> list[str]:
    """[dns] local_domains as a list, blanks dropped."""
    return [d.strip() for d in config.dns_local_domains.split(",") if d.strip()]


def help_text() -> str:
    lines = [f"version = {CURRENT_VERSION}"]
    for section in SECTIONS:
        lines.append(f"\n[{section}]")
        for k in KEYS:
            if k.name.startswith(section + "."):
                default = repr(k.default).replace("'", '"').replace("True", "true").replace("False", "false")
                lines.append(f"{k.name.partition('.')[2]} = {default}   # {k.help}")
    return "\n".join(lines)


def _toml(value: Any) -> str:
    return repr(value).replace("'", '"').replace("True", "true").replace("False", "false")


def _allowed(key: Key) -> str:
    """What a key accepts, in words, from its check (the docs' "allowed" column)."""
    if key.check is None:
        return {bool: "true or false", int: "a whole number", str: "text", list: "a list"}[key.kind]
    if key.check in ALLOWED:
        return ALLOWED[key.check]
    return _CHECK_WORDS.get(key.check.__name__, "see what")


_CHECK_WORDS = {
    "ifname": "an interface name", "ifname_or_empty": "an interface name, or empty",
    "ip_address": "an IP address", "ip_address_or_empty": "an IP address, or empty",
    "host_port": "ADDRESS:PORT ([v6]:port for IPv6)", "pool": "an IPv4 network",
    "components": "component names", "lan_ports": "interface names",
    "satellite_list": "DPID:UPLINK:ROUTER_PORT lines", "timezone_name": "an IANA time zone, or empty",
    "ipv6_site_prefix": "an IPv6 prefix, or empty", "domain_list": "domain names, comma-separated",
    "path": "a path", "ipv4_list": "IPv4 addresses",
}


def markdown() -> str:
    """docs/config.md: every key of KEYS, by section (tests/unit/test_docs.py keeps it current)."""
    out = ["# Configuration keys", "",
           "Generated from `KEYS` in `nox-modules/homework/config.py` by",
           "`python3 -m homework.config --markdown > docs/config.md`; a unit test fails when it is",
           "not current. The file is TOML (`conf/homework.toml` is the reference); a bad value stops",
           "the controller with a message naming the key. The file's `version` is now "
           f"{CURRENT_VERSION}.", ""]
    for section in SECTIONS:
        out += [f"## [{section}]", "", "| key | type | default | allowed | what |", "|---|---|---|---|---|"]
        for k in KEYS:
            if k.name.startswith(section + "."):
                help_text = k.help.replace("|", "\\|")
                out.append(f"| `{k.name.partition('.')[2]}` | {k.kind.__name__} | `{_toml(k.default)}` | "
                           f"{_allowed(k)} | {help_text} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m homework.config",
                                     description="Check a Homework config file or print what others need from it")
    parser.add_argument("config", nargs="?", help="the TOML file")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--dnsd-args", action="store_true", help="print homework-dnsd's arguments")
    what.add_argument("--dnsmasq-args", action="store_true",
                      help="print the router dnsmasq's arguments beyond its conf file (the local domains)")
    what.add_argument("--dnsd-address", action="store_true", help="print the address homework-dnsd listens on")
    what.add_argument("--dnsd-address6", action="store_true",
                      help="print homework-dnsd's IPv6 address (nothing with IPv6 off): the captive pages listen there")
    what.add_argument("--help-keys", action="store_true", help="print every key with its default and help")
    what.add_argument("--markdown", action="store_true", help="print docs/config.md (every key, by section)")
    args = parser.parse_args(argv)
    if args.help_keys:
        print(help_text())
        return 0
    if args.markdown:
        print(markdown())
        return 0
    if not args.config:
        parser.error("a config file is needed")
    try:
        config = load(args.config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.dnsd_args:
        print(" ".join(dnsd_args(config)))
    elif args.dnsmasq_args:
        print(" ".join(dnsmasq_args(config)))
    elif args.dnsd_address:
        print(config.dns_listen.rpartition(":")[0])
    elif args.dnsd_address6:
        if config.ipv6_enabled:
            print(config.dns_listen6.rpartition(":")[0].strip("[]"))
    else:
        print(f"{args.config}: ok (version {config.version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
