"""The settings page's WAN status (homework/system.py wan_status): the lease the
image's udhcpc hook (image/guest/udhcpc-wan) writes, read for GET /ws.v1/system."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from homework import system

HOOK = Path(__file__).resolve().parents[2] / "image" / "guest" / "udhcpc-wan"


def run_hook(tmp_path, action: str, **env) -> None:
    """The image's hook with its `ip` commands stubbed out and /run/homework moved to tmp_path."""
    stub = tmp_path / "bin"
    stub.mkdir(exist_ok=True)
    (stub / "ip").write_text("#!/bin/sh\nexit 0\n")
    (stub / "ip").chmod(0o755)
    script = HOOK.read_text().replace("RUN=/run/homework", f"RUN={tmp_path}")
    subprocess.run(["sh", "-c", script, "udhcpc-wan", action], check=True, capture_output=True,
                   env={**os.environ, "PATH": f"{stub}:{os.environ['PATH']}", **env})


LEASE = {"interface": "enp2s0", "ip": "198.51.100.23", "mask": "24", "router": "198.51.100.1 198.51.100.2",
         "dns": "198.51.100.1 9.9.9.9", "lease": "600"}


def test_the_hooks_lease_file_is_the_wan_status(tmp_path):
    run_hook(tmp_path, "bound", **LEASE)
    lease = tmp_path / "wan-lease.env"
    wan = system.wan_status(str(lease))
    assert wan["up"] and wan["address"] == "198.51.100.23/24" and wan["interface"] == "enp2s0"
    assert wan["gateway"] == "198.51.100.1" and wan["dns"] == ["198.51.100.1", "9.9.9.9"]
    assert wan["lease_seconds"] == 600 and 0 <= wan["up_for"] < 60
    assert system.wan_status(str(lease), now=wan["up_since"] + 3600)["up_for"] == 3600


def test_a_renewal_of_the_same_address_keeps_up_since_and_a_new_address_restarts_it(tmp_path):
    run_hook(tmp_path, "bound", **LEASE)
    lease = tmp_path / "wan-lease.env"
    lease.write_text(re.sub(r"UP_SINCE=\d+", "UP_SINCE=1000", lease.read_text()))    # bound long ago
    run_hook(tmp_path, "renew", **LEASE)
    assert system.wan_status(str(lease))["up_since"] == 1000
    run_hook(tmp_path, "renew", **{**LEASE, "ip": "198.51.100.99"})
    assert system.wan_status(str(lease))["up_since"] > 1000


def test_no_lease_and_no_configuration(tmp_path):
    run_hook(tmp_path, "bound", **LEASE)
    run_hook(tmp_path, "deconfig", interface="enp2s0")      # the lease went: the hook removes the file
    assert system.wan_status(str(tmp_path / "wan-lease.env")) == {"up": False}
    assert system.wan_status("") is None


def test_system_info_carries_the_wan_status(tmp_path, clock):
    from test_backup import router
    core = router(tmp_path / "r", clock)
    assert core.commands.call("system-info")["wan"] is None           # no [router] wan_lease_file
