"""The shapes many routes share: a device as the CLI and scripts see it (`Device`), as the
Guest Board sees it (`BoardDevice`, `DevicePanel`), its lease, and an error.

A device's view carries what each loaded component says about it (`ctx.facts_about`):
those fields are optional, present when their component is loaded.
"""
from __future__ import annotations

from typing import Annotated, Literal

from .model import Field, Model, field

Mac = Annotated[str, Field(doc="MAC address in the router's form (lower case, ':' separated)",
                           example="02:68:77:01:00:01")]
Epoch = Annotated[float, Field(doc="epoch seconds")]
DeviceState = Literal["pending", "permitted", "denied", "blacklisted"]
Zone = Literal["outside", "asking", "permitted"]
Period = Literal["day", "month"]


class Error(Model):
    """Every answer that is not a success: the reason in a sentence, and the status again."""
    error: str = field(doc="what went wrong, for a person to read")
    status: int


class Attached(Model):
    """Where a device is plugged in."""
    switch: str = field(doc="'router' or 'satellite N'")
    satellite: int | None = field(doc="the satellite's number; null on the router")
    port: str = field(doc="the router port's name, or the satellite's port number")


class UsageLimit(Model):
    """A device's or an owner's allowance (usage component)."""
    target: str = field(doc="a MAC, or owner:NAME")
    period: Period
    allowance: int = field(doc="bytes per period")
    action: Literal["notify", "slow", "block"]
    rate: int = field(optional=True, doc="slow: kbit/s the device keeps once the allowance is used")
    text: str = field(doc="the same in words: '20 MB a day; once it is used up, slowed to "
                                         "1 Mbit/s until the day is over'")


class UsageBurst(Model):
    """A device's usage alert: the household is told when it moves more than `bytes` within
    `minutes` (usage component)."""
    mac: str
    bytes: int = field(doc="the amount, in bytes")
    minutes: int = field(doc="the window, 1-60 minutes")
    text: str = field(doc="the same in words: 'more than 500 MB in 10 minutes'")


class Forward(Model):
    """A port of the router's internet address forwarded to a device."""
    id: int
    mac: str
    protocol: Literal["tcp", "udp", "both"]
    ports: str = field(doc="the external port or range as written, e.g. 27015-27030")
    first: int
    last: int
    to_port: int = field(doc="the device's port the first one goes to")
    description: str
    created: float
    device: str = field(doc="its name as the board shows it")
    open: bool = field(doc="open now")
    why_closed: str = field(doc="why not, in the household's words; '' when open")
    address: str = field(doc="the device's IPv4 address it goes to")
    ipv6_prefix: str = field(doc="the device's /64 its IPv6 pinhole opens")


class OpenMapping(Model):
    """A port opened by UPnP IGD, NAT-PMP or PCP, as miniupnpd keeps it."""
    key: str
    family: Literal[4, 6]
    protocol: str
    port: int
    address: str
    to_port: int
    description: str
    expires: float = field(doc="epoch seconds; 0 = until closed")


class Mapping(OpenMapping):
    """A port a device opened itself, with the device."""
    mac: str = field(doc="'' when no device of the home holds the address")
    device: str


class OpenPorts(Model):
    forwards: list[Forward]
    mappings: list[Mapping]


class Away(Model):
    """Where a device away from home connects from."""
    connected: bool
    endpoint: str = field(doc="its address and port on the internet; '' before it connects")
    last_handshake: float | None = field(doc="epoch seconds")
    received: int
    sent: int


class LooksLike(Model):
    """A pending device with a new private address that looks like a permitted device."""
    mac: str = field(doc="the permitted device it looks like")
    name: str
    text: str = field(doc="the board's words, e.g. 'looks like Tom's iPhone with a new private address'")


class Guess(Model):
    """The router's own guess of what a device is (components/identify)."""
    type: str = field(doc="phone, laptop, tablet, TV, console, speaker, printer, camera, IoT, or '' when not known")
    os: str
    os_version: str
    model: str
    label: str = field(doc="what it is in plain words, e.g. 'iPhone (iOS 15 or later)'; '' when not known")
    confidence: float = field(minimum=0, maximum=1)
    level: Literal["sure", "likely", "maybe", "household"]
    why: list[str] = field(doc="the reasons, as phrases for the panel")
    rules: list[str] = field(doc="the fingerprint rules that matched")


class IdentityView(Guess):
    """What a device is, as the board shows it: the router's guess, or the household's word."""
    corrected: bool = field(doc="the household said what it is")
    guess: Guess = field(optional=True, doc="the router's own guess, when the household corrected it")
    looks_like: LooksLike = field(optional=True)


class DeviceFacts(Model):
    """What the loaded components add to a device's view."""
    # routing
    flow_limited: bool = field(optional=True, doc="opened more connections than a device may: counted per host")
    attached: Attached | None = field(optional=True, doc="null while it has no lease on one of our ports")
    ipv6_prefix: str | None = field(optional=True, doc="its own IPv6 /64 (when devices get IPv6)")
    # usage
    usage_blocked: bool = field(optional=True, doc="cut off: its usage limit is used up")
    usage_slowed: bool = field(optional=True, doc="slowed down: its usage limit is used up")
    usage_slow_kbps: int = field(optional=True, doc="the rate it is slowed to (0: not slowed)")
    usage_limit: UsageLimit | None = field(optional=True)
    usage_burst: UsageBurst | None = field(optional=True, doc="its usage alert; null: none")
    # localnames
    dns_name: str | None = field(optional=True, doc="the name other devices reach it by inside the home")
    # schedules
    paused: bool = field(optional=True, doc="cut off now by a pause or a bedtime")
    paused_by: Literal["", "pause", "schedule"] = field(optional=True)
    paused_until: float = field(optional=True, doc="epoch seconds the cut ends; 0 = not cut")
    in_schedule: Literal["", "pause", "dns-strict"] = field(optional=True, doc="a window open now")
    # qos
    priority: Literal["high", "medium", "default"] = field(optional=True)
    # radio
    wired: bool = field(optional=True, doc="on a wired port (no radio reports it)")
    radio: str | None = field(optional=True, doc="the radio that hears it: wlan0, or wlan0@sat2 on a satellite")
    band: str | None = field(optional=True, doc="2.4 GHz, 5 GHz or 6 GHz; null if unknown")
    radio_seen_at: float | None = field(optional=True, doc="epoch seconds the radio last heard it")
    leave_after: int = field(optional=True, doc="seconds unseen before its label leaves the board")
    # reach
    may_open_ports: bool = field(optional=True, doc="the household lets it open ports itself (UPnP, NAT-PMP, PCP)")
    open_ports: OpenPorts = field(optional=True, doc="its forwards and the ports it opened itself")
    # remote
    away: Away = field(optional=True, doc="a device away from home: where it connects from")
    private: bool = field(optional=True, doc="false for a device away from home: its MAC is the router's making, "
                                             "not a randomised one")
    # identify
    identity: IdentityView | None = field(optional=True, doc="what it is (null: nothing known yet)")


class Lease(Model):
    """A device's DHCP lease: its own /30."""
    mac: Mac
    network: str = field(doc="the /30, e.g. 10.2.0.4/30")
    router: str = field(doc="the router's address in it")
    ip: str = field(doc="the device's address")
    broadcast: str
    expires: float = field(doc="epoch seconds; 0 = offered only, released or ended")
    port: int = field(doc="OpenFlow port it was granted on")
    hostname: str
    relay: str = field(doc="the relay agent it came through; '' on our own port")
    active: bool
    ipv6_prefix: str = field(optional=True, doc="the device's own IPv6 /64 (when devices get IPv6)")


class Device(DeviceFacts):
    """A device the router has seen, its decision and lease (`homework status`)."""
    mac: Mac
    state: DeviceState
    hostname: str = field(doc="what it calls itself in DHCP")
    name: str = field(doc="the household's name for it")
    owner: str
    type: str
    first_seen: Epoch
    last_seen: Epoch
    lease: Lease | None


class BoardLease(Model):
    ip: str
    router: str
    expires: float
    active: bool


class Metrics(Model):
    """Live figures from the radio and the traffic counters."""
    rssi: float | None = field(doc="dBm; null without a radio report")
    retrans: float = field(doc="share of frames retried in the last interval")
    link_at: float = field(doc="epoch seconds of the last radio report")
    bps: float = field(doc="bytes per second in the last interval")
    today_bytes: int = field(doc="bytes since local midnight: the usage component's count when it is loaded "
                                 "(the usage page's and the panel chart's), else the radio's and flow reports'")
    seen_at: float = field(doc="epoch seconds the radio last heard it; 0 = never (wired)")
    leave_after: int = field(doc="seconds unseen before the board lets the label go")


class NoMetrics(Model):
    """A label without live figures (a satellite asking to pair)."""


class BoardDevice(DeviceFacts):
    """A label on the Guest Board: a device, a MAC the radio hears, a group of randomised
    MACs nearby, or a satellite asking to pair."""
    mac: str = field(doc="a MAC; ap-<dpid> for a satellite")
    state: Literal["pending", "permitted", "denied", "blacklisted", "unknown", "group"]
    zone: Zone
    label: str = field(doc="what the label says: name, else hostname, else maker, else MAC")
    label_source: Literal["name", "hostname", "hostname-reserved", "vendor", "mac", "group", "access-point"] = \
        field(doc="hostname-reserved: it calls itself by one of the router's names, and is labelled so")
    vendor: str = field(optional=True)
    private: bool = field(optional=True, doc="a locally administered (randomised) MAC")
    hostname: str
    name: str
    owner: str
    type: str
    first_seen: float
    last_seen: float
    lease: BoardLease | None
    metrics: Metrics | NoMetrics
    # a group of randomised MACs the radio hears (nearby)
    count: int = field(optional=True, doc="a group: how many randomised MACs")
    # a satellite asking to pair
    kind: Literal["access-point"] = field(optional=True)
    dpid: str = field(optional=True, doc="a satellite: its datapath id")
    code: str = field(optional=True, doc="a satellite: the code it shows, to compare before permitting")


class Alert(Model):
    at: Epoch
    kind: str
    detail: str


class DnsRule(Model):
    """A website rule: allow or block a domain (and every name under it)."""
    id: int
    owner: str = field(doc="a MAC, an owner's name, or 'household'")
    domain: str
    action: Literal["allow", "deny"]
    schedule: str = field(doc="when it counts, e.g. 'sun-thu 21:30-07:00'; '' = always")
    created: Epoch
    active: bool = field(optional=True, doc="counts now (its schedule is open)")


class DnsRules(Model):
    """Website rules: a device's own (with its mode), or the household's (with every owner's mode)."""
    rules: list[DnsRule]
    mode: Literal["denylist", "allowlist"] = field(
        optional=True, doc="a device's: denylist (every site but those blocked) or allowlist (only those allowed)")
    modes: dict[str, str] = field(optional=True, doc="the household's rules: every owner's mode")


class DevicePanel(BoardDevice):
    """One device's panel on the Guest Board."""
    alerts: list[Alert] = field(doc="recent alerts about it, newest first")
    dns_rules: DnsRules | None = field(doc="its website rules; null without the dns component")
