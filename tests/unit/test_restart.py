"""The in-place controller restart (restart.py): stop first, then exec the same
command line, once, a moment after the request (so the answer gets out)."""
from __future__ import annotations

import sys

from homework import restart


def test_restart_stops_then_execs_the_same_command_line_once():
    events, timers = [], []
    in_place = restart.InPlace(stop=lambda: events.append("stop"),
                               later=lambda seconds, fn: timers.append((seconds, fn)),
                               execv=lambda path, argv: events.append(("exec", path, argv)))
    in_place("restore")
    in_place("factory reset")                  # folded into the pending restart
    assert events == [] and len(timers) == 1   # nothing happens before the answer is sent
    seconds, fn = timers[0]
    assert seconds == restart.DELAY_SECONDS > 0
    fn()
    assert events == ["stop", ("exec", sys.executable, restart.command_line())]


def test_the_command_line_keeps_the_interpreters_options():
    """`python3 -m homework --config F` (the systemd unit, the homelab) must come back as it was."""
    assert restart.command_line() == list(sys.orig_argv)


def test_a_failing_stop_does_not_prevent_the_restart():
    execs = []

    def broken_stop():
        raise RuntimeError("component stop failed")
    in_place = restart.InPlace(stop=broken_stop, later=lambda seconds, fn: fn(),
                               execv=lambda path, argv: execs.append(argv))
    in_place("restore")
    assert execs == [restart.command_line()]
