"""A device that has a lease is on the board: nine devices lease within a few seconds
(real udhcpc, homework-dhcpd answering), and the moment each client has its ACK, one
GET /ws.v1/devices lists it (the API books the daemon's answers before it lists:
DhcpdLink.settle). Real OVS, the controller with its api component, curl in the router."""
from __future__ import annotations

import json
import time

import pytest

from homelab.web import Web, web_home


@pytest.fixture(scope="module")
def home():
    with web_home({"controller": {"components": ["dhcp", "routing"]}}) as h:
        h.web = Web(h).start(mgmt=False)
        yield h


def listed(home, token: str) -> set[str]:
    out = home.router(["curl", "-s", "-m", "10", "-H", f"Authorization: Bearer {token}",
                       "http://127.0.0.1:8080/ws.v1/devices"], check=True).stdout
    return {v["mac"] for v in json.loads(out)}


def test_nine_devices_leasing_at_once_are_listed_the_moment_they_have_their_ack(home):
    token = home.web.token("read-only")
    devices = home.add_devices(9, prefix="nine")
    for dev in devices:
        dev.start_udhcpc()
    pending = {dev.mac: dev for dev in devices}
    missing = []
    deadline = time.monotonic() + 90
    while pending and time.monotonic() < deadline:
        for mac, dev in list(pending.items()):
            if dev.lease() is None:
                continue
            if mac not in listed(home, token):     # the first list after its ACK
                missing.append(mac)
            del pending[mac]
        time.sleep(0.05)
    assert not pending, f"no lease for {sorted(pending)}"
    assert missing == [], f"leased but not listed at once: {missing}"
