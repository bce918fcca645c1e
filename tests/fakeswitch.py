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
            net = ipaddress.IPv4Network(f"{value}/{mask}", strict=False)
            return ipaddress.IPv4Address(have) in net
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
            elif isinstance(d, F.FlowStatsRequest):
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
        """Ports a packet would leave by (following goto-table), [] if dropped."""
        table, ports = 0, []
        for _ in range(8):
            flow = self.lookup(packet, table)
            if flow is None:
                return ports
            for a in flow.actions:
                if isinstance(a, F.Output):
                    ports.append(a.port)
                elif isinstance(a, F.SetField):
                    packet = dict(packet, **{a.field: a.value})
            if flow.goto is None:
                return ports
            table = flow.goto
        return ports

    def take_packet_outs(self) -> list[F.PacketOut]:
        out, self.packet_outs = self.packet_outs, []
        return out
