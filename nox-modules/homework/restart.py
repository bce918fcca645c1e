"""Restart the controller in place: after a restore or a factory reset the
components must read state.db again, and teaching each of them to reload is more code
than starting over. main.py wires `ctx.restart`; a command calls it, answers, and a
moment later the controller stops like on SIGTERM (state flushed, control socket
removed) and execs the same interpreter with the same command line. The PID stays, so
systemd (Type=simple) and a test harness holding the process see no exit; every socket
is close-on-exec (PEP 446), so the new process binds the OpenFlow listener and the
control socket again and the switch reconnects by itself."""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)
DELAY_SECONDS = 1.0      # lets the API/CLI answer reach the caller before the sockets close


def command_line() -> list[str]:
    """The interpreter and its exact arguments (`python3 -m homework --config ...`):
    sys.argv alone loses `-m`."""
    return list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])


class InPlace:
    def __init__(self, stop: Callable[[], None], later: Callable[[float, Callable], None],
                 execv: Callable[[str, list[str]], None] = os.execv):
        self._stop = stop
        self._later = later          # later(seconds, fn): run fn once, soon (eventlet hub)
        self._execv = execv
        self.pending: str | None = None
        self._then: Callable[[], None] | None = None

    def __call__(self, why: str, then: Callable[[], None] | None = None) -> None:
        """Restart DELAY_SECONDS from now; `then` runs once the controller has stopped (the
        factory reset deletes state.db there). A second request while one is pending is
        folded in."""
        if self.pending is not None:
            return
        self.pending = why
        self._then = then
        log.warning("restarting the controller in place: %s", why)
        self._later(DELAY_SECONDS, self._restart)

    def _restart(self) -> None:
        try:
            self._stop()
        except Exception:        # noqa: BLE001 - restarting matters more than a clean stop
            log.exception("stopping before the restart")
        if self._then is not None:
            try:
                self._then()
            except Exception:    # noqa: BLE001
                log.exception("before the restart")
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        argv = command_line()
        self._execv(sys.executable, argv)
