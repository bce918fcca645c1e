"""Fixtures for end-to-end tests on real Open vSwitch with real DHCP clients.

`home` is one emulated home (router + internet + controller) per test module; the
autouse `clean_home` fixture removes every device a test added and makes sure the
controller is running again before the next test. Logs of every run are copied to
test-artifacts/<run id>/ (set HOMELAB_ARTIFACTS= to switch that off).
"""
from __future__ import annotations

import os
import shutil

import pytest

from homelab import BARE, REPO, Home

os.environ.setdefault("HOMELAB_ARTIFACTS", str(REPO / "test-artifacts"))


def _can_run_home() -> str | None:
    """Why no end-to-end test can run on this machine, or None. CI runs as root after
    `make deps` (scripts/deps.sh installs every tool named here and in have_web), so under
    CI this is always None; and were it not, require_all.py turns the skip into a failure."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, OVS)"
    for tool in ("ovs-vswitchd", "ovsdb-server", "ip", "ethtool"):
        if not shutil.which(tool):
            return f"{tool} not installed (make deps)"
    from homelab.web import have_web
    return have_web()


@pytest.fixture(scope="session", autouse=True)
def can_run_here():
    """The one place an end-to-end test is skipped for what the machine lacks (root, Open
    vSwitch, lighttpd...): before any module's home is made, for every test in tests/e2e."""
    why = _can_run_home()
    if why:
        pytest.skip(why)


def emulated_home(config: dict | None = None, **kw):
    """A module's emulated home with these config overrides:
        @pytest.fixture(scope="module")
        def home():
            yield from emulated_home({"routing": {...}})"""
    with Home(config=config, **kw) as h:
        yield h


def dns_web_lab(components: tuple[str, ...], extra: dict | None = None, log_queries: bool = False, **kw):
    """A module's home with the whole DNS path (homework-dnsd, dnsmasq, these components),
    lighttpd with the Guest Board and its API: yields the started homelab.dns.DnsLab
    (its .home.web is the Web). `extra`: more config sections; `log_queries`: the internet's
    resolver logs what it is asked (DnsLab.upstream_saw); `kw` go to web_home."""
    from homelab import new_run_id
    from homelab.dns import DnsLab, dns_config
    from homelab.web import Web, web_home
    run_id = new_run_id()
    config = dns_config(run_id, components)
    config.update(extra or {})
    with web_home(config=config, run_id=run_id, **kw) as home:
        home.web = Web(home).start()
        yield DnsLab(home, log_queries=log_queries).start()


@pytest.fixture(scope="module")
def home():
    yield from emulated_home({"controller": {"components": list(BARE)}})


@pytest.fixture(autouse=True)
def api_answers_fit_the_contract(monkeypatch):
    """Every answer a test gets from the ws.v1 API through `requests` is checked against the
    checked-in OpenAPI document; one that does not fit fails the test where it was asked."""
    import requests

    from contract import CONTRACT, require
    send = requests.Session.send

    def checked_send(self, request, **kw):
        resp = send(self, request, **kw)
        require(CONTRACT.check_response(resp))
        return resp
    monkeypatch.setattr(requests.Session, "send", checked_send)


@pytest.fixture(autouse=True)
def clean_home(request):
    if "home" not in request.fixturenames:
        yield
        return
    h: Home = request.getfixturevalue("home")
    yield h
    h.remove_devices()
    if not h.controller_running():
        h.start_controller()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        h = item.funcargs.get("home") if hasattr(item, "funcargs") else None
        if isinstance(h, Home):
            report.sections.append(("controller log (last 60 lines)",
                                    "\n".join(h.controller_log().splitlines()[-60:])))
            try:
                report.sections.append(("flows", h.dump_flows()))
            except Exception as exc:  # the switch may be what broke
                report.sections.append(("flows", f"dump-flows failed: {exc}"))
