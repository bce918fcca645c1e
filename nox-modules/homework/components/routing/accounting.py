"""Per-flow and per-device accounting from the switch's learned flow entries.

Every report is a delta: a flow record carries the packets and bytes since the last
report of that flow (from periodic flow-stats polling of long-lived flows, and a final
one from the flow-removed message), so summing a flow's rows gives its total. Records
are published together, one `flows` event for what one poll, one reply or one second of
endings found: a busy router makes thousands a second, and each event costs every
subscriber a call (the bus, hwdb's rows, metrics). Per-device
byte totals (`bandwidth`) are published once per polling interval for each device that
moved bytes in it, with `up` (bytes of entries whose source is the device) and `down`
(the rest) that sum to `bytes`, and `seconds`, the interval's length; a device that
stops gets one event of zero bytes, then none until it moves bytes again. An idle
household therefore publishes nothing (the consumers, usage, hwdb, metrics, MQTT and the
board, each took a per-device event every interval before).

After a controller restart the switch still holds learned flows whose earlier traffic
the previous process already reported: the first poll after the switch connects only
sets the baseline (traffic since the previous process's last poll is not reported).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from ...flows import FlowRemoved, FlowStats
from ...events import Bandwidth, FlowRecord, Flows
from ... import pipeline as L

PORT_FIELDS = {6: ("tcp_src", "tcp_dst"), 17: ("udp_src", "udp_dst")}


def flow_key(match: dict) -> tuple[int, str, int, str, int]:
    """(proto, saddr, sport, daddr, dport) of a learned flow's match."""
    proto = int(match.get("ip_proto", 0) or 0)
    sport_f, dport_f = PORT_FIELDS.get(proto, (None, None))
    return (proto, _address(match, "src"), int(match.get(sport_f, 0) or 0) if sport_f else 0,
            _address(match, "dst"), int(match.get(dport_f, 0) or 0) if dport_f else 0)


def _address(match: dict, side: str) -> str:
    """The entry's source or destination address, IPv4 or IPv6 (a masked one, as in the
    per-host entries of a /64: its network address)."""
    value = match.get(f"ipv4_{side}") or match.get(f"ipv6_{side}") or ""
    return str(value[0] if isinstance(value, (tuple, list)) else value)


def _entry_key(cookie: int, priority: int, match: dict) -> tuple:
    return (cookie, priority, tuple(sorted((k, str(v)) for k, v in match.items())))


class Accounting:
    def __init__(self, publish: Callable[..., None], device_for_index: Callable[[int], tuple | None],
                 count: Callable[..., None] = lambda name, n=1: None,
                 owns: Callable[[int, str], bool] = lambda index, address: False):
        """`device_for_index(block index) -> (mac, ip) | None`; `count`: the counter registry;
        `owns(index, address)`: is this one of the device's IPv6 addresses (its /64)?"""
        self.publish = publish
        self.device_for_index = device_for_index
        self.owns = owns
        self.count = count
        self._reported: dict[tuple, tuple[int, int]] = {}   # entry -> (packets, bytes) reported
        # block index -> the learned entries the switch holds for it (seen in a dump, not
        # yet removed): the flow limit is checked against these, with no request per device
        self._learned: dict[int, set[tuple]] = {}
        self._bytes: dict[int, int] = defaultdict(int)       # block index -> bytes this interval
        # (block index, ipv4_src of the entry) -> bytes this interval: the up/down split is
        # made at the interval's end, when the device's address is looked up once
        self._by_src: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # index -> source -> bytes
        self._records: list[FlowRecord] = []        # not yet published
        self._macs: dict[int, str | None] = {}      # block index -> its device, for the records of one batch
        self._moving: set[int] = set()      # devices whose entries grew since the last take_moving()
        self._was_moving: set[int] = set()  # devices that had bytes in the last published interval
        self.priming = False

    def start_priming(self) -> None:
        self.priming = True

    # -- input ---------------------------------------------------------------------
    def flow_stats(self, entries: list[FlowStats]) -> None:
        for s in entries:
            if s.table_id != L.TABLE_ACCOUNT or not L.is_routing(s.cookie):
                continue
            index = L.device_of(s.cookie)
            kind = L.kind_of(s.cookie)
            if index is None or kind not in (L.KIND_LEARNED, L.KIND_ACCOUNT):
                continue
            key = _entry_key(s.cookie, s.priority, s.match)
            if kind == L.KIND_LEARNED:
                self._learned.setdefault(index, set()).add(key)
            dp, db = self._delta(key, s.packet_count, s.byte_count)
            if self.priming or (dp == 0 and db == 0):
                continue
            self._moving.add(index)
            self._bytes[index] += db
            self._by_src[index][_address(s.match, "src")] += db
            if kind == L.KIND_LEARNED:
                self._flow_event(index, s.match, dp, db)

    def flow_removed(self, ev: FlowRemoved) -> None:
        if ev.table_id != L.TABLE_ACCOUNT or not L.is_routing(ev.cookie):
            return
        index = L.device_of(ev.cookie)
        if index is None or L.kind_of(ev.cookie) not in (L.KIND_LEARNED, L.KIND_ACCOUNT):
            return
        key = _entry_key(ev.cookie, ev.priority, ev.match)
        live = self._learned.get(index)
        if live is not None:
            live.discard(key)
            if not live:
                del self._learned[index]
        dp, db = self._delta(key, ev.packet_count, ev.byte_count)
        self._reported.pop(key, None)
        self.count("routing.flows_removed")
        if dp == 0 and db == 0:
            return
        self._moving.add(index)
        self._bytes[index] += db
        self._by_src[index][_address(ev.match, "src")] += db
        if L.kind_of(ev.cookie) == L.KIND_LEARNED:
            self._flow_event(index, ev.match, dp, db)

    def end_interval(self, seconds: float) -> None:
        """Publish one `bandwidth` event per device that moved bytes in the interval just
        ended (`seconds` long), and one of zero bytes for each that moved some in the one
        before and none since."""
        self.priming = False
        moved = {index for index, total in self._bytes.items() if total}
        for index in sorted(moved | self._was_moving):
            device = self.device_for_index(index)
            if device is None:
                continue
            mac, ip = device
            total = self._bytes.get(index, 0)
            # Upload: entries whose source is the device (its IPv4 address, or any address
            # of its /64: the per-host entries match the whole /64 and carry no source).
            sources = self._by_src.get(index, {})
            up = min(total, sum(n for src, n in sources.items() if src == str(ip) or self.owns(index, src)))
            self.publish(Bandwidth(mac=mac, ip=ip, bytes=total, up=up, down=total - up,
                                   seconds=round(seconds, 3)))
        self._was_moving = moved
        self._bytes.clear()
        self._by_src.clear()

    def take_moving(self) -> set[int]:
        """The devices whose entries grew since the last call (worth asking about again)."""
        moving, self._moving = self._moving, set()
        return moving

    def learned_counts(self) -> dict[int, int]:
        """Block index -> learned entries it holds, for the devices that hold any."""
        return {index: len(keys) for index, keys in self._learned.items()}

    def forget_learned(self, index: int | None = None) -> None:
        """The device's learned entries were deleted (collapse, deny, new lease); None: the
        switch (re)connected, and flow-removed messages may have been lost meanwhile."""
        if index is None:
            self._learned.clear()
        else:
            self._learned.pop(index, None)

    # -- internals -------------------------------------------------------------------
    def _delta(self, key: tuple, packets: int, nbytes: int) -> tuple[int, int]:
        old_p, old_b = self._reported.get(key, (0, 0))
        if packets < old_p or nbytes < old_b:       # entry replaced under the same match
            old_p, old_b = 0, 0
        self._reported[key] = (packets, nbytes)
        return packets - old_p, nbytes - old_b

    def _flow_event(self, index: int, match: dict, packets: int, nbytes: int) -> None:
        self.record(index, *flow_key(match), packets, nbytes)

    def record(self, index: int, proto: int, saddr: str, sport: int, daddr: str, dport: int,
               packets: int, nbytes: int) -> None:
        """A flow's growth in one direction (from a learned entry, or from conntrack for
        NATed flows), for the device of block `index`: published by publish_flows().
        The device is looked up once per batch."""
        try:
            mac = self._macs[index]
        except KeyError:
            device = self.device_for_index(index)
            mac = self._macs[index] = device[0] if device is not None else None
        if mac is not None:
            self._records.append(FlowRecord(mac, proto, saddr, sport, daddr, dport, packets, nbytes))

    def publish_flows(self) -> int:
        """One `flows` event with the records since the last call (none: nothing is
        published). Returns the records published."""
        self._macs.clear()
        if not self._records:
            return 0
        records, self._records = tuple(self._records), []
        self.count("routing.flows_reported", len(records))
        self.publish(Flows(records=records))
        return len(records)
