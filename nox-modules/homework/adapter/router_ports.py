"""The router's side of its satellites in Open vSwitch: each satellite's demux
bridge, management link and patch ports, made and removed with ovs-vsctl and ip
(satellites.py plans the arguments). Run in threads, off the hub: ovs-vsctl waits for the switch. One change at a
time, as each reads the demux bridge's ports before it writes."""
from __future__ import annotations

import logging
import subprocess
import threading

from .. import satellites

log = logging.getLogger("homework.adapter")

_LOCK = threading.Lock()
_PREPARED: set[int] = set()     # satellites whose management link this process has made


def prepare(sat: satellites.Satellite, datapath_type: str, bridge: str = "") -> None:
    """The satellite's management link on the router (demux bridge, cable, management
    port at fe80::1), so that it can reach us to pair before it has any other path. A
    found satellite's port is still on the router's `bridge` (a LAN port, at boot or until
    the household permitted it): it leaves that bridge in the same transaction."""
    with _LOCK:
        leave: list[str] = []
        if sat.found and sat.parent is None and bridge:
            on = _vsctl(["port-to-br", sat.router_port], quiet=True)
            if on is not None and on.strip() == bridge:     # one transaction: never on neither bridge
                leave = ["del-port", bridge, sat.router_port, "--"]
                log.info("satellite %d: port %s leaves %s for its cable", sat.index, sat.router_port, bridge)
        _prepare(sat, datapath_type, leave)


def give_back(sat: satellites.Satellite, bridge: str) -> None:
    """A found satellite denied or forgotten: its port is a LAN port of `bridge` again."""
    with _LOCK:
        listed = _vsctl(["list-ports", sat.demux_bridge], quiet=True)
        args = satellites.give_back_commands(sat, bridge, set((listed or "").split()))
        if args:
            _vsctl(args)
        log.info("satellite %d: port %s given back to %s", sat.index, sat.router_port, bridge)


def _prepare(sat: satellites.Satellite, datapath_type: str, before: list[str] | None = None) -> None:
    """Made once per process, its cable locked (cable_guard.py): the cable may have been
    swapped while no controller watched it (a reboot, a restart), so it carries only the
    management link until the satellite's next session. That session's sync makes it
    first if it comes before the start-up thread, so the lock never lands after it."""
    if sat.index in _PREPARED:
        return
    args = (before or []) + satellites.management_commands(sat, datapath_type)
    lock = satellites.cable_lock_commands(sat) if sat.parent is None else []
    _vsctl(args + (["--"] + lock if lock else []))
    _address(sat, datapath_type)
    _PREPARED.add(sat.index)


def sync(sat: satellites.Satellite, ports: dict[str, int], bridge: str, datapath_type: str,
         children: frozenset[int] = frozenset(), address: bool = False) -> None:
    """A patch port on the router's bridge for every device port the satellite has now
    (`children`: its ports that carry other satellites instead); `address`: set the
    management port's address again too (a new session: Open vSwitch may have restarted
    and made the port afresh)."""
    with _LOCK:
        if address:
            _prepare(sat, datapath_type)
        listed = _vsctl(["list-ports", sat.demux_bridge], quiet=True)
        existing = set(listed.split()) if listed is not None else set()
        args = satellites.router_commands(sat, ports, bridge, datapath_type, existing, children)
        if address:     # a new session, admitted with the paired certificate: the cable opens
            unlock = satellites.cable_unlock_commands(sat)
            args += (["--"] + unlock) if args and unlock else unlock
        if args:
            _vsctl(args)
        if address:
            _address(sat, datapath_type)


def lock_cable(sat: satellites.Satellite) -> None:
    """Its cable's carrier dropped: the management VLAN alone until it connects again."""
    with _LOCK:
        _vsctl(satellites.cable_lock_commands(sat))


def unplug(sat: satellites.Satellite, bridge: str) -> None:
    """A satellite no longer paired: its patch ports leave the router's bridge (the router
    sees them go down, as if unplugged) and its demux bridge goes."""
    with _LOCK:
        listed = _vsctl(["list-ports", sat.demux_bridge], quiet=True)
        args = satellites.unplug_commands(sat, bridge, set((listed or "").split()))
        if args:
            _vsctl(args)


def _address(sat: satellites.Satellite, datapath_type: str) -> None:
    cable = satellites.cable_up_command(sat)
    if cable is not None:       # a cable not plugged in yet (no interface) comes up when it appears
        try:
            subprocess.run(cable, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.info("satellite %d cable: %s", sat.index, exc)
    for cmd in satellites.management_address_commands(sat, datapath_type):
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.error("satellite %d management link: %s failed: %s", sat.index, cmd[0], exc)
            return
        if res.returncode != 0:
            log.error("satellite %d management link: %s exited %d: %s", sat.index, " ".join(cmd),
                      res.returncode, res.stderr.strip())
            return


def _vsctl(args: list[str], quiet: bool = False) -> str | None:
    try:
        res = subprocess.run(["ovs-vsctl", "--timeout=10", *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.error("satellite ports: ovs-vsctl failed: %s", exc)
        return None
    if res.returncode != 0 and "Error detected while setting up" in res.stderr:
        # The transaction is kept, but an interface (a satellite's cable not plugged in
        # yet) does not exist: Open vSwitch takes it when it appears.
        log.info("satellite ports: %s", res.stderr.strip().splitlines()[0])
        return res.stdout
    if res.returncode != 0:
        if not quiet:
            log.error("satellite ports: ovs-vsctl exited %d: %s", res.returncode, res.stderr.strip())
        return None
    return res.stdout
