"""Under CI (`CI=true`) or `HOMEWORK_REQUIRE_ALL=1` a skipped test is a failed test: a
suite that passes because its end-to-end tests skipped (no root, no OVS, a tool not
installed) has not tested anything. Loaded by tests/conftest.py for every test directory.

Covers a skip anywhere: `pytest.skip` in a test or a fixture (module-scoped ones
included), `skipif` marks, and module-level `pytest.skip(allow_module_level=True)` or
`pytest.importorskip` at collection. An expected failure (`xfail`, failing or passing) fails
too: it is a test that cannot fail, a skip by another name."""
from __future__ import annotations

import os

import pytest


def require_all() -> bool:
    return (os.environ.get("CI", "").lower() in ("true", "1", "yes")
            or os.environ.get("HOMEWORK_REQUIRE_ALL", "") == "1")


def _reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:   # (path, line, "Skipped: why")
        return f"{longrepr[2]} ({longrepr[0]}:{longrepr[1]})"
    return str(longrepr)


def _fail(report) -> None:
    report.outcome = "failed"
    report.longrepr = (f"{_reason(report.longrepr)}\n"
                       "A skip is a failure under CI=true / HOMEWORK_REQUIRE_ALL=1: "
                       "provide what the test needs (make deps, run as root).")


def _fail_xfail(report) -> None:
    why = report.wasxfail
    del report.wasxfail                   # else pytest reports it as xfailed/xpassed again
    report.outcome = "failed"
    report.longrepr = (f"marked xfail ({why or 'no reason given'})\n"
                       "An expected failure is a failure under CI=true / HOMEWORK_REQUIRE_ALL=1: "
                       "fix the code or the test, or remove the test.")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not require_all():
        return
    if hasattr(report, "wasxfail"):
        _fail_xfail(report)
    elif report.skipped:
        _fail(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and require_all():
        _fail(report)
