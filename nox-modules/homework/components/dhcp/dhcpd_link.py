"""The controller's side of homework-dhcpd (`[dhcp] answerer = "dhcpd"`).

homework-dhcpd (Rust, `dhcpd/`) reads the switch's marked DHCP requests from the bridge's
LOCAL interface (the scheme of fastpath.py) and answers by itself only what is already
decided: a device with a live lease asking again for the address it holds, or one taking
the address the controller offered it (the REQUEST after our OFFER). It answers
from the table this module keeps in it, and says what it answered ("offered", "acked");
the controller then does the bookkeeping as if it had answered (lease expiry, events,
state.db). It also offers a never-seen device one of the free blocks the controller
reserved for that (`reserve`), unless the controller names the MAC as one it decides
itself (`known`), and within the controller's new-MAC figures (`new_macs`); the note
names the block (`reserved`) and the controller claims it. Every other frame comes here
unchanged (a "punt") and goes through DhcpServer.handle as before, its reply out of a
send-only raw socket. So decisions stay in one place, and the common case costs no Python.

Wire: one AF_UNIX SOCK_SEQPACKET pair, the daemon's end passed as --control-fd; one
message per packet, or (`gathered`) a JSON array of them, applied in order. To the daemon:
JSON {"op": "set", mac, port, ip, router, broadcast, lease_time, hostname, relay, offer} |
{"op": "del", mac} | {"op": "clear"} | {"op": "stats"} |
{"op": "new_macs", burst, per_second, lease_time} | {"op": "known", macs} | {"op": "unknown", mac}
| {"op": "reserve", ips}. From it:
b"P" + the frame (a punt), or JSON {"op": "offered" | "acked", mac, port, hostname, xid,
counts, first, reserved} (`first`: an ACK on an offer, told and booked at once;
`reserved`: the reserved block's device address the answer gave) |
{"op": "stats", ...}.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import shutil
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from collections.abc import Callable, Sequence

from .fastpath import request_client

log = logging.getLogger("homework.dhcp.dhcpd")

MAX_MESSAGE = 65536
RESTART_AFTER = 1.0          # seconds before a daemon that exited is started again
# The daemon's answers are booked in batches, at most this long after they were given,
# one booking per device however many answers it got meanwhile (each with a `count`):
# at thousands of renewals a second the bookkeeping would otherwise take the CPU the
# answers need, and its bursts showed as the daemon's slowest answers (p99). A lease's
# expiry in the controller then trails the client's by at most this much, against lease
# times of 30 s and more. The daemon batches what it tells us on the same clock (TELL_EVERY).
BOOK_EVERY = 0.5
REPO_BINARY = Path(__file__).resolve().parents[4] / "dhcpd" / "target" / "release" / "homework-dhcpd"
PR_SET_PDEATHSIG = 1
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))   # one encoder: json.dumps with options builds one a call
KNOWN_PER_MESSAGE = 512      # MACs in one "known" message (about 10 kB)
# Messages gathered into one packet, at most this many bytes (the daemon reads 64 kB). Each
# packet wakes the daemon, and on a busy machine the send then waited for the daemon's turn
# on the CPU: a packet per message (one per device and decision) was a quarter of the
# controller's time while it let a crowd in.
GATHER_BYTES = 32 * 1024
DRAIN = 64                   # the daemon's messages read at once, their answers gathered
NOTES_BUFFER = 2 << 20       # bytes of notes the daemon may have waiting for us (the kernel doubles it)
SO_SNDBUFFORCE = 32          # Linux's; Python's socket module does not name it


def known_messages(macs: list[str]) -> list[dict]:
    """`known` messages naming `macs`, a few hundred to a message."""
    return [{"op": "known", "macs": macs[at:at + KNOWN_PER_MESSAGE]} for at in range(0, len(macs), KNOWN_PER_MESSAGE)]


def find_binary(configured: str) -> str | None:
    """The daemon: a path as configured, a name on PATH, or the checkout's build."""
    if "/" in configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which(configured) or (str(REPO_BINARY) if os.access(REPO_BINARY, os.X_OK) else None)


class DhcpdLink:
    """Starts homework-dhcpd, keeps its lease table, and hands what it says to the server:
    `on_punt(frame)` for a request the controller must decide, `on_note(dict)` for an
    answer it gave. Reads in a thread: a green thread under the controller's eventlet."""

    def __init__(self, binary: str, interface: str, on_punt: Callable[[bytes], None],
                 on_note: Callable[[dict], None], table: Callable[[], list[dict]],
                 count: Callable[..., None], setup: Callable[[], list[dict]] = list, extra_args: Sequence[str] = ()):
        self.binary = binary
        self.extra_args = tuple(extra_args)   # e.g. the encrypted DNS it announces (--dnr, homework/dnr.py)
        self.interface = interface
        self.on_punt = on_punt
        self.on_note = on_note
        self.table = table            # every entry the daemon should hold, for a (re)start
        self.setup = setup            # and the messages before them (known MACs, reserve, new_macs)
        self._known: set[str] = set()     # the MACs told "known" to the running daemon
        self.count = count
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self._closed = False
        self._stats_waiters: list[Callable[[dict], None]] = []
        self._unbooked: dict[str, dict] = {}      # mac -> its latest answer, with "count"
        # mac -> the entry the daemon holds: a renewal it answered itself changes nothing in
        # it, so booking one sends nothing back
        self._held: dict[str, dict] = {}
        self._booked_at = time.monotonic()
        # One reader at a time, so the daemon's answers are dispatched in the order it sent
        # them: the link's own thread, or settle() for whoever must see every answer given.
        self._reading = threading.Lock()
        # Messages not sent yet, in order, and the (green) threads gathering theirs: a
        # message of a thread that is not gathering goes out at once, with any gathered
        # before it, so the daemon sees them in the order they were made.
        self._outbox: list[bytes] = []
        self._gathering: dict[int, int] = {}
        self._writing = threading.Lock()

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        self._spawn()
        threading.Thread(target=self._run, daemon=True, name="dhcpd-link").start()

    def _spawn(self) -> None:
        ours, theirs = control_socketpair()
        try:
            self.proc = subprocess.Popen(
                [self.binary, "--interface", self.interface, "--control-fd", str(theirs.fileno()), *self.extra_args],
                pass_fds=(theirs.fileno(),), preexec_fn=_die_with_parent, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.sock = ours
        self._known = set()
        self._outbox = []             # for the daemon before: this one gets everything below
        with self.gathered():
            for message in self.setup():
                if message.get("op") == "known":
                    self._known.update(message["macs"])
                self._send(message)
            entries = self.table()
            self._held = {}
            for entry in entries:
                self.set(entry)
        log.info("homework-dhcpd (pid %d) answers for %d leases on %s", self.proc.pid, len(entries),
                 self.interface)

    def _run(self) -> None:
        while not self._closed:
            sock = self.sock
            with self._reading:
                try:
                    if sock is not None:
                        sock.settimeout(BOOK_EVERY)
                    data = sock.recv(MAX_MESSAGE) if sock else b""
                except TimeoutError:
                    self.book()
                    continue
                except OSError:
                    data = b""
                if data and sock is not None:
                    with self.gathered():
                        self._dispatch(data)
                        self._drain(sock)
                        if time.monotonic() - self._booked_at >= BOOK_EVERY:
                            self.book()
                    continue
                self.book()
            if self._closed:
                return
            # EOF: the daemon exited. Start it again with the whole table.
            code = self.proc.wait() if self.proc else None
            log.warning("homework-dhcpd exited (%s); starting it again", code)
            self.count("dhcp.dhcpd_restarts")
            time.sleep(RESTART_AFTER)
            if self._closed:
                return
            try:
                self._spawn()
            except OSError as exc:
                log.error("homework-dhcpd cannot start (%s)", exc)
                time.sleep(5)

    def _drain(self, sock: socket.socket) -> None:
        """What else the daemon has said by now, up to DRAIN messages (a crowd's first
        ACKs): dispatched in the caller's gathering. EOF is left for the next read."""
        for _ in range(DRAIN):
            if not select.select([sock], [], [], 0)[0]:
                return
            try:
                data = sock.recv(MAX_MESSAGE)
            except OSError:
                return
            if not data:
                return
            self._dispatch(data)

    def _dispatch(self, data: bytes) -> None:
        if data[:1] == b"P":
            # not gathered: a reply of ours may need its entry in the daemon before it leaves
            # (an OFFER: the REQUEST that takes it is the daemon's to answer)
            self.count("dhcp.dhcpd_punted")
            self._book_before_punt(data[1:])
            with self._ungathered():
                self.on_punt(data[1:])
            return
        with self.gathered():
            self._dispatch_note(data)

    def _book_before_punt(self, frame: bytes) -> None:
        """What the daemon answered this client and we hold for the batch is booked before
        the controller decides its punted request: a RELEASE a moment after a renewal would
        otherwise be undone by the renewal's booking (the lease living on until it ran out).
        The daemon sends that answer ahead of the punt for the same reason."""
        mac = request_client(frame)
        note = self._unbooked.pop(mac, None) if mac else None
        if note is not None:
            with self.gathered():
                self._book_one(note)

    def _dispatch_note(self, data: bytes) -> None:
        try:
            note = json.loads(data)
        except ValueError:
            self.count("dhcp.dhcpd_bad_message")
            return
        if not isinstance(note, dict):
            self.count("dhcp.dhcpd_bad_message")
            return
        if note.get("op") == "stats":
            waiters, self._stats_waiters = self._stats_waiters, []
            for waiter in waiters:
                waiter(note)
            return
        mac = note.get("mac")
        if note.get("op") not in ("offered", "acked") or not isinstance(mac, str):
            self.count("dhcp.dhcpd_bad_message")
            return
        # One booking per device per batch: an ACK outranks an OFFER (it books the lease);
        # the counts of both are kept for the counters.
        prev = self._unbooked.get(mac)
        counts = {"offered": 0, "acked": 0} if prev is None else prev["counts"]
        told = note.get("counts")             # the daemon's own batch: how many of each
        for kind in counts:
            n = told.get(kind, 0) if isinstance(told, dict) else int(kind == note["op"])
            counts[kind] += n if isinstance(n, int) and n > 0 else 0
        reserved = None if prev is None else prev.get("reserved")
        if prev is None or note["op"] == "acked" or prev["op"] != "acked":
            prev = dict(note)
        if reserved is not None:           # named until the claim: kept across the merge
            prev.setdefault("reserved", reserved)
        prev["counts"] = counts
        if note.get("first") is True and note["op"] == "acked":
            # A new lease (the ACK on our offer): booked now, so its flows follow the ACK
            # at once instead of up to a batch later.
            self._unbooked.pop(mac, None)
            self._book_one(prev)
            return
        self._unbooked[mac] = prev

    def settle(self) -> int:
        """Book every answer the daemon has given so far, now: those in the socket not read
        yet and the batch waiting (up to BOOK_EVERY). The board's device list asks for this
        first, so a device that has its ACK is listed, however busy the controller is.
        Returns how many messages were read."""
        read = 0
        with self._reading:
            sock = self.sock
            while sock is not None and select.select([sock], [], [], 0)[0]:
                try:
                    data = sock.recv(MAX_MESSAGE)
                except OSError:
                    break
                if not data:
                    break           # EOF: the link's thread restarts the daemon
                self._dispatch(data)
                read += 1
            self.book()
        return read

    def book(self) -> None:
        """Hand the batch of the daemon's answers to the server."""
        self._booked_at = time.monotonic()
        batch, self._unbooked = self._unbooked, {}
        with self.gathered():
            for note in batch.values():
                self._book_one(note)

    def _book_one(self, note: dict) -> None:
        try:
            self.on_note(note)
        except Exception:
            log.exception("homework-dhcpd answer %s not booked", note)

    def close(self) -> None:
        """Stop the daemon; runs from the controller's signal handler: nothing blocks."""
        self._closed = True
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()

    # -- the table -----------------------------------------------------------------------------
    def set(self, entry: dict) -> None:
        if self._held.get(entry["mac"]) == entry:
            return
        self._held[entry["mac"]] = dict(entry)
        self._send({"op": "set", **entry})

    def delete(self, mac: str) -> None:
        self._held.pop(mac, None)
        self._send({"op": "del", "mac": mac})

    def know(self, macs: list[str]) -> None:
        """MACs the controller decides itself: the daemon offers them nothing of its own."""
        new = [mac for mac in macs if mac not in self._known]
        self._known.update(new)
        for message in known_messages(new):
            self._send(message)

    def unknown(self, mac: str) -> None:
        self._known.discard(mac)
        self._send({"op": "unknown", "mac": mac})

    def reserve(self, ips: list[str]) -> None:
        if ips:
            self._send({"op": "reserve", "ips": ips})

    def stats(self, then: Callable[[dict], None]) -> None:
        self._stats_waiters.append(then)
        self._send({"op": "stats"})

    @contextlib.contextmanager
    def gathered(self):
        """Within it, this thread's messages wait and go out together when it ends, a few
        hundred to a packet (a group decision, a batch of bookings)."""
        ident = threading.get_ident()
        self._gathering[ident] = self._gathering.get(ident, 0) + 1
        try:
            yield
        finally:
            depth = self._gathering.pop(ident) - 1
            if depth:
                self._gathering[ident] = depth
            else:
                self.flush()

    @contextlib.contextmanager
    def _ungathered(self):
        """Within it, this thread's messages go out at once (after those gathered so far)."""
        ident = threading.get_ident()
        depth = self._gathering.pop(ident, 0)
        self.flush()
        try:
            yield
        finally:
            if depth:
                self._gathering[ident] = depth

    def _send(self, message: dict) -> None:
        if self.sock is None:
            return
        self._outbox.append(_COMPACT_JSON.encode(message).encode())
        if threading.get_ident() not in self._gathering:
            self.flush()

    def flush(self) -> None:
        """Send every message waiting, in order: one alone as itself, several as arrays."""
        with self._writing:
            waiting, self._outbox = self._outbox, []
            packet: list[bytes] = []
            size = 0
            for message in waiting:
                if packet and size + len(message) > GATHER_BYTES:
                    self._write(packet)
                    packet, size = [], 0
                packet.append(message)
                size += len(message) + 1
            if packet:
                self._write(packet)

    def _write(self, messages: list[bytes]) -> None:
        sock = self.sock
        if sock is None:
            return
        try:
            sock.send(messages[0] if len(messages) == 1 else b"[" + b",".join(messages) + b"]")
        except OSError as exc:        # the daemon is gone: the restart sends the whole table
            log.debug("homework-dhcpd: %d messages not sent (%s)", len(messages), exc)


def control_socketpair() -> tuple[socket.socket, socket.socket]:
    """The link's two ends. The daemon's may hold NOTES_BUFFER bytes of what it tells us:
    it drops a note rather than wait, and a new lease's note lost is a device the
    controller never books (a crowd outran a busy controller by hundreds of notes, past
    the default buffer's 278). Only root may go past net.core.wmem_max (SO_SNDBUFFORCE);
    otherwise it is capped there."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        theirs.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, NOTES_BUFFER)
    except OSError:
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, NOTES_BUFFER)
    return ours, theirs


def _die_with_parent() -> None:
    """The daemon ends with the controller, even one killed with SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
