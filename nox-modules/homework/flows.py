"""Framework-neutral OpenFlow 1.3 decisions. Components return these; the os-ken adapter
turns them into messages, and unit tests apply them to a fake flow table (as Faucet does).

Match fields use the OpenFlow 1.3 OXM names (in_port, eth_src, eth_type, ipv4_src, ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Reserved port numbers (OpenFlow 1.3).
CONTROLLER = 0xFFFFFFFD
LOCAL = 0xFFFFFFFE
ANY = 0xFFFFFFFF

ETH_IP = 0x0800
ETH_ARP = 0x0806
ETH_IPV6 = 0x86DD
ETH_EAPOL = 0x888E
PROTO_ICMP = 1
PROTO_IGMP = 2
PROTO_TCP = 6
PROTO_UDP = 17
PROTO_ICMPV6 = 58

# Tables, priorities and cookie owners: pipeline.py.


@dataclass(frozen=True)
class Output:
    port: int
    max_len: int = 0xFFFF


@dataclass(frozen=True)
class SetField:
    field: str
    value: object


@dataclass(frozen=True)
class DecTTL:
    pass


@dataclass(frozen=True)
class PushVlan:
    """Push an 802.1Q header (then SetField vlan_vid gives it its id)."""
    ethertype: int = 0x8100


@dataclass(frozen=True)
class PopVlan:
    pass


@dataclass(frozen=True)
class Resubmit:
    """Open vSwitch extension: run the packet through `table_id` now and come back to the
    remaining actions (lets one flow both count in an accounting table and forward)."""
    table_id: int


@dataclass(frozen=True)
class Move:
    """Open vSwitch extension (NXAST_REG_MOVE): copy `n_bits` bits of field `src` (from
    bit `src_ofs`) into field `dst` (from bit `dst_ofs`). Field names as in match dicts,
    plus reg0..reg15 and in_port_nxm (the 16-bit port number)."""
    src: str
    dst: str
    n_bits: int
    src_ofs: int = 0
    dst_ofs: int = 0


@dataclass(frozen=True)
class OutputReg:
    """Open vSwitch extension (NXAST_OUTPUT_REG): output to the port number held in bits
    `ofs`..`ofs + n_bits - 1` of field `src` (e.g. a port a Move put in reg0)."""
    src: str
    n_bits: int = 16
    ofs: int = 0
    max_len: int = 0xFFFF


@dataclass(frozen=True)
class Learn:
    """Open vSwitch extension: add an exact-match flow to `table_id` from the packet being
    processed, without a round trip to the controller.

    `fields`: ((name, None) copies the packet's value | (name, value) a literal), using the
    OXM names of match dicts (eth_type, ip_proto, ipv4_src, tcp_dst, ...)."""
    table_id: int
    fields: tuple
    priority: int = 100
    idle_timeout: int = 0
    hard_timeout: int = 0
    fin_idle_timeout: int = 0
    cookie: int = 0
    send_flow_removed: bool = False


@dataclass
class FlowMod:
    """Add (or overwrite) a flow."""
    match: dict
    actions: tuple = ()          # empty tuple = drop
    priority: int = 100
    table_id: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0
    cookie: int = 0
    send_flow_removed: bool = False
    goto: int | None = None       # goto-table instruction after the actions
    meter: int | None = None      # meter instruction: the packet goes through this meter first


@dataclass
class FlowDelete:
    """Delete flows matching `match` (non-strict) owned by `cookie` under `cookie_mask`.
    With `strict` and `priority`, only the exactly matching flow."""
    match: dict = field(default_factory=dict)
    cookie: int = 0
    cookie_mask: int = 0
    table_id: int = 0xFF         # all tables
    strict: bool = False
    priority: int = 0
    out_port: int = ANY


@dataclass
class PacketOut:
    data: bytes
    actions: tuple
    in_port: int = CONTROLLER


@dataclass
class FlowStatsRequest:
    match: dict = field(default_factory=dict)
    cookie: int = 0
    cookie_mask: int = 0
    table_id: int = 0xFF


@dataclass
class AggregateStatsRequest:
    """How many flows (and packets, bytes) match; answered by an AggregateStats event
    that carries this request back."""
    match: dict = field(default_factory=dict)
    cookie: int = 0
    cookie_mask: int = 0
    table_id: int = 0xFF


@dataclass
class MeterMod:
    """Add, change or delete an OpenFlow 1.3 meter with one drop band: packets above
    `rate_kbps` (kbit/s) are dropped. A FlowMod with `meter` sends its packets through it.
    Deleting a meter also removes the flows that use it (OpenFlow 1.3, as OVS does)."""
    meter_id: int
    command: str = "add"          # add | modify | delete
    rate_kbps: int = 0
    burst_kbits: int = 0          # 0: the switch's default burst
    rate_pps: int = 0             # instead of rate_kbps: packets per second (burst in packets)


Decision = FlowMod | FlowDelete | PacketOut | FlowStatsRequest | AggregateStatsRequest | MeterMod


@dataclass
class PacketIn:
    """A packet the switch sent us, already freed of framework types."""
    in_port: int
    data: bytes
    reason: str = "no_match"     # no_match | action | invalid_ttl
    table_id: int = 0
    cookie: int = 0
    buffer_id: int = 0xFFFFFFFF


@dataclass
class FlowRemoved:
    match: dict
    cookie: int
    priority: int
    reason: str                  # idle_timeout | hard_timeout | delete | group_delete
    duration_sec: int
    packet_count: int
    byte_count: int
    table_id: int = 0


@dataclass
class FlowStats:
    match: dict
    cookie: int
    priority: int
    duration_sec: int
    packet_count: int
    byte_count: int
    table_id: int = 0
    idle_timeout: int = 0


@dataclass
class AggregateStats:
    request: AggregateStatsRequest
    packet_count: int
    byte_count: int
    flow_count: int


@dataclass
class Datapath:
    """What components know about the connected switch."""
    dpid: int
    ports: dict = field(default_factory=dict)   # port name -> port number

    def port_name(self, port_no: int) -> str | None:
        """The name of the port with this number, None if the switch has none."""
        return next((name for name, no in self.ports.items() if no == port_no), None)
