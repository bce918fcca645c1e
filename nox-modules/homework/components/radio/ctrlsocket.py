"""One hostapd control socket, as a monitor: connect, ATTACH, read events, never block.

One job: keep an attachment to `<ctrl_dir>/<ifname>` alive and hand back the event lines.
The socket is a unix datagram socket autobound to an abstract address (no file to clean
up; hostapd answers to whatever address sent the request). Everything is non-blocking:
`ATTACH` is sent and its `OK` read by a later `receive()`, so a slow or absent hostapd
never holds up the controller's loop.

Why the refresh: hostapd drops a monitor silently when sends to it keep failing (our queue
full) and forgets every monitor when it restarts; neither is visible from here. So after
`QUIET` seconds without a datagram the attachment is renewed (DETACH, close, connect,
ATTACH), which also notices a vanished hostapd (ENOENT/ECONNREFUSED): then it retries
every `RETRY` seconds. hostapd's own CTRL-EVENT-TERMINATING starts that at once.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Callable

RETRY = 5.0              # seconds between connection attempts while hostapd is away
QUIET = 30.0             # renew the attachment after this long without a datagram
ATTACH_TIMEOUT = 3.0     # no OK to ATTACH within this: start again
MAX_PER_CALL = 512       # datagrams read per receive(): a flood cannot monopolise the loop
BUFSIZE = 4096
TERMINATING = "CTRL-EVENT-TERMINATING"
# hostapd sends RX-PROBE-REQUEST only to monitors that ask; a monitor that wants only the
# stations' comings and goings (a satellite's agent) attaches plainly and is not woken by
# every phone probing nearby.
ATTACH_WITH_PROBES = b"ATTACH probe_rx_events=1"
ATTACH = b"ATTACH"


class MonitorSocket:
    def __init__(self, path: str, clock: Callable[[], float], on_error: Callable[[str, bool], None],
                 attach: bytes = ATTACH_WITH_PROBES, on_attached: Callable[[], None] = lambda: None):
        self.path = path
        self.attach = attach
        self.clock = clock
        # every failure, with whether it is the first of its episode (callers count each and
        # say the first); on_attached: attached again after a failure
        self.on_error = on_error
        self.on_attached = on_attached
        self.failing = False
        self.sock: socket.socket | None = None
        self.attached = False
        self._asked_at = 0.0            # when ATTACH was sent
        self._next_try = 0.0
        self._last_datagram = 0.0

    @property
    def ifname(self) -> str:
        return os.path.basename(self.path)

    # -- life cycle ---------------------------------------------------------------------------
    def _open(self) -> None:
        now = self.clock()
        if now < self._next_try:
            return
        self._next_try = now + RETRY
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind("")               # Linux autobind: an abstract address hostapd can answer
            sock.setblocking(False)
            sock.connect(self.path)
            sock.send(self.attach)
        except OSError as exc:
            sock.close()
            self._failed(f"{self.path}: {exc.strerror or exc}")
            return
        self.sock, self.attached = sock, False
        self._asked_at = self._last_datagram = now

    def close(self, detach: bool = True) -> None:
        if self.sock is None:
            return
        if detach and self.attached:
            try:
                self.sock.send(b"DETACH")
            except OSError:
                pass                    # hostapd already gone: nothing to detach from
        self.sock.close()
        self.sock, self.attached = None, False

    def _restart(self, why: str) -> None:
        self.close(detach=False)
        self._next_try = 0.0 if why == "quiet" else self.clock() + RETRY
        if why != "quiet":
            self._failed(f"{self.path}: {why}")

    def _failed(self, why: str) -> None:
        first, self.failing = not self.failing, True
        self.on_error(why, first)

    # -- reading -----------------------------------------------------------------------------
    def receive(self) -> list[str]:
        """Event lines received since the last call (connecting or renewing as needed)."""
        if self.sock is None:
            self._open()
            if self.sock is None:
                return []
        events: list[str] = []
        for _ in range(MAX_PER_CALL):
            try:
                data = self.sock.recv(BUFSIZE)
            except BlockingIOError:
                break
            except OSError as exc:
                self._restart(exc.strerror or str(exc))
                return events
            self._last_datagram = self.clock()
            text = data.decode("utf-8", "replace")
            if TERMINATING in text:         # hostapd stops: its successor will not know us
                self._restart("hostapd stopped (CTRL-EVENT-TERMINATING)")
                return events
            if text.startswith("<"):
                events.append(text)
            elif text.startswith("OK") and not self.attached:
                self.attached = True
                if self.failing:
                    self.failing = False
                    self.on_attached()
            elif text.startswith("FAIL") and not self.attached:
                self._restart("ATTACH refused")
                return events
        now = self.clock()
        if not self.attached and now - self._asked_at > ATTACH_TIMEOUT:
            self._restart("no answer to ATTACH")
        elif self.attached and now - self._last_datagram > QUIET:
            self.close()                # renew: also finds out whether hostapd is still there
            self._restart("quiet")
        return events
