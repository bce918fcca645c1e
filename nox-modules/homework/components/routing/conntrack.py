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
TCP entries stay for 120 s after the close (TIME_WAIT), so the periodic dump sees
the final counters of nearly every connection well before that.
"""
from __future__ import annotations

import ctypes
import logging
import re
import signal
import shutil
import subprocess
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

log = logging.getLogger("homework.routing.conntrack")

PROTOCOLS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}
COUNT_FILE = "/proc/sys/net/netfilter/nf_conntrack_count"
ACCT_FILE = "/proc/sys/net/netfilter/nf_conntrack_acct"
PR_SET_PDEATHSIG = 1
EVENT_BUFFER = 8 * 1024 * 1024       # bytes: a burst of endings must not overflow the socket
# What is read: IPv4 connections that went through NAT (so not the router's own, nor the
# DNS interception's), and IPv6 (routed, no NAT: the devices' own are picked by address)
SELECTIONS = (("-f", "ipv4", "--src-nat"), ("-f", "ipv6"))


@dataclass(frozen=True)
class CtEntry:
    id: int
    proto: int
    src: str            # original direction, as the device sent it
    dst: str
    sport: int
    dport: int
    packets: int        # original direction
    bytes: int
    reply_packets: int
    reply_bytes: int

    @property
    def key(self) -> tuple:
        # The id alone may be reused by the kernel once an entry is gone.
        return (self.id, self.proto, self.src, self.sport, self.dst, self.dport)


# One entry of `conntrack -L/-E -o extended,id`: the original tuple and counters, the reply
# counters, the entry's id (last: ICMP tuples carry an `id=` of their own before it). A
# regular expression, not a token loop: a busy router parses thousands of these a second.
ENTRY = re.compile(r"^(?:\[\w+\]\s+)?ipv[46]\s+\d+\s+(tcp|udp|icmp|icmpv6)\s.*?src=(\S+) dst=(\S+) "
                   r"(?:sport=(\d+) dport=(\d+) |type=).*?packets=(\d+) bytes=(\d+) .*?packets=(\d+) bytes=(\d+)"
                   r".*? id=(\d+)")


def parse_entry(line: str) -> CtEntry | None:
    """One line of `conntrack -L/-E -o extended,id`; None for what is not a flow with
    counters (no accounting, a summary line)."""
    m = ENTRY.match(line)
    if m is None:
        return None
    proto, src, dst, sport, dport, packets, nbytes, rpackets, rbytes, ident = m.groups()
    return CtEntry(id=int(ident), proto=PROTOCOLS[proto], src=src, dst=dst, sport=int(sport or 0),
                   dport=int(dport or 0), packets=int(packets), bytes=int(nbytes),
                   reply_packets=int(rpackets), reply_bytes=int(rbytes))


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
        self._seen: dict[tuple, tuple[int, int, int, int]] = {}   # entry key -> counters reported
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
        The first dump after a start only sets the baseline. Returns entries seen."""
        seen: dict[tuple, tuple[int, int, int, int]] = {}
        for e in entries:
            if e.key in self._gone:
                continue
            counters = (e.packets, e.bytes, e.reply_packets, e.reply_bytes)
            if not self.priming:
                self._report(e, self._seen.get(e.key, (0, 0, 0, 0)))
            seen[e.key] = counters
        self._seen = seen
        self._gone = set()
        self.priming = False
        return len(seen)

    def ended(self, e: CtEntry) -> None:
        """A DESTROY event: the last growth, then the entry is forgotten. During priming
        an unknown entry's history belongs to the previous process: nothing reported."""
        before = self._seen.pop(e.key, None)
        self._gone.add(e.key)
        if before is None and self.priming:
            return
        self._report(e, before or (0, 0, 0, 0))

    def _report(self, e: CtEntry, before: tuple[int, int, int, int]) -> None:
        now = (e.packets, e.bytes, e.reply_packets, e.reply_bytes)
        if now == before:
            return
        if any(n < b for n, b in zip(now, before)):     # an id reused for a new connection
            before = (0, 0, 0, 0)
        index = self.index_of(e.src)
        if index is None or self.inside(e.dst):
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


def per_source_counts(entries: Iterable[CtEntry]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.src] = counts.get(e.src, 0) + 1
    return counts


class ConntrackReader:
    """The kernel side: the `conntrack` tool (Debian's conntrack-tools: a maintained
    netlink client, rather than our own) for dumps and DESTROY events."""

    def __init__(self, binary: str | None = None):
        self.binary = binary or shutil.which("conntrack")
        self._events: list[subprocess.Popen] = []
        self._stopping = False

    @property
    def available(self) -> bool:
        return self.binary is not None

    @staticmethod
    def enable_accounting() -> bool:
        """Conntrack counts bytes only with accounting on (per network namespace)."""
        try:
            with open(ACCT_FILE, "w") as f:
                f.write("1")
            return True
        except OSError as exc:
            log.warning("cannot enable conntrack accounting (%s): NATed flows carry no counters", exc)
            return False

    @staticmethod
    def count() -> int:
        """How many entries the kernel holds (all of them): a file read, no dump."""
        try:
            with open(COUNT_FILE) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def dump(self) -> list[CtEntry]:
        """Every NATed IPv4 connection and every IPv6 one (routed, not NATed: the caller
        keeps the devices' own), with their counters."""
        entries: list[CtEntry] = []
        for selection in SELECTIONS:
            try:
                out = subprocess.run([self.binary, "-L", *selection, "-o", "extended,id"],
                                     capture_output=True, text=True, timeout=30, check=False).stdout
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("conntrack dump failed: %s", exc)
                continue
            entries += [e for line in out.splitlines() if (e := parse_entry(line)) is not None]
        return entries

    def follow(self, on_end: Callable[[CtEntry], None]) -> None:
        """Start reading DESTROY events in the background (green threads under the
        controller's eventlet); restarts the tool if it exits."""
        for selection in SELECTIONS:
            threading.Thread(target=self._follow, args=(selection, on_end), daemon=True,
                             name="conntrack-events").start()

    def _follow(self, selection: tuple[str, ...], on_end: Callable[[CtEntry], None]) -> None:
        import time
        while not self._stopping:
            try:
                proc = subprocess.Popen(
                    [self.binary, "-E", "-e", "DESTROY", *selection, "-o", "extended,id",
                     "-b", str(EVENT_BUFFER)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                    preexec_fn=_die_with_parent)
                self._events = [p for p in self._events if p.poll() is None] + [proc]
                for line in proc.stdout:
                    entry = parse_entry(line)
                    if entry is not None:
                        try:
                            on_end(entry)
                        except Exception:
                            log.exception("conntrack event handler failed")
            except OSError as exc:
                log.warning("conntrack events: %s", exc)
            if not self._stopping:
                time.sleep(1.0)

    def stop(self) -> None:
        """Ends the event readers without waiting for them: this runs from the
        controller's signal handler, where nothing may block."""
        self._stopping = True
        procs, self._events = self._events, []
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()


def _die_with_parent() -> None:
    """The event reader ends with the controller, even a controller killed with SIGKILL
    (otherwise it would keep the router's namespace and its socket alive)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
