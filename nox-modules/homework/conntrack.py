"""The kernel's connection tracking, read with the `conntrack` tool: dumps of the entries
with their counters, and their endings (DESTROY events). The router's own networking, like
hostnet.py: the routing component turns what is read here into per-flow records
(components/routing/conntrack.py)."""
from __future__ import annotations

import ctypes
import logging
import re
import signal
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from collections.abc import Callable

log = logging.getLogger("homework.conntrack")

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


@dataclass(frozen=True)
class Translated:
    """A connection's two tuples: as the device sent it (original) and as the far end
    answers it (reply: after NAT, addressed to the router's public address), with its ct
    mark. The ISP sees the connection as the reply tuple turned round."""
    proto: str          # "tcp" or "udp"
    src: str            # original direction
    sport: int
    dst: str
    dport: int
    reply_src: str
    reply_sport: int
    reply_dst: str
    reply_dport: int
    mark: int

    def outside(self) -> tuple[str, str, int, str, int]:
        """(proto, src, sport, dst, dport) as the line beyond the router carries it upstream."""
        return (self.proto, self.reply_dst, self.reply_dport, self.reply_src, self.reply_sport)


TRANSLATED = re.compile(r"^(?:\[\w+\]\s+)?ipv[46]\s+\d+\s+(tcp|udp)\s.*?src=(\S+) dst=(\S+) sport=(\d+) dport=(\d+) "
                        r".*?src=(\S+) dst=(\S+) sport=(\d+) dport=(\d+) .*?mark=(\d+)")


def parse_translated(line: str) -> Translated | None:
    """One TCP or UDP line of `conntrack -L -o extended`; None for anything else."""
    m = TRANSLATED.match(line)
    if m is None:
        return None
    proto, src, dst, sport, dport, rsrc, rdst, rsport, rdport, mark = m.groups()
    return Translated(proto, src, int(sport), dst, int(dport), rsrc, int(rsport), rdst, int(rdport), int(mark))


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
        return [e for line in self._list("extended,id") if (e := parse_entry(line)) is not None]

    def dump_translated(self) -> list[Translated]:
        """Every TCP and UDP connection through NAT (IPv4) or routed (IPv6), both tuples."""
        return [t for line in self._list("extended") if (t := parse_translated(line)) is not None]

    def _list(self, output: str) -> list[str]:
        """The lines of `conntrack -L -o OUTPUT` for each selection; a selection whose dump
        fails is logged and left out (the next poll tries again)."""
        assert self.binary is not None      # callers check `available`
        lines: list[str] = []
        for selection in SELECTIONS:
            try:
                out = subprocess.run([self.binary, "-L", *selection, "-o", output],
                                     capture_output=True, text=True, timeout=30, check=False).stdout
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("conntrack dump failed: %s", exc)
                continue
            lines += out.splitlines()
        return lines

    def follow(self, on_end: Callable[[CtEntry], None]) -> None:
        """Start reading DESTROY events in the background (green threads under the
        controller's eventlet); restarts the tool if it exits."""
        for selection in SELECTIONS:
            threading.Thread(target=self._follow, args=(selection, on_end), daemon=True,
                             name="conntrack-events").start()

    def _follow(self, selection: tuple[str, ...], on_end: Callable[[CtEntry], None]) -> None:
        assert self.binary is not None          # callers check `available`
        while not self._stopping:
            try:
                proc = subprocess.Popen(
                    [self.binary, "-E", "-e", "DESTROY", *selection, "-o", "extended,id",
                     "-b", str(EVENT_BUFFER)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                    preexec_fn=_die_with_parent)
                self._events = [p for p in self._events if p.poll() is None] + [proc]
                for line in proc.stdout or ():
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
