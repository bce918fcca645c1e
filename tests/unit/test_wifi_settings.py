"""The Wi-Fi SSID and passphrase (homework/wifi.py, api/wifi.py, cli_wifi.py): the
802.11/WPA2 limits, wifi.env written atomically in a form sh reads back exactly, the apply
hook run after a change, nothing changed on a bad value, and the passphrase never returned."""
from __future__ import annotations

import argparse
import os
import stat
import subprocess
import time

import pytest

from homework import cli_wifi, wifi
from homework.commands import CommandError
from homework.flows import Datapath
from conftest import make_core
from test_api import Api
from test_backup import router

OLD = "first-boot-passphrase"


@pytest.fixture
def core(tmp_path, clock):
    core = router(tmp_path / "r", clock)
    (tmp_path / "r" / "wifi.env").write_text(f"SSID=Homework-ABCD\nPASSPHRASE={OLD}\n")   # homework-firstboot's form
    return core


def env_file(core):
    return core.config.state_dir / "wifi.env"


def sourced(path) -> tuple[str, str]:
    """What the image's shell scripts (homework-wifi) get from the file."""
    out = subprocess.run(["sh", "-c", '. "$1"; printf "%s\\0%s" "$SSID" "$PASSPHRASE"', "sh", str(path)],
                         capture_output=True, text=True, check=True).stdout
    ssid, passphrase = out.split("\0")
    return ssid, passphrase


@pytest.mark.parametrize("ssid", ["a", "Homework-ABCD", "é" * 16, "x" * 32, "it's \"home\" $HOME `id`"])
def test_ssids_of_1_to_32_bytes_of_utf8_are_accepted(ssid):
    assert wifi.check_ssid(ssid) == ssid


@pytest.mark.parametrize("ssid, why", [("", "1-32 bytes"), ("x" * 33, "32 bytes"), ("é" * 17, "this one is 34"),
                                       ("two\nlines", "control"), ("tab\there", "control"), (None, "1-32"),
                                       (42, "1-32")])
def test_bad_ssids_are_refused_with_a_reason(ssid, why):
    with pytest.raises(CommandError, match=why):
        wifi.check_ssid(ssid)


@pytest.mark.parametrize("psk", ["12345678", "x" * 63, "a b ' \" $ ` \\ ~", "0123456789abcdefABCDEF" + "0" * 42])
def test_passphrases_of_8_to_63_printable_ascii_or_64_hex_are_accepted(psk):
    assert wifi.check_passphrase(psk) == psk


@pytest.mark.parametrize("psk, why", [("1234567", "this one has 7"), ("x" * 64, "has 64"), ("x" * 65, "has 65"),
                                      ("pässphrase", "printable ASCII"), ("tab\tinside", "printable ASCII"),
                                      (None, "8-63"), (12345678, "8-63")])
def test_bad_passphrases_are_refused_with_a_reason(psk, why):
    with pytest.raises(CommandError, match=why):
        wifi.check_passphrase(psk)


def test_set_wifi_writes_a_root_only_file_the_shell_reads_back_exactly(core):
    assert core.commands.call("wifi-info")["ssid"] == "Homework-ABCD"     # the first boot's bare form
    ssid, psk = "Café 'Ana' $HOME", "it's a \"secret\" $(id) `x`"
    result = core.commands.call("set-wifi", ssid=ssid, passphrase=psk)
    assert result["ssid"] == ssid and result["passphrase_set"] and psk not in repr(result)
    assert result["applying"] is False and "no [wifi] apply_command" in result["note"]
    assert sourced(env_file(core)) == (ssid, psk)
    assert stat.S_IMODE(os.stat(env_file(core)).st_mode) == 0o600
    assert [p.name for p in env_file(core).parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_rename_keeps_the_passphrase_and_errors_change_nothing(core):
    core.commands.call("set-wifi", ssid="Renamed")
    assert sourced(env_file(core)) == ("Renamed", OLD)
    before = env_file(core).read_bytes()
    for bad in ({"ssid": "ok", "passphrase": "short"}, {"ssid": "", "passphrase": "long enough"},
                {"ssid": "x" * 33, "passphrase": "long enough"}):
        with pytest.raises(CommandError):
            core.commands.call("set-wifi", **bad)
    assert env_file(core).read_bytes() == before
    env_file(core).unlink()
    with pytest.raises(CommandError, match="none is set yet"):
        core.commands.call("set-wifi", ssid="No passphrase")
    assert not env_file(core).exists()


def wait_applied(core, timeout=10.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        last = core.commands.call("wifi-info")["last_apply"]
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError("the apply command did not finish")


def hooked(tmp_path, clock, command: str):
    """A router whose [wifi] apply_command is `command`."""
    path = tmp_path / "h"
    path.mkdir()
    core = make_core(path, components=("dhcp", "routing", "api"), clock=clock, wifi_apply_command=command,
                     radio_interfaces=("wlan0",), dns_control="", dns_intercept=False)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1}))
    return core


def test_the_apply_command_runs_after_the_file_is_written(tmp_path, clock):
    seen, hook = tmp_path / "seen", tmp_path / "apply.sh"
    hook.write_text(f'#!/bin/sh\n. "{tmp_path / "h" / "wifi.env"}"\nprintf "%s|%s" "$SSID" "$PASSPHRASE" > "{seen}"\n')
    hook.chmod(0o755)
    core = hooked(tmp_path, clock, str(hook))
    assert core.commands.call("wifi-info")["interfaces"] == ["wlan0"]
    result = core.commands.call("set-wifi", ssid="Home", passphrase="new passphrase")
    assert result["applying"] and "restarts" in result["note"]
    last = wait_applied(core)
    assert last["ok"] and last["error"] == "" and seen.read_text() == "Home|new passphrase"


def test_a_failing_apply_command_is_reported_and_the_settings_stay_saved(tmp_path, clock):
    core = hooked(tmp_path, clock, "sh -c 'echo no access point here >&2; exit 3'")
    core.commands.call("set-wifi", ssid="Home", passphrase="new passphrase")
    last = wait_applied(core)
    assert not last["ok"] and "no access point here" in last["error"]
    assert sourced(env_file(core)) == ("Home", "new passphrase")


def test_api_wifi_is_admin_only_to_change_and_never_returns_the_passphrase(core):
    api = Api(core)
    reader, admin = api.token("read-only"), api.token("admin")
    r = api.call("GET", "wifi", token=reader)
    assert r.status_int == 200 and r.json["ssid"] == "Homework-ABCD" and r.json["passphrase_set"], r.text
    assert OLD not in r.text
    new = {"ssid": "Our home", "passphrase": "a brand new passphrase"}
    assert api.call("POST", "wifi", new, token=reader).status_int == 403
    before = env_file(core).read_bytes()
    r = api.call("POST", "wifi", {"ssid": "Our home", "passphrase": "1234567"}, token=admin)
    assert r.status_int == 400 and "passphrase" in r.json["error"] and "1234567" not in r.text, r.text
    r = api.call("POST", "wifi", {"ssid": "x" * 33, "passphrase": "long enough"}, token=admin)
    assert r.status_int == 400 and "32 bytes" in r.json["error"]
    assert api.call("POST", "wifi", {"name": "x", "passphrase": "long enough"}, token=admin).status_int == 400
    assert env_file(core).read_bytes() == before                          # nothing changed on error
    r = api.call("POST", "wifi", new, token=admin)
    assert r.status_int == 200 and r.json["ssid"] == "Our home" and new["passphrase"] not in r.text, r.text
    assert sourced(env_file(core)) == ("Our home", new["passphrase"])
    r = api.call("POST", "wifi", {"ssid": "Renamed"}, token=admin)       # rename only
    assert r.status_int == 200 and sourced(env_file(core)) == ("Renamed", new["passphrase"])


def test_cli_wifi_shows_renames_and_reads_the_passphrase_from_a_file(tmp_path):
    calls = []

    def call(sock, cmd, **kw):
        calls.append((cmd, kw))
        return {"ssid": "Home", "interfaces": ["wlan0"], "passphrase_set": True}

    secret = tmp_path / "psk"
    secret.write_text("from a file\nsecond line\n")
    ns = argparse.Namespace(cmd="wifi", ssid=None, passphrase_file=None)
    assert cli_wifi.run(ns, call, "sock")[0]["ssid"] == "Home" and calls[-1] == ("wifi-info", {})
    cli_wifi.run(argparse.Namespace(cmd="wifi", ssid="New", passphrase_file=None), call, "sock")
    assert calls[-1] == ("set-wifi", {"ssid": "New"})
    cli_wifi.run(argparse.Namespace(cmd="wifi", ssid=None, passphrase_file=str(secret)), call, "sock")
    assert calls[-2:] == [("wifi-info", {}), ("set-wifi", {"ssid": "Home", "passphrase": "from a file"})]
    assert cli_wifi.run(argparse.Namespace(cmd="devices"), call, "sock") is None
