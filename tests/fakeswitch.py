"""A fake OpenFlow 1.3 switch for unit tests: keeps a flow table from the decisions the
controller sends, and answers 'what would happen to this packet' by highest-priority match.
Faucet's approach: test the valve logic by feeding packets and checking the flow table."""
from __future__ import annotations

import ipaddress

from homework import flows as F


def _field_matches(field, want, have):
    if have is None:
        return False
    if isinstance(want, tuple):           # (value, mask)
        value, mask = want
        if field.startswith("ipv4") or field.startswith("arp_"):
            # any bit mask, contiguous or not, as OpenFlow allows
            m = int(ipaddress.IPv4Address(mask))
            return int(ipaddress.IPv4Address(have)) & m == int(ipaddress.IPv4Address(value)) & m
        return (int(have) & int(mask)) == (int(value) & int(mask))
    return str(want).lower() == str(have).lower()


class FakeSwitch:
    def __init__(self):
        self.flows: list[F.FlowMod] = []
        self.packet_outs: list[F.PacketOut] = []
        self.stats_requests: list[F.FlowStatsRequest] = []
        self.messages: list = []

    def apply(self, decisions):
        for d in decisions:
            self.messages.append(d)
            if isinstance(d, F.FlowMod):
                self.flows = [f for f in self.flows
                              if not (f.table_id == d.table_id and f.priority == d.priority and f.match == d.match)]
                self.flows.append(d)
            elif isinstance(d, F.FlowDelete):
                self.flows = [f for f in self.flows if not self._deletes(d, f)]
            elif isinstance(d, F.PacketOut):
                self.packet_outs.append(d)
            elif isinstance(d, (F.FlowStatsRequest, F.AggregateStatsRequest)):
                self.stats_requests.append(d)

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
            if flow.goto is None:
                return packet
            table = flow.goto
        return packet

    def _learn(self, a: F.Learn, packet: dict) -> dict:
        match = {name: (packet.get(name) if value is None else value) for name, value in a.fields}
        same_cookie = [f for f in self.flows if f.table_id == a.table_id and f.cookie == a.cookie]
        exists = any(f.match == match and f.priority == a.priority for f in same_cookie)
        added = exists or not a.limit or len(same_cookie) < a.limit
        if added and not exists:
            self.apply([F.FlowMod(match=match, priority=a.priority, table_id=a.table_id,
                                  idle_timeout=a.idle_timeout, cookie=a.cookie,
                                  send_flow_removed=a.send_flow_removed)])
        if a.result_reg is not None:
            reg, bit = a.result_reg
            value = packet.get(reg, 0) or 0
            value = (value | (1 << bit)) if added else (value & ~(1 << bit))
            packet = dict(packet, **{reg: value})
        return packet

    def take_packet_outs(self) -> list[F.PacketOut]:
        out, self.packet_outs = self.packet_outs, []
        return out
