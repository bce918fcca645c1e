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
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)
DELAY_SECONDS = 1.0      # lets the API/CLI answer reach the caller before the sockets close
REQUESTED_ENV = "HOMEWORK_RESTART_REQUESTED"   # epoch seconds of the request, across the exec
MEASURED_FILE = "restart-seconds"              # in the state dir: how long the last one took


def process_age(stat: str = "/proc/self/stat", uptime: str = "/proc/uptime") -> float | None:
    """Seconds since this process started (its imports included), from the kernel."""
    try:
        start_ticks = int(Path(stat).read_text().rsplit(")", 1)[1].split()[19])
        now = float(Path(uptime).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, now - start_ticks / os.sysconf("SC_CLK_TCK"))


class Estimate:
    """How long an in-place restart takes on this router, for the household's "back in
    about N s": the last one measured (kept in the state dir, which a factory reset keeps),
    else this start's own time (the imports dominate both) plus the stop."""

    def __init__(self, state_dir: Path | str, started_in: float | None = None):
        self.path = Path(state_dir) / MEASURED_FILE
        self.started_in = started_in

    def seconds(self) -> int:
        try:
            last = float(self.path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            last = (self.started_in or 10.0) + DELAY_SECONDS + 2.0
        return max(5, math.ceil(last * 1.2))

    def back(self, requested: str | None, now: float | None = None) -> float | None:
        """At a start: if it was a restart in place, record how long it took."""
        try:
            took = (time.time() if now is None else now) - float(requested or "")
        except ValueError:
            return None
        if not 0 < took < 3600:
            return None
        try:
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(f"{took:.1f}\n")
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("cannot record the restart's duration: %s", exc)
        return took


def command_line() -> list[str]:
    """The interpreter and its exact arguments (`python3 -m homework --config ...`):
    sys.argv alone loses `-m`."""
    return list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])


class InPlace:
    def __init__(self, stop: Callable[[], None], later: Callable[[float, Callable], None],
                 execv: Callable[[str, list[str]], None] = os.execv, estimate: Estimate | None = None,
                 announce: Callable[[str, int], None] | None = None):
        self._stop = stop
        self._later = later          # later(seconds, fn): run fn once, soon (eventlet hub)
        self._execv = execv
        self.estimate = estimate
        self._announce = announce    # announce(why, back_in): the board says so (a `restart` event)
        self.pending: str | None = None
        self._then: Callable[[], None] | None = None

    def back_in(self) -> int | None:
        """Seconds until the controller is expected to answer again (None: not known)."""
        return self.estimate.seconds() if self.estimate is not None else None

    def __call__(self, why: str, then: Callable[[], None] | None = None) -> None:
        """Restart DELAY_SECONDS from now; `then` runs once the controller has stopped (the
        factory reset deletes state.db there). A second request while one is pending is
        folded in."""
        if self.pending is not None:
            return
        self.pending = why
        self._then = then
        back_in = self.back_in()
        log.warning("restarting the controller in place: %s (back in about %s s)", why, back_in or "?")
        if self._announce is not None:
            try:
                self._announce(why, back_in or 0)
            except Exception:    # noqa: BLE001 - telling the board must not stop the restart
                log.exception("announcing the restart")
        os.environ[REQUESTED_ENV] = f"{time.time():.3f}"
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


def back_in(restart) -> int | None:
    """The expected seconds of `ctx.restart` (an InPlace, or a test's stand-in without one)."""
    fn = getattr(restart, "back_in", None)
    return fn() if callable(fn) else None
