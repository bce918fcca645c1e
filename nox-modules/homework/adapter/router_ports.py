"""The router's side of its satellites in Open vSwitch (issue 15): each satellite's demux
bridge and patch ports, made and removed with ovs-vsctl (satellites.py plans the
arguments). Run in threads, off the hub: ovs-vsctl waits for the switch. One change at a
time, as each reads the demux bridge's ports before it writes."""
from __future__ import annotations

import logging
import subprocess
import threading

from .. import satellites

log = logging.getLogger("homework.adapter")

_LOCK = threading.Lock()


def sync(sat: satellites.Satellite, ports: dict[str, int], bridge: str, datapath_type: str) -> None:
    """A patch port on the router's bridge for every device port the satellite has now."""
    with _LOCK:
        listed = _vsctl(["list-ports", sat.demux_bridge], quiet=True)
        existing = set(listed.split()) if listed is not None else set()
        _vsctl(satellites.router_commands(sat, ports, bridge, datapath_type, existing))


def unplug(sat: satellites.Satellite, bridge: str) -> None:
    """A satellite no longer paired: its patch ports leave the router's bridge (the router
    sees them go down, as if unplugged) and its demux bridge goes."""
    with _LOCK:
        listed = _vsctl(["list-ports", sat.demux_bridge], quiet=True)
        _vsctl(satellites.unplug_commands(sat, bridge, set((listed or "").split())))


def _vsctl(args: list[str], quiet: bool = False) -> str | None:
    try:
        res = subprocess.run(["ovs-vsctl", "--timeout=10", *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.error("satellite ports: ovs-vsctl failed: %s", exc)
        return None
    if res.returncode != 0:
        if not quiet:
            log.error("satellite ports: ovs-vsctl exited %d: %s", res.returncode, res.stderr.strip())
        return None
    return res.stdout
