"""The kernel's connection tracking, read with the `conntrack` tool: dumps of the entries
with their counters, and their endings (DESTROY events). The router's own networking, like
hostnet.py: the routing component turns what is read here into per-flow records
(components/routing/conntrack.py)."""
from __future__ import annotations

import ctypes
import fcntl
import logging
import os
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
TIME_WAIT_FILE = "/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_time_wait"
# How long the router keeps a closed TCP connection's entry (the kernel's default is 120 s):
# as long as Linux keeps its own TIME_WAIT (60 s), so the NAT does not give a connection's
# ports to a new one while a Linux end still remembers the old. A closed
# entry's counters no longer move, yet every dump lists it again: at 60 s it is listed
# by about six dumps instead of twelve, its ending (the last counters) comes a minute
# sooner, and a burst's closed connections hold half the table for half as long.
TIME_WAIT_SECONDS = 60
PR_SET_PDEATHSIG = 1
EVENT_BUFFER = 8 * 1024 * 1024       # bytes: a burst of endings must not overflow the socket
PIPE_SIZE = 1024 * 1024              # bytes: the tool's pipe, and the most read at once
ENDINGS_PAUSE = 0.2                  # seconds between two reads of endings
# What is read: IPv4 connections that went through NAT (so not the router's own, nor the
# DNS interception's), and IPv6 (routed, no NAT: the devices' own are picked by address).
# Dumps ask for each; endings come from one tool for both families, and an IPv4 ending is
# kept only if it went through source NAT (CtEntry.nated): the tool filters events in
# userspace, so a second one (IPv6) woke for every IPv4 ending too, to drop it.
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
    reply_dst: str = ""     # where the far end's answers go: the router's address after source NAT

    @property
    def nated(self) -> bool:
        """An IPv6 connection (routed, the devices' own), or an IPv4 one through source NAT
        (what a dump's `--src-nat` selects): not the router's own, nor DNS interception's."""
        return ":" in self.src or self.reply_dst != self.src

    @property
    def key(self) -> tuple:
        # The id alone may be reused by the kernel once an entry is gone.
        return (self.id, self.proto, self.src, self.sport, self.dst, self.dport)


# One entry of `conntrack -L/-E -o extended,id`: the original tuple and counters, the reply's
# destination and counters, the entry's id (last: ICMP tuples carry an `id=` of their own before it). A
# regular expression, not a token loop: a busy router parses thousands of these a second.
ENTRY = re.compile(r"^(?:\[\w+\]\s+)?ipv[46]\s+\d+\s+(tcp|udp|icmp|icmpv6)\s.*?src=(\S+) dst=(\S+) "
                   r"(?:sport=(\d+) dport=(\d+) |type=).*?packets=(\d+) bytes=(\d+) .*?dst=(\S+) .*?packets=(\d+) "
                   r"bytes=(\d+).*? id=(\d+)")


def parse_entry(line: str) -> CtEntry | None:
    """One line of `conntrack -L/-E -o extended,id`; None for what is not a flow with
    counters (no accounting, a summary line)."""
    m = ENTRY.match(line)
    if m is None:
        return None
    proto, src, dst, sport, dport, packets, nbytes, rdst, rpackets, rbytes, ident = m.groups()
    return CtEntry(id=int(ident), proto=PROTOCOLS[proto], src=src, dst=dst, sport=int(sport or 0),
                   dport=int(dport or 0), packets=int(packets), bytes=int(nbytes),
                   reply_packets=int(rpackets), reply_bytes=int(rbytes), reply_dst=rdst)


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
        # The last dump's lines, their timeout left out, and what each parsed to: a line
        # that has not changed but for its timeout is not parsed again (see dump).
        self._last_dump: dict[str, CtEntry] = {}

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
    def shorten_time_wait(seconds: int = TIME_WAIT_SECONDS) -> bool:
        """Closed TCP connections stay `seconds` in the table (per network namespace),
        never longer than the kernel's own setting."""
        try:
            with open(TIME_WAIT_FILE) as f:
                now = int(f.read().strip() or 0)
            if now > seconds:
                with open(TIME_WAIT_FILE, "w") as f:
                    f.write(str(seconds))
            return True
        except (OSError, ValueError) as exc:
            log.warning("cannot shorten conntrack's TIME_WAIT (%s): closed connections are listed for longer", exc)
            return False

    @staticmethod
    def count() -> int:
        """How many entries the kernel holds (all of them): a file read, no dump."""
        try:
            with open(COUNT_FILE) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def dump(self) -> list[CtEntry] | None:
        """Every NATed IPv4 connection and every IPv6 one (routed, not NATed: the caller
        keeps the devices' own), with their counters; None if a dump failed (a partial
        list would read as connections gone, and their next sighting as new ones, whose
        bytes would then be counted twice).

        Most entries of a busy router have not changed since the last dump (a closed
        connection stays a minute in TIME_WAIT, seen by about six dumps; an idle one
        does not grow) but for their timeout, and parsing a line costs twenty times a
        dictionary look-up: such lines take the last dump's entry. Inside the image's VM
        the parse was a seventh of the controller's time under a stream of new
        connections (docs/performance.md, the kernel datapath)."""
        lines = self._list("extended,id")
        if lines is None:
            return None
        last, seen = self._last_dump, {}
        entries = []
        for line in lines:
            key = _without_timeout(line)
            entry = last.get(key)
            if entry is None and (entry := parse_entry(line)) is None:
                continue
            seen[key] = entry
            entries.append(entry)
        self._last_dump = seen
        return entries

    def dump_translated(self) -> list[Translated]:
        """Every TCP and UDP connection through NAT (IPv4) or routed (IPv6), both tuples."""
        return [t for line in self._list("extended") or [] if (t := parse_translated(line)) is not None]

    def _list(self, output: str) -> list[str] | None:
        """The lines of `conntrack -L -o OUTPUT` for each selection; None if a selection's
        dump failed (logged; the next poll tries again).

        The tool writes into an in-memory file, read once it is done: through a pipe the
        controller woke for every few kilobytes the tool wrote (hundreds of times for a
        busy router's dump), which cost it more than reading the lines."""
        assert self.binary is not None      # callers check `available`
        lines: list[str] = []
        for selection in SELECTIONS:
            try:
                with open(os.memfd_create("conntrack-dump"), "w+b") as out:
                    subprocess.run([self.binary, "-L", *selection, "-o", output], stdout=out,
                                   stderr=subprocess.DEVNULL, timeout=30, check=True)
                    out.seek(0)
                    text = out.read().decode(errors="replace")
            except (OSError, subprocess.SubprocessError) as exc:
                log.warning("conntrack dump failed: %s", exc)
                return None
            lines += text.splitlines()
        return lines

    def follow(self, on_end: Callable[[CtEntry], None]) -> None:
        """Start reading DESTROY events in the background (a green thread under the
        controller's eventlet); restarts the tool if it exits. `on_end` hears the NATed
        IPv4 connections and the IPv6 ones (CtEntry.nated)."""
        threading.Thread(target=self._follow, args=(on_end,), daemon=True, name="conntrack-events").start()

    def _follow(self, on_end: Callable[[CtEntry], None]) -> None:
        assert self.binary is not None          # callers check `available`
        while not self._stopping:
            try:
                proc = subprocess.Popen(
                    [self.binary, "-E", "-e", "DESTROY", "-o", "extended,id",
                     "-b", str(EVENT_BUFFER)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    preexec_fn=_die_with_parent)
                self._events = [p for p in self._events if p.poll() is None] + [proc]
                assert proc.stdout is not None
                self._read_endings(proc.stdout.fileno(), on_end)
            except OSError as exc:
                log.warning("conntrack events: %s", exc)
            if not self._stopping:
                time.sleep(1.0)

    def _read_endings(self, fd: int, on_end: Callable[[CtEntry], None]) -> None:
        """Every ending the tool writes, read a pipeful at a time with a pause between
        reads: the tool writes each ending as it comes, and a wake-up per ending cost the
        controller more than the ending itself (inside the image's VM, a busy router ends
        hundreds of connections a second). An ending whose entry the last dump listed
        with the same counters is not parsed: it adds nothing, and most are such (a closed
        connection waits a minute in TIME_WAIT, listed by the dumps of that minute). Until
        the tool exits."""
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)     # room for the endings of a pause
        except OSError:
            pass
        tail = b""
        while True:
            chunk = os.read(fd, PIPE_SIZE)          # green under the controller's eventlet
            if not chunk:
                return
            lines = (tail + chunk).split(b"\n")
            tail = lines.pop()
            last_dump = self._last_dump
            for line in lines:
                text = line.decode(errors="replace")
                if _as_listed(text) in last_dump:
                    continue        # the last dump listed it with these counters: nothing to add
                entry = parse_entry(text)
                if entry is not None and entry.nated:
                    try:
                        on_end(entry)
                    except Exception:
                        log.exception("conntrack event handler failed")
            if not self._stopping:
                time.sleep(ENDINGS_PAUSE)

    def stop(self) -> None:
        """Ends the event readers without waiting for them: this runs from the
        controller's signal handler, where nothing may block."""
        self._stopping = True
        procs, self._events = self._events, []
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()


def _without_timeout(line: str) -> str:
    """A listed line from its first tuple on, without the family, protocol, timeout and
    state before it ("ipv4 2 tcp 6 117 TIME_WAIT src=..." -> " src=..."): the timeout
    changes on every dump of an entry that did not move, and the rest (both tuples, the
    counters, the entry's id) is the same only for the same entry with the same counters.
    One search and a slice: a dump of a busy router has tens of thousands of lines."""
    at = line.find(" src=")
    return line[at:] if at >= 0 else line


def _as_listed(ending: str) -> str:
    """An ending ("[DESTROY] ipv4 2 tcp 6 TIME_WAIT src=... [ASSURED] id=40 ...") as a
    dump keys the same entry with the same counters (_without_timeout: " src=...
    [ASSURED] mark=0 use=1 id=40"), for an entry without a mark; a marked entry's does not
    match, and that ending is parsed as before. Three searches, not a parse."""
    at = ending.find(" src=")
    ident = ending.rfind(" id=")        # the entry's (an ICMP tuple's echo id comes before it)
    if at < 0 or ident < at:
        return ending
    end = ending.find(" ", ident + 1)
    return ending[at:ident] + " mark=0 use=1" + (ending[ident:end] if end > 0 else ending[ident:])


def _die_with_parent() -> None:
    """The event reader ends with the controller, even a controller killed with SIGKILL
    (otherwise it would keep the router's namespace and its socket alive)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
