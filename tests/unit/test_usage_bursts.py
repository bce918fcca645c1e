"""Burst alerts ("tell us when this device moves more than X in Y minutes"): the setting's
one check, the alert raised once per burst and again only after the device fell back under
its amount, a setting that survives a restart and goes with a forgotten device, the device
view, the backup, and the API."""
import pytest

from conftest import make_core
from homework.commands import CommandError
from homework.components.backup import contents
from homework.components.usage.bursts import Burst, parse, size_text
from test_api import Api

A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
MB = 10**6


def new_core(tmp_path, clock, components=("dhcp", "routing", "usage")):
    core = make_core(tmp_path, components=components, clock=clock)
    core.alerts = []
    core.bus.subscribe("alert", lambda topic, ev: core.alerts.append(ev))
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    core.commands.call("set-meta", mac=A, name="Sam's laptop")
    return core


def bw(core, mac, nbytes):
    core.bus.publish("bandwidth", mac=mac, ip="10.2.0.2", bytes=nbytes, up=0, down=nbytes)


def bursts(core):
    return [a for a in core.alerts if a.kind == "usage-burst"]


def test_the_setting_is_checked_once_for_every_door():
    assert parse("02-00-00-00-00-0A", "500M", "10") == Burst(A, 500 * MB, 10)
    assert parse(A, 2 * 10**9, 60).text() == "more than 2 GB in 60 minutes"
    for mac, size, minutes, words in ((A, "a lot", 10, "a size"), (A, "10k", 10, "at least 1 MB"),
                                      (A, "1G", 0, "from 1 to 60"), (A, "1G", 61, "from 1 to 60"),
                                      (A, "1G", True, "whole number"), (A, "1G", "5.5", "whole number"),
                                      ("nope", "1G", 5, "MAC")):
        with pytest.raises(CommandError, match=words):
            parse(mac, size, minutes)
    assert (size_text(1500 * MB), size_text(12 * MB), size_text(999)) == ("1.5 GB", "12 MB", "999 bytes")


def test_an_alert_once_per_burst_and_again_after_the_device_fell_back(tmp_path, clock):
    clock.now = 6000.0                         # a minute's start: the window is whole minutes
    core = new_core(tmp_path, clock)
    assert core.commands.call("usage-burst", mac=A, size="100M", minutes=10)["text"] == \
        "more than 100 MB in 10 minutes"
    bw(core, A, 60 * MB)
    clock.advance(120)
    bw(core, A, 30 * MB)
    bw(core, B, 500 * MB)                      # another device, no alert of its own
    assert bursts(core) == []
    clock.advance(120)
    bw(core, A, 20 * MB)                       # 110 MB within the last 10 minutes
    [alert] = bursts(core)
    assert alert.mac == A and alert.detail == ("Sam's laptop moved 110 MB in the last 10 minutes: "
                                               "its alert is for more than 100 MB in 10 minutes.")
    clock.advance(60)
    bw(core, A, 50 * MB)                       # still the same burst: told once
    assert len(bursts(core)) == 1 and core.counters.get("usage.burst_alerts") == 1
    clock.advance(11 * 60)                     # the window empties ...
    bw(core, A, MB)
    clock.advance(60)
    bw(core, A, 150 * MB)                      # ... and a new burst is told again
    assert len(bursts(core)) == 2


def test_the_setting_survives_a_restart_shows_in_the_view_and_goes_with_a_forgotten_device(tmp_path, clock):
    core = new_core(tmp_path, clock)
    core.commands.call("usage-burst", mac=A, size="1G", minutes=30)
    assert core.commands.call("status", mac=A)["usage_burst"] == {
        "mac": A, "bytes": 10**9, "minutes": 30, "text": "more than 1 GB in 30 minutes"}
    assert core.commands.call("status", mac=B)["usage_burst"] is None
    core.stop()
    core.state.close()
    again = make_core(tmp_path, components=("dhcp", "routing", "usage"), clock=clock)
    assert again.commands.call("usage-bursts") == [{"mac": A, "bytes": 10**9, "minutes": 30,
                                                    "text": "more than 1 GB in 30 minutes"}]
    again.commands.call("forget", mac=A)
    assert again.commands.call("usage-bursts") == []
    with pytest.raises(CommandError, match="has been seen"):
        again.commands.call("usage-burst", mac=A, size="1G", minutes=30)
    assert again.commands.call("usage-burst-remove", mac=B) == {"mac": B, "removed": False}


def test_a_backup_carries_the_setting_and_a_bad_restored_row_is_refused():
    assert contents.SETTINGS["usage_bursts"] == ("mac", "bytes", "minutes")
    check = contents.CHECKS["usage_bursts"]
    check({"mac": A, "bytes": 10**9, "minutes": 5})
    for bad in ({"mac": A, "bytes": 10, "minutes": 5}, {"mac": A, "bytes": 10**9, "minutes": 90},
                {"mac": "x", "bytes": 10**9, "minutes": 5}):
        with pytest.raises(ValueError):
            check(bad)


def test_the_api_sets_lists_and_removes_and_refuses_what_does_not_fit(tmp_path, clock):
    core = new_core(tmp_path, clock, components=("dhcp", "routing", "usage", "api"))
    api = Api(core)
    ro, admin = api.token("read-only"), api.token("admin")
    assert api.call("POST", "usage/bursts", {"mac": A, "size": "5M", "minutes": 5}, token=ro).status_int == 403
    r = api.call("POST", "usage/bursts", {"mac": A, "size": "5M", "minutes": 5}, token=admin)
    assert r.status_int == 200 and r.json["text"] == "more than 5 MB in 5 minutes"
    assert api.call("GET", "usage/bursts", token=ro).json == [r.json]
    assert api.call("GET", f"devices/{A}", token=ro).json["usage_burst"] == r.json
    for body, status, words in (({"mac": A, "size": "5M"}, 400, "minutes"),
                                ({"mac": A, "size": "5M", "minutes": 5, "when": "now"}, 400, "unknown field"),
                                ({"mac": "02:00:00:00:99:99", "size": "5M", "minutes": 5}, 404, "has been seen")):
        r = api.call("POST", "usage/bursts", body, token=admin)
        assert r.status_int == status and words in r.json["error"], r.text
    assert api.call("POST", "usage/bursts/remove", {"mac": A}, token=admin).json == {"mac": A, "removed": True}
    assert api.call("GET", "usage/bursts", token=ro).json == []
