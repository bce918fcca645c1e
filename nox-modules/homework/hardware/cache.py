"""The controller's hardware report: gathered in a real thread (it runs ethtool, iw and
dmesg, and reads sysfs), at most once per MAX_AGE seconds, one gathering at a time; the
callers of a stale report wait for the fresh one in their own green thread, never on the
controller's event loop."""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from collections.abc import Callable

from ..worker import offload
from . import collect, report

log = logging.getLogger("homework.hardware")
MAX_AGE = 15.0


class HardwareReport:
    """`roles(ports)`: what each port is for; `extra_ports()`: the router's ports with no
    hardware behind them (the emulated home's veths on the switch), read on the caller's
    side (the switch's port table belongs to the event loop) and handed to the thread."""

    def __init__(self, roles: Callable[[tuple[str, ...]], report.Roles], sources: collect.Sources | None = None,
                 extra_ports: Callable[[], tuple[str, ...]] = tuple, clock=time.monotonic):
        self.roles = roles
        self.sources = sources or collect.Sources()
        self.extra_ports = extra_ports
        self.clock = clock
        self._lock = threading.Lock()
        self._report: dict | None = None
        self._at = 0.0

    def _gather(self, extra: tuple[str, ...]) -> dict:
        facts = collect.gather(self.sources, extra)
        return report.build(facts, self.roles(extra))

    def get(self) -> dict:
        with self._lock:
            if self._report is None or self.clock() - self._at > MAX_AGE:
                try:
                    self._report = offload(self._gather, tuple(self.extra_ports()))
                except Exception:        # a report is never worth a failed settings page
                    log.exception("gathering the hardware report failed")
                    return self._report or {"ports": [], "radios": [], "unusable": [], "problems": [
                        {"severity": "error", "subject": "report",
                         "message": "The router could not read its hardware just now (see its log)."}]}
                self._at = self.clock()
            return self._report


def config_roles(config, interfaces_env: str = "",
                 router_conf: str = "") -> Callable[[tuple[str, ...]], report.Roles]:
    """Roles from the bring-up's file when there is one (the image), else from the config:
    the configured LAN ports and the other ports on the router's switch are the LAN."""
    def roles(on_switch: tuple[str, ...] = ()) -> report.Roles:
        if interfaces_env:
            found = report.roles_from_files(Path(interfaces_env), Path(router_conf) if router_conf else None)
            if found is not None:
                return found
        cables = tuple(s.rsplit(":", 1)[-1] for s in config.satellites if isinstance(s, str) and ":" in s)
        return report.Roles(wan=config.wanwatch_interface if "wanwatch" in config.components else "",
                            wan_reason="the controller's configuration names it ([wanwatch] interface)",
                            lan=tuple(dict.fromkeys((*config.lan_ports, *on_switch))),
                            wifi=tuple(config.radio_interfaces),
                            satellite_cables=cables)
    return roles
