"""A satellite's cable that loses its carrier carries only its management VLAN until the
paired satellite connects again with its certificate.

Why: the router's end of a satellite's cable takes every VLAN of that satellite, each one
of its device ports. Unplug the satellite, plug a laptop in, and the laptop could send
frames tagged as any of those ports, as any device on them. A swap cannot avoid a
carrier drop, and Open vSwitch counts those per interface (`link_resets`), so:
  - a count that grows locks the cable: its port's `trunks` becomes the management VLAN
    alone (whatever is plugged in can still reach fe80::1, to connect or to ask to pair),
    and an OpenFlow session the satellite still holds is closed, so that it proves itself
    again (a session can outlive a quick swap and back);
  - the satellite's next session, which the adapter admits only with its paired
    certificate, unlocks it.
The lock lives in Open vSwitch's database; every new session of the satellite clears it
(router_ports.sync), so no state here is needed for that. A swap while no controller
watched (a router reboot restarts the counts; a controller restart misses the change) is
covered by locking every cable when the controller starts (router_ports.prepare). A satellite
that loses only its controller connection (the cable in place) is not locked: it keeps
forwarding its devices' flows (fail-secure). Not covered: a switch put in between without
a carrier drop (only 802.1AE MACsec could tell). Cables between satellites in a tree (the
child's cable is a port of its parent) are locked by the adapter from the parent's
port-status messages (osken_app._tree_cable_dropped).

CableGuard is the decision, with no I/O; CableWatch feeds it from `ovsdb-client monitor`.
"""
from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import threading
from collections.abc import Callable, Iterable

from ..satellites import Satellite

log = logging.getLogger("homework.adapter")


class CableGuard:
    def __init__(self, sats: Iterable[Satellite]):
        self.cables = {s.router_port: s for s in sats if s.parent is None}
        self.locked: set[int] = set()                 # satellite indexes whose cable this run locked
        self.latest: dict[str, int] = {}              # cable -> its link_resets as last seen
        self.baseline: dict[str, int] = {}            # cable -> link_resets when it was last trusted
        self._lock = threading.Lock()

    def observe(self, cable: str, resets: int) -> Satellite | None:
        """Open vSwitch's count of carrier changes on an interface; the satellite whose
        cable must be locked now, if this is its cable and the count grew."""
        sat = self.cables.get(cable)
        if sat is None:
            return None
        with self._lock:
            self.latest[cable] = resets
            base = self.baseline.setdefault(cable, resets)
            if resets == base or sat.index in self.locked:
                return None
            self.locked.add(sat.index)
            return sat

    def session_started(self, sat: Satellite) -> None:
        """The satellite connected with its paired certificate (its cable is unlocked with
        its other ports): the carrier changes so far were its own."""
        if sat.parent is not None:
            return
        with self._lock:
            if sat.router_port in self.latest:
                self.baseline[sat.router_port] = self.latest[sat.router_port]
            self.locked.discard(sat.index)


def interface_rows(update: dict) -> list[tuple[str, int]]:
    """(name, link_resets) of each interface row in one line of `ovsdb-client monitor
    --format=json Open_vSwitch Interface name,link_resets`: the initial rows, then the
    new values of each change (an "old" row carries only the changed column's old value)."""
    headings = update.get("headings") or []
    try:
        action, name, resets = headings.index("action"), headings.index("name"), headings.index("link_resets")
    except ValueError:
        return []
    out = []
    for row in update.get("data") or []:
        if not isinstance(row, list) or len(row) != len(headings) or row[action] not in ("initial", "insert", "new"):
            continue
        if isinstance(row[name], str) and isinstance(row[resets], int):
            out.append((row[name], row[resets]))
    return out


class CableWatch:
    """`ovsdb-client monitor` of the interfaces' carrier-change counts, each change handed
    to `on_change(name, link_resets)` as it comes (no polling: a swap is seen at once).
    Restarted a second after it ends. Reads with select, so it never blocks a hub."""

    COMMAND = ["ovsdb-client", "monitor", "--format=json", "Open_vSwitch", "Interface", "name,link_resets"]

    def __init__(self, on_change: Callable[[str, int], None]):
        self.on_change = on_change
        self.stopped = threading.Event()
        self.proc: subprocess.Popen | None = None

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self._follow()
            except OSError as exc:
                log.error("satellite cables: ovsdb-client monitor failed: %s", exc)
            self.stopped.wait(1.0)

    def stop(self) -> None:
        self.stopped.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()

    def _follow(self) -> None:
        self.proc = proc = subprocess.Popen(self.COMMAND, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            stdin=subprocess.DEVNULL)
        assert proc.stdout is not None     # stdout=PIPE
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        buffer = b""
        try:
            while not self.stopped.is_set():
                ready, _, _ = select.select([fd], [], [], 1.0)
                if not ready:
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._line(line)
        finally:
            if proc.poll() is None:
                proc.terminate()
            proc.wait()
            proc.stdout.close()

    def _line(self, line: bytes) -> None:
        try:
            update = json.loads(line)
        except ValueError:
            return          # not an update (ovsdb-client prints nothing else with --format=json)
        if isinstance(update, dict):
            for name, resets in interface_rows(update):
                self.on_change(name, resets)
