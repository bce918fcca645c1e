"""Every event on the bus, declared once: a dataclass per topic, and the kinds of alert.

A publisher builds one (`bus.publish(events.Lease(...))`) and a subscriber reads its
attributes (`ev.mac`). The bus refuses a topic that is not declared here, and `Alert`
refuses a kind that is not in `AlertKind`, so a typo fails in the unit tests instead of
reaching a subscriber that never hears it. `as_dict()` gives the payload as the API's event
stream, hwdb and MQTT carry it (a field named `class_` is `class` there).

Who publishes and who reads each topic is in docs/architecture.md ("Events").
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, NamedTuple


class AlertKind(StrEnum):
    """Every kind of `alert`: hwdb's Alerts, the board's alert list, notifications."""
    DHCP_FLOOD = "dhcp-flood"                   # a port's new-MAC limit tripped
    DHCP_RELAY = "dhcp-relay"                   # a relayed message from an agent not listed, or for one of our leases
    DHCP_PORT_MISMATCH = "dhcp-port-mismatch"   # a lease asked for from another port
    DHCP_RELEASE_FORGED = "dhcp-release-forged"  # a RELEASE from a port that does not hold the lease
    DHCP_DECLINE_FORGED = "dhcp-decline-forged"  # a DECLINE likewise
    FLOW_LIMIT = "flow-limit"                   # a device over the per-host flow limit
    USAGE_80 = "usage-80"                       # the household used 80% of its cap
    USAGE_100 = "usage-100"                     # ... all of it
    USAGE_LIMIT = "usage-limit"                 # a device or owner used up its allowance
    USAGE_BURST = "usage-burst"                 # a device moved more than its burst alert's bytes in its window
    STORAGE_FULL = "storage-full"               # the state disk is full: changes are refused
    STORAGE_ERROR = "storage-error"             # the state disk cannot be written for another reason
    QOS_HIGH_DROPS = "qos-high-drops"           # the high-priority class dropped packets
    ISP_HIGH_DROPS = "isp-high-drops"           # the ISP edge's high queue for this home dropped packets
    WAN_DOWN = "wan-down"
    WAN_UP = "wan-up"
    LAN_PORT_MISSING = "lan-port-missing"       # a configured LAN port is not on the bridge
    SWITCH_REFUSED = "switch-refused"           # a second switch connected to the controller
    PREAPPROVAL_MOVED = "preapproval-moved"     # a pre-approved MAC asked from another port than it was first seen on
    ROUTER_BOOT = "router-boot"                 # the router's start-up: its boot partition repaired or
                                                # unusable, its system not marked good (bootalerts.py)


@dataclass(frozen=True, eq=False)
class Event:
    """The base of every event: its topic, and its payload as a dict."""
    TOPIC: ClassVar[str]

    def as_dict(self) -> dict[str, Any]:
        return {f.name.rstrip("_"): getattr(self, f.name) for f in dataclasses.fields(self)}

    # A read-only mapping view (ev["mac"], ev.get("mac"), {**ev}) for tests and for code that
    # passes a payload on whole; the controller's subscribers read attributes
    # (tests/unit/test_events.py checks them).
    def __getitem__(self, key: str) -> Any:
        try:
            return self.as_dict()[key]
        except KeyError:
            raise KeyError(f"{type(self).__name__} has no field {key!r}") from None

    def get(self, key: str, default: Any = None) -> Any:
        return self.as_dict().get(key, default)

    def keys(self):
        return self.as_dict().keys()

    def __eq__(self, other) -> bool:
        if isinstance(other, Event):
            return type(other) is type(self) and other.as_dict() == self.as_dict()
        if isinstance(other, dict):
            return other == self.as_dict()
        return NotImplemented

    __hash__ = None     # type: ignore[assignment]   # payloads hold lists and dicts


@dataclass(frozen=True, eq=False)
class Device(Event):
    """A device was seen for the first time, decided, renamed or forgotten (devices.py)."""
    TOPIC: ClassVar[str] = "device"
    mac: str
    state: str | None           # None: forgotten
    old_state: str | None = None
    device: dict | None = None  # its row as the state store has it ({"mac"} when forgotten)
    reason: str = ""            # "seen", "decision", "meta" or "forgotten"


@dataclass(frozen=True, eq=False)
class Identity(Event):
    """What a device looks like changed: its guessed type, OS and label, why, or the
    household's correction (components/identify)."""
    TOPIC: ClassVar[str] = "identity"
    mac: str
    identity: dict              # type, os, os_version, model, label, confidence, why, corrected, looks_like


@dataclass(frozen=True, eq=False)
class Lease(Event):
    """DHCP granted, renewed, released or ended a lease (components/dhcp)."""
    TOPIC: ClassVar[str] = "lease"
    action: str                 # "granted", "renewed", "released", "expired", ...
    lease: Any                  # leases.Lease
    state: str | None           # the device's state
    mac: str = ""               # the lease's (the API and hwdb route every event by it)
    lease_time: int = 0

    def __post_init__(self):
        if not self.mac:
            object.__setattr__(self, "mac", self.lease.mac)


@dataclass(frozen=True, eq=False)
class Alert(Event):
    """Something the household should know of (hwdb Alerts, the board, notifications)."""
    TOPIC: ClassVar[str] = "alert"
    mac: str                    # "" when it is about no device
    kind: AlertKind
    detail: str                 # a whole sentence for the household (wording.py): names, units
    data: dict = dataclasses.field(default_factory=dict)   # the machine fields (bytes, ports, ...)

    def __post_init__(self):
        object.__setattr__(self, "kind", AlertKind(self.kind))     # ValueError on an undeclared kind


@dataclass(frozen=True, eq=False)
class Bandwidth(Event):
    """A permitted device's bytes since routing's previous poll (routing/accounting.py):
    published only for a device that moved bytes in the interval, and once with none when
    it stops, so an idle household publishes nothing."""
    TOPIC: ClassVar[str] = "bandwidth"
    mac: str
    ip: str = ""
    bytes: int = 0
    up: int | None = None       # from the device (None: not split)
    down: int | None = None     # to the device (None: bytes - up)
    seconds: float | None = None  # the interval the bytes were counted over (None: not said)


class FlowRecord(NamedTuple):
    """One flow's growth in one direction since its last record, or its last growth: for
    the device `mac` (a tuple: a busy router makes thousands a second)."""
    mac: str
    proto: int
    saddr: str
    sport: int
    daddr: str
    dport: int
    npkts: int
    nbytes: int


@dataclass(frozen=True, eq=False)
class Flows(Event):
    """Flows' growth since their last records, or their last growth, together: each poll's,
    and the endings of each second (routing/accounting.py). A record: mac, proto, saddr,
    sport, daddr, dport, npkts, nbytes."""
    TOPIC: ClassVar[str] = "flows"
    records: tuple[FlowRecord, ...] = ()


@dataclass(frozen=True, eq=False)
class Link(Event):
    """A station's signal and counters (radio monitor, link simulator), or a probe heard."""
    TOPIC: ClassVar[str] = "link"
    mac: str
    rssi: float | None
    retries: int
    packets: int
    bytes: int
    retry_rate: float | None = None
    tx_failed: int | None = None
    tx_bitrate: float | None = None
    rx_bitrate: float | None = None
    inactive_ms: int | None = None
    ifname: str | None = None
    seen_at: float | None = None
    associated: bool | None = None       # False: a probe from a station not connected


@dataclass(frozen=True, eq=False)
class Notification(Event):
    """A notification was kept (components/notify); MQTT and the board pass it on."""
    TOPIC: ClassVar[str] = "notification"
    id: int
    at: float
    kind: str                   # "device-joining", "device-blacklisted", "alert-<kind>", "wan-down", ...
    mac: str
    title: str                  # whole sentences for the household (wording.py)
    detail: str
    read: bool
    data: dict = dataclasses.field(default_factory=dict)   # the machine fields of its alert


@dataclass(frozen=True, eq=False)
class DnsQuery(Event):
    """A query homework-dnsd answered (or several alike, `count`)."""
    TOPIC: ClassVar[str] = "dns_query"
    mac: str | None
    name: str
    qtype: int = 0
    verdict: str = ""
    latency_us: int = 0
    count: int = 1              # dnsd merges identical queries within 20 ms


@dataclass(frozen=True, eq=False)
class DnsAnswer(Event):
    """The addresses an upstream answer gave for a name a device asked."""
    TOPIC: ClassVar[str] = "dns_answer"
    mac: str
    name: str
    addresses: list


@dataclass(frozen=True, eq=False)
class QosRate(Event):
    """A priority class's (mac None) or a device's rate in one direction, every second."""
    TOPIC: ClassVar[str] = "qos"
    mac: str | None
    direction: str
    class_: str
    bytes: int
    packets: int
    drops: int
    rate_bps: int


@dataclass(frozen=True, eq=False)
class AppTuple(Event):
    """A computer's agent says an application owns one of its connections (the seed's
    Application tuple: the 5-tuple as that computer sees it)."""
    TOPIC: ClassVar[str] = "app_tuple"
    mac: str
    app: str
    proto: str
    src: str
    sport: int
    dst: str
    dport: int


@dataclass(frozen=True, eq=False)
class QosAppRate(Event):
    """An application's rate in one direction, every second."""
    TOPIC: ClassVar[str] = "qos_app_rate"
    name: str
    direction: str
    class_: str
    rate_bps: int
    bytes: int
    packets: int


@dataclass(frozen=True, eq=False)
class QosDevice(Event):
    """A device's priority class was set ("default": no rule)."""
    TOPIC: ClassVar[str] = "qos_device"
    mac: str
    class_: str


@dataclass(frozen=True, eq=False)
class QosApp(Event):
    """An application rule as set now; class "" means removed."""
    TOPIC: ClassVar[str] = "qos_app"
    name: str
    class_: str
    ports: list
    domains: list
    window: dict | None


@dataclass(frozen=True, eq=False)
class StationAt(Event):
    """A station was heard on another radio than before: it roamed (radio monitor)."""
    TOPIC: ClassVar[str] = "station_at"
    mac: str
    ifname: str
    previous: str | None


@dataclass(frozen=True, eq=False)
class Nearby(Event):
    """A device heard probing, or a radio's group of randomised MACs, came or went."""
    TOPIC: ClassVar[str] = "nearby"
    mac: str
    rssi: float | None
    radio: str
    band: str | None
    last_heard: float
    randomised: bool
    count: int
    gone: bool
    macs: list | None = None


@dataclass(frozen=True, eq=False)
class RadioReport(Event):
    """A satellite's agent sent a radio's station dump (components/satlink)."""
    TOPIC: ClassVar[str] = "radio_report"
    ifname: str
    dump: str
    info: str


@dataclass(frozen=True, eq=False)
class Satellite(Event):
    """A satellite's pairing changed (pairing.py)."""
    TOPIC: ClassVar[str] = "satellite"
    dpid: int
    what: str                   # "requested", "permitted", "denied" or "forgotten"


@dataclass(frozen=True, eq=False)
class Ipv6Plan(Event):
    """The ISP delegated another prefix: every device moves to its /64 of the new one."""
    TOPIC: ClassVar[str] = "ipv6_plan"
    old: Any                    # ipv6plan.AddressPlan or None
    new: Any


@dataclass(frozen=True, eq=False)
class Restart(Event):
    """The controller restarts in place now (restart.py: a restore, a factory reset, a
    satellite's cable): the board tells the household, and when it expects it back."""
    TOPIC: ClassVar[str] = "restart"
    why: str
    back_in: int                # seconds, an estimate (0: not known)


@dataclass(frozen=True, eq=False)
class Timezone(Event):
    """The household set the router's time zone (system.py): whoever reads local time
    (schedules, usage periods, DNS rule windows) takes it now, without a restart."""
    TOPIC: ClassVar[str] = "timezone"
    zone: str


@dataclass(frozen=True, eq=False)
class Wifi(Event):
    """The Wi-Fi network's name or passphrase was set (wifi.py)."""
    TOPIC: ClassVar[str] = "wifi"
    ssid: str


@dataclass(frozen=True, eq=False)
class Schedule(Event):
    """A device's pause or schedule window began or ended (components/schedules)."""
    TOPIC: ClassVar[str] = "schedule"
    mac: str


@dataclass(frozen=True, eq=False)
class ScheduleStrict(Event):
    """The devices in a dns-strict window now (components/schedules)."""
    TOPIC: ClassVar[str] = "schedule_strict"
    macs: list


@dataclass(frozen=True, eq=False)
class CutOffChanged(Event):
    """Why a device is cut off changed (cutoff.py): kind is pending, denied, paused, bedtime or
    allowance ("" = not cut off any more), until the epoch second it ends (0 = until someone
    decides)."""
    TOPIC: ClassVar[str] = "cutoff"
    mac: str
    kind: str
    until: float = 0


TOPICS: dict[str, type[Event]] = {cls.TOPIC: cls for cls in Event.__subclasses__()}


def declared(topic: str) -> bool:
    return topic in TOPICS


def markdown() -> str:
    """The table of docs/architecture.md's "Events" section (tests/unit/test_events.py keeps it current)."""
    rows = ["| topic | payload | what |", "|---|---|---|"]
    for topic, cls in TOPICS.items():
        fields = ", ".join(f.name.rstrip("_") for f in dataclasses.fields(cls))
        rows.append(f"| `{topic}` | {fields} | {(cls.__doc__ or '').strip()} |")
    rows += ["", "Alert kinds: " + ", ".join(f"`{k.value}`" for k in AlertKind) + "."]
    return "\n".join(rows)


def of(topic: str, payload: Event | dict) -> Event:
    """The event itself, or one built from a payload dict (pure helpers accept both); a dict
    that does not fit the topic's declaration raises TypeError or ValueError."""
    if isinstance(payload, Event):
        return payload
    if topic not in TOPICS:
        raise ValueError(f"no event topic {topic!r} is declared in homework/events.py")
    return TOPICS[topic](**{("class_" if k == "class" else k): v for k, v in payload.items()})
