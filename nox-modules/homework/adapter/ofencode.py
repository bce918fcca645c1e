"""A lean OpenFlow 1.3 encoder for the messages the controller sends most.

Every new device costs about ten flow-mods, and a switch that (re)connects gets ten per
device at once. os-ken builds each as a tree of parser objects and serialises it through
its generic field machinery: about 40 µs a message, half the controller's CPU for a new
device. This module packs the common shapes straight into bytes with `struct`:

- FlowMod (add) and FlowDelete whose match holds OpenFlow-basic fields, plain or masked;
- PacketOut;
- the actions Output, SetField (of a basic field, or of a register reg0..reg15: a pending
  device's gateway flow sets one), DecTTL, PushVlan, PopVlan, Nicira's resubmit and learn
  (NXAST_LEARN2, as adapter/nx.py builds it: a permitted device's accounting flows, which
  were a third of the controller's CPU for a permit), and the goto-table and meter
  instructions.

Anything else (a Nicira field such as reg0 or tcp_flags_nxm in a match, the move and
output-register actions, stats and meter requests) returns None and takes os-ken's
path, which stays the reference:
the unit tests require both paths to give the same bytes for every decision the pipeline
makes. Framework-free, so it is tested without a switch.
"""
from __future__ import annotations

import socket
import struct

from .. import flows as F

OFP_VERSION = 4
OFPT_PACKET_OUT = 13
OFPT_FLOW_MOD = 14
OFPFC_ADD, OFPFC_DELETE, OFPFC_DELETE_STRICT = 0, 3, 4
OFPFF_SEND_FLOW_REM = 1
OFP_NO_BUFFER = 0xFFFFFFFF
OFPG_ANY = 0xFFFFFFFF
OFPMT_OXM = 1
OFPIT_GOTO_TABLE, OFPIT_APPLY_ACTIONS, OFPIT_METER = 1, 4, 6
OFPAT_OUTPUT, OFPAT_PUSH_VLAN, OFPAT_POP_VLAN, OFPAT_DEC_NW_TTL, OFPAT_SET_FIELD = 0, 17, 18, 24, 25
OXM_CLASS_BASIC = 0x8000
OFPAT_EXPERIMENTER = 0xFFFF
NX_VENDOR = 0x00002320
NXAST_RESUBMIT_TABLE = 14
OFPP_IN_PORT = 0xFFF8
NXAST_LEARN2 = 45
NX_LEARN_F_SEND_FLOW_REM = 1
# learn's fields (adapter/nx.py's NXM_FIELDS): match-dict name -> (NXM header, width in bits)
NXM_HEADERS = {
    "in_port": (0x00002, 16), "eth_src": (0x00406, 48), "eth_dst": (0x00206, 48), "eth_type": (0x00602, 16),
    "ip_proto": (0x00c01, 8), "ipv4_src": (0x00e04, 32), "ipv4_dst": (0x01004, 32),
    "ipv6_src": (0x12610, 128), "ipv6_dst": (0x12810, 128), "tcp_src": (0x01202, 16), "tcp_dst": (0x01402, 16),
    "udp_src": (0x01602, 16), "udp_dst": (0x01802, 16), "icmpv4_type": (0x01a01, 8), "icmpv4_code": (0x01c01, 8),
}

_HEADER = struct.Struct("!BBHI")
_FLOW_MOD = struct.Struct("!QQBBHHHIIIH2x")          # after the header: 48 bytes in all
_PACKET_OUT = struct.Struct("!IIH6x")                # after the header: 24 bytes in all
_OUTPUT = struct.Struct("!HHIH6x")
# nx_action_learn2 up to its specs: experimenter header, subtype, then idle and hard
# timeouts, priority, cookie, flags, table, pad, fin idle and hard timeouts, limit (0:
# none), result_dst_ofs (0) and pad
_LEARN2 = struct.Struct("!HHIHHHHQHBxHHIH2x")

# OpenFlow-basic OXM fields: name -> (field number, value width in bytes, kind).
_INT, _MAC, _IPV4, _IPV6 = range(4)
OXM_FIELDS = {
    "in_port": (0, 4, _INT), "in_phy_port": (1, 4, _INT), "metadata": (2, 8, _INT),
    "eth_dst": (3, 6, _MAC), "eth_src": (4, 6, _MAC), "eth_type": (5, 2, _INT),
    "vlan_vid": (6, 2, _INT), "vlan_pcp": (7, 1, _INT), "ip_dscp": (8, 1, _INT), "ip_ecn": (9, 1, _INT),
    "ip_proto": (10, 1, _INT), "ipv4_src": (11, 4, _IPV4), "ipv4_dst": (12, 4, _IPV4),
    "tcp_src": (13, 2, _INT), "tcp_dst": (14, 2, _INT), "udp_src": (15, 2, _INT), "udp_dst": (16, 2, _INT),
    "sctp_src": (17, 2, _INT), "sctp_dst": (18, 2, _INT), "icmpv4_type": (19, 1, _INT),
    "icmpv4_code": (20, 1, _INT), "arp_op": (21, 2, _INT), "arp_spa": (22, 4, _IPV4),
    "arp_tpa": (23, 4, _IPV4), "arp_sha": (24, 6, _MAC), "arp_tha": (25, 6, _MAC),
    "ipv6_src": (26, 16, _IPV6), "ipv6_dst": (27, 16, _IPV6), "ipv6_flabel": (28, 4, _INT),
    "icmpv6_type": (29, 1, _INT), "icmpv6_code": (30, 1, _INT), "ipv6_nd_target": (31, 16, _IPV6),
    "ipv6_nd_sll": (32, 6, _MAC), "ipv6_nd_tll": (33, 6, _MAC),
}


class NotLean(Exception):
    """The decision has a part this encoder does not pack: os-ken's path takes it."""


def _value(kind: int, width: int, value) -> bytes:
    if kind == _INT:
        if not isinstance(value, int) or isinstance(value, bool):
            raise NotLean
        return value.to_bytes(width, "big")
    if not isinstance(value, str):
        raise NotLean
    if kind == _MAC:
        raw = bytes.fromhex(value.replace(":", "").replace("-", ""))
        if len(raw) != 6:
            raise NotLean
        return raw
    try:
        return socket.inet_pton(socket.AF_INET if kind == _IPV4 else socket.AF_INET6, value)
    except OSError:
        raise NotLean from None


_OXM_CACHE: dict = {}
_OXM_CACHE_MAX = 16384


def _oxm(name: str, value) -> tuple[int, bytes]:
    """(field number, the TLV) of one basic field, remembered: a new device's dozen flows
    repeat its MAC, port and address and everyone's eth_type and ip_proto."""
    kind = type(value)
    if kind is not int and kind is not str:     # masked pairs (rarer), and bools (never lean)
        return _oxm_uncached(name, value)
    key = (name, value)
    found = _OXM_CACHE.get(key)
    if found is not None:
        return found
    found = _oxm_uncached(name, value)
    if len(_OXM_CACHE) >= _OXM_CACHE_MAX:
        _OXM_CACHE.clear()
    _OXM_CACHE[key] = found
    return found


def _oxm_uncached(name: str, value) -> tuple[int, bytes]:
    """(field number, the TLV) of one basic field: a plain value, or (value, mask), whose
    value goes out masked (as os-ken normalises it: OpenFlow wants no bits outside the mask)."""
    spec = OXM_FIELDS.get(name)
    if spec is None:
        raise NotLean
    number, width, kind = spec
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise NotLean
        raw, mask = (_value(kind, width, v) for v in value)
        header = (OXM_CLASS_BASIC << 16) | (number << 9) | (1 << 8) | (2 * width)
        masked = (int.from_bytes(raw, "big") & int.from_bytes(mask, "big")).to_bytes(width, "big")
        return number, header.to_bytes(4, "big") + masked + mask
    header = (OXM_CLASS_BASIC << 16) | (number << 9) | width
    return number, header.to_bytes(4, "big") + _value(kind, width, value)


# Open vSwitch's registers as OXM fields (class NXM_1, field n, 4 bytes): set-field only.
OXM_CLASS_NXM1 = 0x0001
REGISTERS = {f"reg{n}": n for n in range(16)}


def _set_field_tlv(name: str, value) -> bytes:
    number = REGISTERS.get(name)
    if number is None:
        return _oxm(name, value)[1]
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 32:
        raise NotLean
    return ((OXM_CLASS_NXM1 << 16) | (number << 9) | 4).to_bytes(4, "big") + value.to_bytes(4, "big")


def _pad8(data: bytes) -> bytes:
    return data + bytes(-len(data) % 8)


def match_bytes(match: dict) -> bytes:
    """ofp_match with its OXM fields in field-number order, padded to 8 bytes (the order
    the os-ken adapter gives plain-valued basic fields too)."""
    fields = b"".join(tlv for _, tlv in sorted(_oxm(k, v) for k, v in match.items()))
    return _pad8(struct.pack("!HH", OFPMT_OXM, 4 + len(fields)) + fields)


def _action(action) -> bytes:
    kind = type(action)
    if kind is F.Output:
        return _OUTPUT.pack(OFPAT_OUTPUT, 16, action.port, action.max_len)
    if kind is F.SetField:
        if isinstance(action.value, (tuple, list)):     # OpenFlow 1.3 sets whole fields only
            raise NotLean
        tlv = _set_field_tlv(action.field, action.value)
        body = _pad8(struct.pack("!HH", OFPAT_SET_FIELD, 0) + tlv)
        return struct.pack("!HH", OFPAT_SET_FIELD, len(body)) + body[4:]
    if kind is F.DecTTL:
        return struct.pack("!HH4x", OFPAT_DEC_NW_TTL, 8)
    if kind is F.PushVlan:
        return struct.pack("!HHH2x", OFPAT_PUSH_VLAN, 8, action.ethertype)
    if kind is F.PopVlan:
        return struct.pack("!HH4x", OFPAT_POP_VLAN, 8)
    if kind is F.Resubmit:          # Nicira's resubmit-to-table, from the packet's own in_port
        return struct.pack("!HHIHHB3x", OFPAT_EXPERIMENTER, 16, NX_VENDOR, NXAST_RESUBMIT_TABLE, OFPP_IN_PORT,
                           action.table_id)
    if kind is F.Learn:
        return _learn(action)
    raise NotLean


def _learn(learn: F.Learn) -> bytes:
    """NXAST_LEARN2 with one match spec a field: the packet's own value (a subfield from
    bit 0) or a literal (immediate, in whole 16-bit words)."""
    specs = b""
    for name, value in learn.fields:
        if name not in NXM_HEADERS:
            raise NotLean
        header, bits = NXM_HEADERS[name]
        if value is None:
            specs += struct.pack("!HIH", bits, header, 0)
        else:
            specs += struct.pack("!H", (1 << 13) | bits) + int(value).to_bytes((bits + 15) // 16 * 2, "big")
        specs += struct.pack("!IH", header, 0)
    length = _LEARN2.size + len(specs)
    padded = length + (-length % 8)
    flags = NX_LEARN_F_SEND_FLOW_REM if learn.send_flow_removed else 0
    return _LEARN2.pack(OFPAT_EXPERIMENTER, padded, NX_VENDOR, NXAST_LEARN2, learn.idle_timeout, learn.hard_timeout,
                        learn.priority, learn.cookie, flags, learn.table_id, learn.fin_idle_timeout, 0, 0,
                        0) + specs + bytes(padded - length)


def _actions(actions) -> bytes:
    return b"".join(_action(a) for a in actions)


def _flow_mod(xid: int, body: bytes) -> bytes:
    return _HEADER.pack(OFP_VERSION, OFPT_FLOW_MOD, 8 + len(body), xid) + body


def encode(decision, xid: int) -> bytes | None:
    """The message's bytes, or None if os-ken must build it."""
    try:
        kind = type(decision)
        if kind is F.FlowMod:
            return _flow_add(decision, xid)
        if kind is F.FlowDelete:
            return _flow_delete(decision, xid)
        if kind is F.PacketOut:
            actions = _actions(decision.actions)
            body = _PACKET_OUT.pack(OFP_NO_BUFFER, decision.in_port, len(actions)) + actions + decision.data
            return _HEADER.pack(OFP_VERSION, OFPT_PACKET_OUT, 8 + len(body), xid) + body
    except (NotLean, ValueError, OverflowError):
        return None
    return None


def _flow_add(d: F.FlowMod, xid: int) -> bytes:
    instructions = b""
    if d.meter is not None:         # OpenFlow 1.3 runs the meter before the actions
        instructions += struct.pack("!HHI", OFPIT_METER, 8, d.meter)
    if d.actions:
        actions = _actions(d.actions)
        instructions += struct.pack("!HH4x", OFPIT_APPLY_ACTIONS, 8 + len(actions)) + actions
    if d.goto is not None:
        instructions += struct.pack("!HHB3x", OFPIT_GOTO_TABLE, 8, d.goto)
    flags = OFPFF_SEND_FLOW_REM if d.send_flow_removed else 0
    head = _FLOW_MOD.pack(d.cookie, 0, d.table_id, OFPFC_ADD, d.idle_timeout, d.hard_timeout, d.priority,
                          OFP_NO_BUFFER, 0, 0, flags)
    return _flow_mod(xid, head + match_bytes(d.match) + instructions)


def _flow_delete(d: F.FlowDelete, xid: int) -> bytes:
    command = OFPFC_DELETE_STRICT if d.strict else OFPFC_DELETE
    head = _FLOW_MOD.pack(d.cookie, d.cookie_mask, d.table_id, command, 0, 0, d.priority,
                          OFP_NO_BUFFER, d.out_port, OFPG_ANY, 0)
    return _flow_mod(xid, head + match_bytes(d.match))
