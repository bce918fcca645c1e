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


def test_the_board_is_told_and_the_estimate_learns_from_the_last_restart(tmp_path, monkeypatch):
    monkeypatch.delenv(restart.REQUESTED_ENV, raising=False)
    estimate = restart.Estimate(tmp_path, started_in=40.0)
    told = []
    in_place = restart.InPlace(stop=lambda: None, later=lambda seconds, fn: None, execv=lambda *a: None,
                               estimate=estimate, announce=lambda why, back_in: told.append((why, back_in)))
    first = in_place.back_in()
    assert first >= 40 and restart.back_in(in_place) == first          # its own start, before any restart
    in_place("factory reset")
    assert told == [("factory reset", first)]
    asked = float(__import__("os").environ.pop(restart.REQUESTED_ENV))
    # the next start finds how long it took, and the next estimate says so
    assert restart.Estimate(tmp_path).back(str(asked), now=asked + 95.0) == 95.0
    assert restart.Estimate(tmp_path).seconds() == 114                  # 95 s and a margin
    assert restart.Estimate(tmp_path).back(None) is None and restart.Estimate(tmp_path).back("junk") is None
    assert restart.back_in(lambda why, then=None: None) is None         # a stand-in knows nothing


def test_the_process_age_comes_from_the_kernel():
    age = restart.process_age()
    assert age is not None and age >= 0
