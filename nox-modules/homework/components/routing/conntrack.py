"""Per-flow records of the connections that leave through NAT, read from the kernel's
conntrack instead of from a switch entry per connection.

Why: an exact-match entry per connection (OVS `learn`) makes every new connection miss
the switch's flow cache twice (once each way) and change the flow table, which sent
the new-connection rate to a third of a plain OVS NORMAL bridge. Internet traffic
crosses the router's own stack, where conntrack already keeps an entry per connection
(NAT for IPv4, the firewall for IPv6) with its counters (`nf_conntrack_acct`); the
switch then only counts each device per host, one entry each way, and a new connection
costs what it costs under NORMAL. Traffic within the household (device to device,
device to the router's own addresses) keeps its learned entries.

Records: a periodic dump (`conntrack -L`: IPv4 with --src-nat, and IPv6) reports the
counters' growth of every such connection, both directions, as `flow` events like the
learned entries' (the device's own address, not the NAT address, so the rows read the
same); a DESTROY event (`conntrack -E`) reports the last growth when the kernel drops
the entry.
TCP entries stay for 60 s after the close (TIME_WAIT, shortened from the kernel's
120 s: homework/conntrack.py), so the periodic dump sees
the final counters of nearly every connection well before that.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from ...conntrack import CtEntry

T = TypeVar("T")
Record = Callable[[int, int, str, int, str, int, int, int], None]


class ConntrackFlows:
    """Turns conntrack snapshots and endings into per-flow deltas for the device whose
    address opened the connection. Pure: the caller feeds it lines."""

    def __init__(self, index_of: Callable[[str], int | None], record: Record,
                 skip: Callable[[int], bool] = lambda index: False,
                 inside: Callable[[str], bool] = lambda address: False):
        """`index_of(address)`: the device's block index, None if no device has it;
        `record(index, proto, saddr, sport, daddr, dport, packets, bytes)` publishes one
        direction's delta; `skip(index)`: the device is counted per host only;
        `inside(address)`: an address of the household, whose flows the switch learns."""
        self.index_of = index_of
        self.record = record
        self.skip = skip
        self.inside = inside
        self._seen: dict[tuple, CtEntry] = {}   # entry key -> the entry as last reported
        # The dump before: endings are read a moment after the kernel drops an entry (a
        # pipeful at a time), so a dump may already leave out an entry whose ending is
        # yet to come, and that ending reports only what this dump had not.
        self._previous: dict[tuple, CtEntry] = {}
        # Entries whose DESTROY came in since the last snapshot: a dump is read while the
        # events go on, so it may still list an entry already reported as ended; counting
        # it again as new would count its bytes twice.
        self._gone: set[tuple] = set()
        # Devices whose connections grew or ended since take_touched(): the switch's
        # per-host counters of these (and only these) are worth reading.
        self._touched: set[int] = set()
        self.priming = True

    def snapshot(self, entries: Iterable[CtEntry]) -> int:
        """A full dump: report growth since the last one; forget entries that are gone.
        The first dump after a start only sets the baseline. Returns entries seen.

        Most entries of a busy router have not moved since the last dump (a closed
        connection stays a minute in TIME_WAIT): the reader hands back the very entry
        it parsed then, and that costs one look-up here. The devices' addresses are looked
        up once per dump, however many connections each holds."""
        seen: dict[tuple, CtEntry] = {}
        last, gone, priming = self._seen, self._gone, self.priming
        index_of, inside = _memo(self.index_of), _memo(self.inside)
        for e in entries:
            key = e.key
            if key in gone:
                continue
            seen[key] = e
            if priming:
                continue
            before = last.get(key)
            if before is not e:
                self._report(e, before, index_of, inside)
        self._previous = last
        self._seen = seen
        self._gone = set()
        self.priming = False
        return len(seen)

    def ended(self, e: CtEntry) -> None:
        """A DESTROY event: the last growth, then the entry is forgotten. During priming
        an unknown entry's history belongs to the previous process: nothing reported."""
        before = self._seen.pop(e.key, None)
        if before is None:          # its ending was read after a dump that no longer listed it
            before = self._previous.get(e.key)
        self._gone.add(e.key)
        if before is None and self.priming:
            return
        self._report(e, before, self.index_of, self.inside)

    def _report(self, e: CtEntry, last: CtEntry | None, index_of: Callable[[str], int | None],
                inside: Callable[[str], bool]) -> None:
        now = (e.packets, e.bytes, e.reply_packets, e.reply_bytes)
        before = (last.packets, last.bytes, last.reply_packets, last.reply_bytes) if last is not None else (0, 0, 0, 0)
        if now == before:
            return
        if any(n < b for n, b in zip(now, before, strict=True)):     # an id reused for a new connection
            before = (0, 0, 0, 0)
        index = index_of(e.src)
        if index is None or inside(e.dst):
            return
        self._touched.add(index)
        if self.skip(index):
            return
        dp, db = now[0] - before[0], now[1] - before[1]
        rp, rb = now[2] - before[2], now[3] - before[3]
        if dp or db:
            self.record(index, e.proto, e.src, e.sport, e.dst, e.dport, dp, db)
        if rp or rb:
            self.record(index, e.proto, e.dst, e.dport, e.src, e.sport, rp, rb)

    def take_touched(self) -> set[int]:
        """The devices whose connections grew or ended since the last call."""
        touched, self._touched = self._touched, set()
        return touched


def _memo(lookup: Callable[[str], T]) -> Callable[[str], T]:
    """`lookup` with its answers kept (for the length of one dump: a lease may change
    between two)."""
    answers: dict[str, T] = {}

    def memoised(address: str) -> T:
        try:
            return answers[address]
        except KeyError:
            answer = answers[address] = lookup(address)
            return answer
    return memoised


def per_source_counts(entries: Iterable[CtEntry]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.src] = counts.get(e.src, 0) + 1
    return counts
