"""Factory reset end to end: real OVS, the real controller with the api
component, udhcpc and TCP connects in a device namespace, curl to the ws.v1 API inside
the router namespace.

A permitted device reaches the internet and a token works; `homework factory-reset
--yes` erases the controller's state and restarts it in place (same PID, the switch
reconnects); the device is then a pending stranger without internet, the old token is
refused, and the admin password from the password file (the router's label) logs in."""
from __future__ import annotations

import json

import pytest

from homelab import WEB_ADDR
from homelab.routing import can_connect, permitted_device, wait_until
from homelab.web import API_PORT, web_home


@pytest.fixture(scope="module")
def home():
    with web_home({"controller": {"components": ["dhcp", "routing"]}}) as h:
        yield h


def api_status(home, path: str, *args: str) -> int:
    """HTTP status of one ws.v1 call straight to the controller (127.0.0.1 in the router)."""
    out = home.router(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", *args,
                       f"http://127.0.0.1:{API_PORT}/ws.v1/{path}"], check=False).stdout
    return int(out or 0)


def states(home) -> dict:
    return {d["mac"]: d["state"] for d in json.loads(home.homework("--json", "devices", check=True).stdout)}


def test_factory_reset_forgets_devices_and_tokens_and_keeps_the_password(home):
    dev = permitted_device(home, "laptop")
    wait_until(lambda: can_connect(dev, WEB_ADDR, 80, timeout=0.5), 10, "the permitted device reaches the internet")
    token = json.loads(home.homework("--json", "token", "create", "script", "--role", "admin",
                                     check=True).stdout)["token"]
    bearer = ("-H", f"Authorization: Bearer {token}")
    assert api_status(home, "devices", *bearer) == 200

    refused = home.homework("factory-reset")
    assert refused.returncode != 0 and "--yes" in refused.stderr          # nothing erased without --yes
    assert states(home) == {dev.mac: "permitted"}

    pid, started = home._controller.pid, home.controller_log().count("components loaded")
    out = home.homework("factory-reset", "--yes", check=True).stdout
    assert "restarting" in out
    wait_until(lambda: home.controller_log().count("components loaded") > started, 20,
               "the controller starts again by itself")
    assert home.controller_running() and home._controller.pid == pid      # in place: exec, not exit
    home.wait_connected()
    assert "factory reset: deleted state.db" in home.controller_log()

    dev.renew()
    wait_until(lambda: states(home) == {dev.mac: "pending"}, 20, "the device is a pending stranger again")
    assert not can_connect(dev, WEB_ADDR, 80, timeout=1)
    assert api_status(home, "devices", *bearer) == 401                    # the old token is gone
    login = ("-X", "POST", "-H", "Content-Type: application/json",
             "-d", json.dumps({"password": home.admin_password}))
    assert api_status(home, "login", *login) == 200                       # the label's password
