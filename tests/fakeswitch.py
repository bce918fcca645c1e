"""A fake OpenFlow 1.3 switch for unit tests: keeps a flow table from the decisions the
controller sends, and answers 'what would happen to this packet' by highest-priority match.
Faucet's approach: test the valve logic by feeding packets and checking the flow table.

It is strict, as Faucet's fake table is, because a real switch would not tell us:
- a flow added at the same priority, in the same table, as an existing flow whose match
  overlaps it (some packet matches both) but differs raises `OverlapError`, unless both
  do the same thing (same actions and goto): OVS would pick either one for the packets
  in the overlap. Adding a flow with exactly the same match and priority replaces it.
- a decision or action of a type the adapter does not know raises `TypeError`.
- meters are kept as OVS keeps them: adding one that exists, or a flow that uses one
  that does not, raises `MeterError`; deleting a meter removes the flows that use it.
  Registers (reg0..reg15) of a packet start at 0, as in OVS.

With `adapter=True` each decision is also run through the os-ken adapter's message
builder and read back from the bytes (tests/ofwire.py), so the unit tests cover it."""
from __future__ import annotations

import ipaddress

from homework import flows as F

KNOWN_ACTIONS = (F.Output, F.SetField, F.DecTTL, F.Resubmit, F.Learn, F.Move, F.OutputReg)


class OverlapError(AssertionError):
    """Two flows at one priority in one table claim the same packets and differ."""


class MeterError(AssertionError):
    """A meter added twice, or a flow using a meter the switch does not have."""


def _field_matches(field, want, have):
    if have is None and field.startswith("reg"):
        have = 0                          # registers start at 0 for every packet
    if have is None:
        return False
    if isinstance(want, tuple):           # (value, mask)
        value, mask = want
        if field.startswith("ipv6"):
            m = int(ipaddress.IPv6Address(mask))
            return int(ipaddress.IPv6Address(have)) & m == int(ipaddress.IPv6Address(value)) & m
        if field.startswith("ipv4") or field.startswith("arp_"):
            # any bit mask, contiguous or not, as OpenFlow allows
            m = int(ipaddress.IPv4Address(mask))
            return int(ipaddress.IPv4Address(have)) & m == int(ipaddress.IPv4Address(value)) & m
        if field in ("eth_src", "eth_dst"):   # a MAC prefix (the DHCP fast path's marker)
            return _as_int(have) & _as_int(mask) == _as_int(value) & _as_int(mask)
        return (int(have) & int(mask)) == (int(value) & int(mask))
    if field.startswith("ipv6"):
        return ipaddress.IPv6Address(want) == ipaddress.IPv6Address(have)
    return str(want).lower() == str(have).lower()


def _as_int(value) -> int:
    """A match value as a number: MACs ('02:00:..'), IPv4 addresses and integers."""
    if isinstance(value, str):
        if "::" in value or value.count(":") == 7:   # IPv6 (a MAC has five colons)
            return int(ipaddress.IPv6Address(value))
        if ":" in value:
            return int(value.replace(":", "").replace("-", ""), 16)
        return int(ipaddress.IPv4Address(value))
    return int(value)


def _value_mask(value) -> tuple[int, int]:
    if isinstance(value, (tuple, list)):
        return _as_int(value[0]), _as_int(value[1])
    return _as_int(value), -1             # exact: every bit counts


def matches_overlap(a: dict, b: dict) -> bool:
    """Whether some packet matches both: every field both constrain agrees on the bits
    both masks care about (a field only one of them names is no constraint)."""
    for name in a.keys() & b.keys():
        va, ma = _value_mask(a[name])
        vb, mb = _value_mask(b[name])
        common = ma & mb
        if va & common != vb & common:
            return False
    return True




# Field widths for Move: a MAC's bits are counted from its last byte, as OVS does.
_WIDTHS = {"eth_src": 48, "eth_dst": 48, "in_port_nxm": 16, "in_port": 32}


def _move(a: F.Move, packet: dict) -> dict:
    """NXAST_REG_MOVE on a packet dict (MACs as 'aa:bb:..', everything else a number)."""
    src_name = "in_port" if a.src == "in_port_nxm" else a.src
    bits = (_as_int(packet.get(src_name, 0)) >> a.src_ofs) & ((1 << a.n_bits) - 1)
    mask = ((1 << a.n_bits) - 1) << a.dst_ofs
    value = (_as_int(packet.get(a.dst, 0)) & ~mask) | (bits << a.dst_ofs)
    if _WIDTHS.get(a.dst) == 48:
        raw = value.to_bytes(6, "big")
        return dict(packet, **{a.dst: ":".join(f"{b:02x}" for b in raw)})
    return dict(packet, **{a.dst: value})


def _check_actions(actions) -> None:
    for a in actions:
        if not isinstance(a, KNOWN_ACTIONS):
            raise TypeError(f"unknown action {a!r}")
        if isinstance(a, F.Learn):
            _check_learn(a)


def _check_learn(a: F.Learn) -> None:
    """OVS refuses (OFPBAC_MATCH_INCONSISTENT) a learn whose port fields' protocol is not
    a literal: it cannot prove the learned match's prerequisites."""
    fields = dict(a.fields)
    if any(name.startswith(("tcp_", "udp_")) for name in fields) and fields.get("ip_proto") is None:
        raise ValueError(f"learn copies ports but not a literal ip_proto: {a!r}")


class FakeSwitch:
    def __init__(self, adapter: bool = False):
        self.flows: list[F.FlowMod] = []
        self.packet_outs: list[F.PacketOut] = []
        self.stats_requests: list[F.FlowStatsRequest] = []
        self.messages: list = []
        self.meters: dict[int, F.MeterMod] = {}
        self.last_meters: list[int] = []
        self.adapter = adapter
        if adapter:
            import ofwire        # imports os-ken: only when asked for
            self._round_trip = ofwire.round_trip

    def apply(self, decisions):
        for d in decisions:
            if not isinstance(d, (F.FlowMod, F.FlowDelete, F.PacketOut, F.FlowStatsRequest,
                                  F.AggregateStatsRequest, F.MeterMod)):
                raise TypeError(f"unknown decision {d!r}")
            if isinstance(d, (F.FlowMod, F.PacketOut)):
                _check_actions(d.actions)
            if self.adapter:
                self._round_trip(d)
            self.messages.append(d)
            if isinstance(d, F.MeterMod):
                self._meter(d)
            elif isinstance(d, F.FlowMod):
                self._add(d)
            elif isinstance(d, F.FlowDelete):
                self.flows = [f for f in self.flows if not self._deletes(d, f)]
            elif isinstance(d, F.PacketOut):
                self.packet_outs.append(d)
            else:
                self.stats_requests.append(d)

    def _meter(self, d: F.MeterMod) -> None:
        if d.command == "delete":
            self.meters.pop(d.meter_id, None)
            self.flows = [f for f in self.flows if f.meter != d.meter_id]
            return
        if (d.rate_kbps <= 0) == (d.rate_pps <= 0):
            raise MeterError(f"meter {d.meter_id}: give one rate, kbit/s or packets/s ({d.rate_kbps}, {d.rate_pps})")
        if (d.command == "add") == (d.meter_id in self.meters):
            raise MeterError(f"meter {d.meter_id}: {d.command} but it {'exists' if d.command == 'add' else 'does not'}")
        self.meters[d.meter_id] = d

    def _add(self, d: F.FlowMod) -> None:
        if d.meter is not None and d.meter not in self.meters:
            raise MeterError(f"flow uses meter {d.meter}, which the switch does not have: {d!r}")
        kept = []
        for f in self.flows:
            if f.table_id != d.table_id or f.priority != d.priority:
                kept.append(f)
            elif f.match == d.match:
                continue                                  # exact replacement
            elif (matches_overlap(f.match, d.match)
                  and (f.actions, f.goto, f.meter) != (d.actions, d.goto, d.meter)):
                raise OverlapError(f"table {d.table_id} priority {d.priority}: adding {d!r}\n"
                                   f"  overlaps {f!r}")
            else:
                kept.append(f)
        kept.append(d)
        self.flows = kept

    @staticmethod
    def _deletes(d: F.FlowDelete, f: F.FlowMod) -> bool:
        if d.table_id != 0xFF and f.table_id != d.table_id:
            return False
        if (f.cookie & d.cookie_mask) != (d.cookie & d.cookie_mask):
            return False
        if d.strict:
            return f.match == d.match and f.priority == d.priority
        return all(f.match.get(k) == v for k, v in d.match.items())

    def lookup(self, packet: dict, table_id: int = 0) -> F.FlowMod | None:
        """The flow a packet (dict of match fields) hits, or None (table miss)."""
        best = None
        for f in self.flows:
            if f.table_id != table_id:
                continue
            if all(_field_matches(k, v, packet.get(k)) for k, v in f.match.items()):
                if best is None or f.priority > best.priority:
                    best = f
        return best

    def outputs(self, packet: dict) -> list[int]:
        """Ports a packet would leave by (following goto-table and resubmit), [] if dropped.
        Learn actions add flows as the switch would; `self.last_packet` is the packet as it
        left (after set-field), `self.last_hits` the flows it hit."""
        self.last_hits = []
        self.last_meters = []
        ports: list[int] = []
        self.last_packet = self._run(dict(packet), 0, ports, 0)
        return ports

    def _run(self, packet: dict, table: int, ports: list, depth: int) -> dict:
        while depth < 16:
            depth += 1
            flow = self.lookup(packet, table)
            if flow is None:
                return packet
            self.last_hits.append(flow)
            if flow.meter is not None:
                self.last_meters.append(flow.meter)
            for a in flow.actions:
                if isinstance(a, F.Output):
                    ports.append(a.port)
                elif isinstance(a, F.SetField):
                    packet = dict(packet, **{a.field: a.value})
                elif isinstance(a, F.DecTTL):
                    packet = dict(packet, nw_ttl=packet.get("nw_ttl", 64) - 1)
                elif isinstance(a, F.Resubmit):
                    packet = self._run(packet, a.table_id, ports, depth)
                elif isinstance(a, F.Learn):
                    packet = self._learn(a, packet)
                elif isinstance(a, F.Move):
                    packet = _move(a, packet)
                elif isinstance(a, F.OutputReg):
                    ports.append((_as_int(packet.get(a.src, 0)) >> a.ofs) & ((1 << a.n_bits) - 1))
                else:
                    raise TypeError(f"unknown action {a!r}")
            if flow.goto is None:
                return packet
            table = flow.goto
        return packet

    def _learn(self, a: F.Learn, packet: dict) -> dict:
        match = {name: (packet.get(name) if value is None else value) for name, value in a.fields}
        exists = any(f.table_id == a.table_id and f.match == match and f.priority == a.priority
                     for f in self.flows)
        if not exists:
            # Learned by the switch itself: no message crossed the wire, so no round trip.
            learned = F.FlowMod(match=match, priority=a.priority, table_id=a.table_id,
                                idle_timeout=a.idle_timeout, cookie=a.cookie,
                                send_flow_removed=a.send_flow_removed)
            self.messages.append(learned)
            self._add(learned)
        return packet

    def take_packet_outs(self) -> list[F.PacketOut]:
        out, self.packet_outs = self.packet_outs, []
        return out
