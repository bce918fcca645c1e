"""The adapter's round trip for unit tests: a decision goes through the adapter's message
builder (`adapter.osken_app.to_message`), is serialised to OpenFlow 1.3 bytes, and those
bytes are read back into a decision. The fake switch compares that with what the
component returned, so a field the adapter drops or mangles fails a unit test instead of
surfacing as an OVS error on a real switch.

os-ken parses what a switch sends (flow-mods included) but not packet-outs or stats
requests, and not the NXAST_LEARN2 action: those few layouts are read here with struct,
from the OpenFlow 1.3 spec and OVS's nicira-ext.h."""
from __future__ import annotations

import dataclasses
import struct

from os_ken.ofproto import ofproto_parser as wire
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from homework import flows as F
from homework.adapter import ofencode
from homework.adapter.osken_app import to_message

NX_VENDOR = 0x00002320
NXAST_LEARN2 = 45
NX_LEARN_F_SEND_FLOW_REM = 1 << 0
NX_LEARN_F_WRITE_RESULT = 1 << 2
OFPMP_FLOW = 1
OFPMP_AGGREGATE = 2


class AdapterMismatch(AssertionError):
    """The adapter's message does not say what the decision said."""


class _Datapath:
    """What to_message needs of an os-ken Datapath."""
    id = 1
    ofproto = ofp
    ofproto_parser = parser


DATAPATH = _Datapath()


def encode(decision) -> bytes:
    msg = to_message(DATAPATH, decision)
    msg.set_xid(1)
    msg.serialize()
    return bytes(msg.buf)


def decode(buf: bytes):
    """OpenFlow bytes -> the decision they carry (FlowMod/FlowDelete/PacketOut/stats request)."""
    version, msg_type, msg_len, xid = wire.header(buf)
    if len(buf) != msg_len:
        raise AdapterMismatch(f"message length field {msg_len} but {len(buf)} bytes")
    if msg_type == ofp.OFPT_FLOW_MOD:
        return _flow_mod(parser.OFPFlowMod.parser(DATAPATH, version, msg_type, msg_len, xid, buf))
    if msg_type == ofp.OFPT_PACKET_OUT:
        return _packet_out(buf)
    if msg_type == ofp.OFPT_MULTIPART_REQUEST:
        return _stats_request(buf)
    if msg_type == ofp.OFPT_METER_MOD:
        return _meter_mod(buf)
    raise AdapterMismatch(f"unexpected OpenFlow message type {msg_type}")


def round_trip(decision) -> None:
    """Raise AdapterMismatch unless the decision survives encode -> decode unchanged, and
    the lean encoder (adapter/ofencode.py), where it takes the decision, gives os-ken's bytes."""
    try:
        buf = encode(decision)
        lean = ofencode.encode(decision, 1)
        if lean is not None and lean != buf:
            raise AdapterMismatch(f"{decision!r}: the lean encoder differs from os-ken:\n  os-ken {buf.hex()}\n"
                                  f"  lean   {lean.hex()}")
        back = decode(buf)
    except AdapterMismatch:
        raise
    except Exception as exc:   # the adapter could not build or we could not read it
        raise AdapterMismatch(f"{decision!r}: {type(exc).__name__}: {exc}") from exc
    if canonical(back) != canonical(decision):
        raise AdapterMismatch(f"adapter changed the decision:\n  sent {decision!r}\n  read {back!r}")


# -- canonical forms: the same meaning compares equal (masks applied, names case-folded) --

def _oxm(name, value):
    n, v, m = ofp.oxm_from_user(*ofp.oxm_normalize_user(name, value))
    return n, v, m


def canonical_match(match: dict) -> frozenset:
    return frozenset(_oxm(k, v) for k, v in match.items())


def _canonical_action(action):
    if isinstance(action, F.SetField):
        return ("set_field", _oxm(action.field, action.value))
    if isinstance(action, F.Learn):
        fields = tuple((name, None if value is None else int(value)) for name, value in action.fields)
        return ("learn", dataclasses.replace(action, fields=fields))
    return action


def canonical(decision):
    if isinstance(decision, (F.FlowMod, F.FlowDelete, F.FlowStatsRequest, F.AggregateStatsRequest)):
        values = {f.name: getattr(decision, f.name) for f in dataclasses.fields(decision)}
        values["match"] = canonical_match(decision.match)
        if isinstance(decision, F.FlowMod):
            values["actions"] = tuple(_canonical_action(a) for a in decision.actions)
        return type(decision).__name__, tuple(sorted(values.items(), key=lambda kv: kv[0]))
    if isinstance(decision, F.MeterMod):
        return dataclasses.astuple(decision)
    if isinstance(decision, F.PacketOut):
        return ("PacketOut", bytes(decision.data), decision.in_port,
                tuple(_canonical_action(a) for a in decision.actions))
    raise TypeError(f"unknown decision {decision!r}")


# -- messages back into decisions ------------------------------------------------------

def _match_dict(match) -> dict:
    return dict(match.items())


def _flow_mod(msg):
    match = _match_dict(msg.match)
    if msg.command in (ofp.OFPFC_DELETE, ofp.OFPFC_DELETE_STRICT):
        return F.FlowDelete(match=match, cookie=msg.cookie, cookie_mask=msg.cookie_mask,
                            table_id=msg.table_id, strict=msg.command == ofp.OFPFC_DELETE_STRICT,
                            priority=msg.priority, out_port=msg.out_port)
    if msg.command != ofp.OFPFC_ADD:
        raise AdapterMismatch(f"flow-mod command {msg.command} is neither add nor delete")
    actions, goto, meter = (), None, None
    for inst in msg.instructions:
        if isinstance(inst, parser.OFPInstructionActions) and inst.type == ofp.OFPIT_APPLY_ACTIONS:
            actions = tuple(_action(a) for a in inst.actions)
        elif isinstance(inst, parser.OFPInstructionGotoTable):
            goto = inst.table_id
        elif isinstance(inst, parser.OFPInstructionMeter):
            meter = inst.meter_id
        else:
            raise AdapterMismatch(f"unexpected instruction {inst!r}")
    return F.FlowMod(match=match, actions=actions, priority=msg.priority, table_id=msg.table_id,
                     idle_timeout=msg.idle_timeout, hard_timeout=msg.hard_timeout, cookie=msg.cookie,
                     send_flow_removed=bool(msg.flags & ofp.OFPFF_SEND_FLOW_REM), goto=goto,
                     meter=meter)


def _action(a):
    if isinstance(a, parser.OFPActionOutput):
        return F.Output(a.port, a.max_len)
    if isinstance(a, parser.OFPActionSetField):
        return F.SetField(a.key, a.value)
    if isinstance(a, parser.OFPActionDecNwTtl):
        return F.DecTTL()
    if isinstance(a, parser.NXActionResubmitTable):
        return F.Resubmit(a.table_id)
    if isinstance(a, parser.NXActionRegMove):
        return F.Move(a.src_field, a.dst_field, a.n_bits, a.src_ofs, a.dst_ofs)
    if isinstance(a, parser.NXActionOutputReg):
        ofs, n_bits = a.ofs_nbits >> 6, (a.ofs_nbits & 0x3F) + 1
        return F.OutputReg(a.src, n_bits, ofs, a.max_len)
    if getattr(a, "experimenter", None) == NX_VENDOR and getattr(a, "subtype", None) == NXAST_LEARN2:
        return _learn2(bytes(a.data))
    raise AdapterMismatch(f"unexpected action {a!r}")


_LEARN_HEAD = struct.Struct("!HHHQHBxHH")      # nx_action_learn body after the subtype
_LEARN2_TAIL = struct.Struct("!IH2x")          # limit, result_dst_ofs


def _learn2(body: bytes) -> F.Learn:
    (idle, hard, priority, cookie, flags, table_id, fin_idle, _fin_hard) = _LEARN_HEAD.unpack_from(body)
    off = _LEARN_HEAD.size
    limit, ofs = _LEARN2_TAIL.unpack_from(body, off)
    off += _LEARN2_TAIL.size
    result_reg = None
    if flags & NX_LEARN_F_WRITE_RESULT:
        (header,) = struct.unpack_from("!I", body, off)
        off += 4
        result_reg = (ofp.oxm_to_user_header(header), ofs)
    fields = []
    rest = body[off:]
    while rest and any(rest):
        spec, rest = parser._NXFlowSpec.parse(rest)
        dst_field = spec.dst[0]
        name = _oxm_name_of_nxm(dst_field)
        value = None if isinstance(spec.src, tuple) else int(spec.src)
        fields.append((name, value))
    extra = {}
    names = {f.name for f in dataclasses.fields(F.Learn)}
    if "limit" in names:
        extra["limit"] = limit
    if "result_reg" in names:
        extra["result_reg"] = result_reg
    return F.Learn(table_id=table_id, fields=tuple(fields), priority=priority, idle_timeout=idle,
                   hard_timeout=hard, fin_idle_timeout=fin_idle, cookie=cookie,
                   send_flow_removed=bool(flags & NX_LEARN_F_SEND_FLOW_REM), **extra)


def _oxm_name_of_nxm(nxm: str) -> str:
    from homework.adapter.nx import NXM_FIELDS
    for name, (field, _bits) in NXM_FIELDS.items():
        if field == nxm:
            return name
    raise AdapterMismatch(f"learn spec writes {nxm!r}, which the adapter never uses")


def _actions_from(buf: bytes, offset: int, length: int) -> tuple:
    actions = []
    end = offset + length
    while offset < end:
        a = parser.OFPAction.parser(buf, offset)
        actions.append(_action(a))
        offset += a.len
    return tuple(actions)


def _packet_out(buf: bytes) -> F.PacketOut:
    buffer_id, in_port, actions_len = struct.unpack_from("!IIH6x", buf, ofp.OFP_HEADER_SIZE)
    if buffer_id != ofp.OFP_NO_BUFFER:
        raise AdapterMismatch(f"packet-out refers to switch buffer {buffer_id}")
    start = ofp.OFP_HEADER_SIZE + 16
    actions = _actions_from(buf, start, actions_len)
    return F.PacketOut(data=buf[start + actions_len:], actions=actions, in_port=in_port)


def _stats_request(buf: bytes):
    off = ofp.OFP_HEADER_SIZE
    mp_type, _flags = struct.unpack_from("!HH4x", buf, off)
    off += 8
    table_id, out_port, out_group, cookie, cookie_mask = struct.unpack_from("!B3xII4xQQ", buf, off)
    off += 32
    match = parser.OFPMatch.parser(buf, off)
    if out_port != ofp.OFPP_ANY or out_group != ofp.OFPG_ANY:
        raise AdapterMismatch(f"stats request filters on port {out_port} / group {out_group}")
    kind = {OFPMP_FLOW: F.FlowStatsRequest, OFPMP_AGGREGATE: F.AggregateStatsRequest}.get(mp_type)
    if kind is None:
        raise AdapterMismatch(f"unexpected multipart request type {mp_type}")
    return kind(match=_match_dict(match), cookie=cookie, cookie_mask=cookie_mask, table_id=table_id)


_METER_MOD = struct.Struct("!HHI")               # command, flags, meter_id
_METER_BAND = struct.Struct("!HHII4x")           # type, len, rate, burst_size (drop band)
_METER_COMMANDS = {ofp.OFPMC_ADD: "add", ofp.OFPMC_MODIFY: "modify", ofp.OFPMC_DELETE: "delete"}


def _meter_mod(buf: bytes) -> F.MeterMod:
    command, flags, meter_id = _METER_MOD.unpack_from(buf, ofp.OFP_HEADER_SIZE)
    if command not in _METER_COMMANDS:
        raise AdapterMismatch(f"meter-mod command {command}")
    bands = []
    off = ofp.OFP_HEADER_SIZE + _METER_MOD.size
    while off < len(buf):
        band_type, length, rate, burst = _METER_BAND.unpack_from(buf, off)
        if band_type != ofp.OFPMBT_DROP or length != _METER_BAND.size:
            raise AdapterMismatch(f"meter band type {band_type} length {length}: only drop bands are used")
        bands.append((rate, burst))
        off += length
    if command == ofp.OFPMC_DELETE:
        if bands:
            raise AdapterMismatch("a meter delete carries bands")
        return F.MeterMod(meter_id, "delete")
    kbps, pps = bool(flags & ofp.OFPMF_KBPS), bool(flags & ofp.OFPMF_PKTPS)
    if len(bands) != 1 or kbps == pps:
        raise AdapterMismatch(f"meter {meter_id}: {len(bands)} bands, flags {flags:#x} "
                              "(want one kbps or pktps drop band)")
    rate, burst = bands[0]
    if bool(flags & ofp.OFPMF_BURST) != bool(burst):
        raise AdapterMismatch(f"meter {meter_id}: burst {burst} but flags {flags:#x}")
    if pps:
        return F.MeterMod(meter_id, _METER_COMMANDS[command], burst_kbits=burst, rate_pps=rate)
    return F.MeterMod(meter_id, _METER_COMMANDS[command], rate_kbps=rate, burst_kbits=burst)
