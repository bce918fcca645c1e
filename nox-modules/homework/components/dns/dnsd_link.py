"""The controller's side of homework-dnsd's control socket (protocol in dnsd/src/control.rs).

Policy changes go out as lines followed by `sync TOKEN`; `push` waits for dnsd's `ok`, so
a command returns only once the change applies to the next query. Query and answer events
come back on the same connection and are handed to `on_events` in batches. While dnsd is
unreachable the link retries; on every (re)connect it sends a full snapshot, so dnsd can
restart (or start after the controller) without losing policy.
"""
from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable

log = logging.getLogger("homework.dns.link")
FLUSH_AFTER = 0.005      # seconds the lines of pushes that do not wait gather before one write


class DnsdLink:
    def __init__(self, path: str, snapshot: Callable[[], list[str]],
                 on_events: Callable[[list[str]], None], retry: float = 0.5):
        self.path = path
        self.snapshot = snapshot
        self.on_events = on_events
        self.retry = retry
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._waiting: dict[str, list] = {}      # token -> [event, reply]
        self._unconfirmed: list | None = None   # the waiter of the last push nobody waited for
        # Lines of pushes that did not wait, gathered for one write (and one sync) a moment
        # later: a group decision's hundreds of device lines went out one write each, and
        # those writes were the largest part of the controller's time.
        self._queued: list[str] = []
        self._flush_pending = False
        self._stats_waiters: list[list] = []
        self._stopped = False
        self.connected = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name="dnsd-link").start()

    def stop(self) -> None:
        self._stopped = True
        sock, self._sock = self._sock, None
        if sock:
            try:
                sock.close()
            except OSError:
                pass

    # -- out -------------------------------------------------------------------------------
    def push(self, lines: list[str], timeout: float = 3.0, wait: bool = True) -> bool:
        """Send policy lines and (with `wait`) wait until dnsd applied them. False if dnsd
        is not connected (the change is stored and goes out with the next snapshot)."""
        if not lines:
            return True
        with self._send_lock:
            if self._sock is None:
                return False
            self._queued += lines
            if not wait:            # goes out with the others of this moment (FLUSH_AFTER)
                self._flush_soon()
                return True
            waiter = self._flush()
            self._unconfirmed = None      # dnsd applies lines in order: this covers the earlier ones
        if waiter is None:
            return False
        return self._confirmed(waiter, timeout, f"{len(lines)} policy lines")

    def settle(self, timeout: float = 3.0) -> bool:
        """Wait until dnsd has applied every push so far (one confirmation: dnsd applies
        lines in the order they come). A run of pushes that did not wait each (the events
        of a group decision) costs one write and one round trip here instead of one each."""
        with self._send_lock:
            if self._queued and self._sock is not None:
                self._flush()
            # Kept until confirmed: commands settling at the same moment share the one
            # confirmation (it covers every line before it), and none answers before it.
            waiter = self._unconfirmed
        if waiter is None:
            return True
        confirmed = self._confirmed(waiter, timeout, "the latest policy lines")
        with self._send_lock:
            if self._unconfirmed is waiter:
                self._unconfirmed = None
        return confirmed

    def _flush(self) -> list | None:
        """Send the queued lines with a sync of their own (caller holds the send lock)."""
        lines, self._queued = self._queued, []
        waiter = self._send(self._sock, lines) if lines and self._sock is not None else None
        if waiter is not None:
            self._unconfirmed = waiter
        return waiter

    def _flush_soon(self) -> None:
        if self._flush_pending:
            return
        self._flush_pending = True

        def later():
            time.sleep(FLUSH_AFTER)
            with self._send_lock:
                self._flush_pending = False
                if self._queued and self._sock is not None:
                    self._flush()
        threading.Thread(target=later, daemon=True, name="dnsd-flush").start()

    @staticmethod
    def _confirmed(waiter: list, timeout: float, what: str) -> bool:
        if not waiter[0].wait(timeout):
            log.warning("dnsd did not confirm %s within %.0fs", what, timeout)
            return False
        reply = waiter[1] or ""
        if reply.startswith("error"):
            log.error("dnsd rejected policy lines: %s", reply)
            return False
        return True

    def _send(self, sock: socket.socket, lines: list[str]):
        token = str(next(self._tokens))
        waiter: list = [threading.Event(), None]     # [answered, the answer line]
        self._waiting[token] = waiter
        try:
            sock.sendall(("\n".join(lines) + f"\nsync {token}\n").encode())
        except OSError as exc:
            log.warning("dnsd link: send failed: %s", exc)
            self._waiting.pop(token, None)
            self._drop(sock)
            return None
        return waiter

    def stats(self, timeout: float = 2.0) -> dict:
        waiter: list = [threading.Event(), None]     # [answered, the stats line]
        with self._send_lock:
            if self._sock is None:
                return {"connected": False}
            self._stats_waiters.append(waiter)
            try:
                self._sock.sendall(b"stats\n")
            except OSError:
                return {"connected": False}
        if not waiter[0].wait(timeout):
            return {"connected": True, "error": "no answer"}
        out: dict = {"connected": True}
        for item in (waiter[1] or "").split()[1:]:
            key, _, value = item.partition("=")
            out[key] = int(value) if value.isdigit() else value
        return out

    # -- connection ------------------------------------------------------------------------
    def _drop(self, sock: socket.socket) -> None:
        if self._sock is sock:
            self._sock = None
            self.connected.clear()
        try:
            sock.close()
        except OSError:
            pass
        for waiter in list(self._waiting.values()) + self._stats_waiters:
            waiter[1] = "error disconnected"
            waiter[0].set()
        self._waiting.clear()
        self._stats_waiters.clear()

    def _run(self) -> None:
        announced = False
        while not self._stopped:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.path)
            except OSError as exc:
                sock.close()
                if not announced:
                    log.warning("homework-dnsd not reachable at %s (%s); retrying", self.path, exc)
                    announced = True
                time.sleep(self.retry)
                continue
            announced = False
            with self._send_lock:
                self._sock = sock
                self._queued = []       # the snapshot holds whatever they said
                waiter = self._send(sock, ["reset", *self.snapshot()])
            if waiter is not None:
                log.info("connected to homework-dnsd at %s; policy snapshot sent", self.path)
                threading.Thread(target=self._confirm_snapshot, args=(waiter,), daemon=True).start()
                self._read(sock)
            self._drop(sock)
            if not self._stopped:
                log.warning("lost homework-dnsd at %s; reconnecting", self.path)
                time.sleep(self.retry)

    def _confirm_snapshot(self, waiter) -> None:
        if waiter[0].wait(10) and (waiter[1] or "").startswith("ok"):
            self.connected.set()

    def _read(self, sock: socket.socket) -> None:
        pending = b""
        while not self._stopped:
            try:
                chunk = sock.recv(1 << 16)
            except OSError:
                return
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            events = []
            for raw in lines:
                line = raw.decode(errors="replace")
                if line.startswith(("q ", "a ")):
                    events.append(line)
                elif line.startswith(("ok ", "error ")):
                    token = line.split()[1] if len(line.split()) > 1 else ""
                    waiter = self._waiting.pop(token, None)
                    if waiter:
                        waiter[1] = line
                        waiter[0].set()
                elif line.startswith("stats") and self._stats_waiters:
                    waiter = self._stats_waiters.pop(0)
                    waiter[1] = line
                    waiter[0].set()
            if events:
                try:
                    self.on_events(events)
                except Exception:
                    log.exception("handling %d dnsd events failed", len(events))
