"""Presence alerts ("tell me when this device comes home or leaves"): the setting's one
check for the command, the CLI and a restore; a notification when a device with the alert
on gets a new lease or loses it, none for a renewal or a device without it; the setting
goes with a forgotten device, survives a backup round trip, and the API and the CLI reach it."""
import json

import pytest

from conftest import make_core
from homework import cli, manifest
from homework.commands import CommandError
from homework.components.backup.fileformat import pack
from homework.core_manifest import setting_row
from homework import migrations
from homework.components.dhcp import message as m
from homework.flows import Datapath
from dhcpframes import dhcp_frame
from test_api import Api
from test_dhcp_server import join, lease_time, send

A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
COMPONENTS = ("dhcp", "routing", "api", "notify", "backup")
PASS = "a long backup passphrase"


@pytest.fixture
def core(tmp_path, clock):
    core = make_core(tmp_path, components=COMPONENTS, clock=clock)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    for mac in (A, B):
        core.commands.call("permit", mac=mac)
    core.commands.call("set-meta", mac=A, name="Anna's phone")
    return core


def expire(core, clock, ack):
    clock.advance(lease_time(ack) + 1)
    for timer in core.timers:
        timer()


def kinds(core):
    return [(n["kind"], n["title"]) for n in core.commands.call("notifications")["notifications"]
            if n["kind"].startswith("device-") and n["kind"] != "device-joining"]


def test_the_command_sets_shows_and_refuses_what_does_not_fit(core):
    off = core.commands.call("presence-alert", mac=A)
    assert off == {"mac": A, "on": False, "text": "You are not told when Anna's phone comes home or leaves."}
    on = core.commands.call("presence-alert", mac="02-00-00-00-00-0A", on="on")     # the CLI's word, its MAC form
    assert on == {"mac": A, "on": True, "text": "You are told when Anna's phone comes home or leaves."}
    assert core.commands.call("presence-alerts") == [on]
    assert core.commands.call("presence-alert", mac=A, on=False)["on"] is False
    assert core.commands.call("presence-alerts") == []
    for mac, value, status, words in ((A, "maybe", 400, "on or off"), (A, 2, 400, "on or off"),
                                      ("02:00:00:00:99:99", True, 404, "has been seen"), ("x", True, 400, "x")):
        with pytest.raises(CommandError, match=words) as err:
            core.commands.call("presence-alert", mac=mac, on=value)
        assert err.value.status == status


def test_a_new_lease_and_its_end_tell_the_household_only_when_the_alert_is_on(core, clock):
    _, ack = join(core, A, 1)
    expire(core, clock, ack)
    assert kinds(core) == []                                # off: nothing
    core.commands.call("presence-alert", mac=A, on=True)
    offer, _ = join(core, A, 1)
    join(core, A, 1)                                        # a renewal: still home, nothing new
    join(core, B, 2)                                        # another device, its alert off
    assert kinds(core) == [("device-home", "Anna's phone is home.")]
    send(core, dhcp_frame(A, m.RELEASE, src_ip=offer.yiaddr, dst_ip="10.2.0.1"), 1)
    left = core.commands.call("notifications")["notifications"][0]
    assert (left["kind"], left["title"]) == ("device-left", "Anna's phone has left.")
    assert left["detail"] == "It gave its address on the home network back as it left."
    clock.advance(120)                                      # past the notifications' repeat window
    _, ack = join(core, A, 1)
    expire(core, clock, ack)
    assert kinds(core)[:2] == [("device-left", "Anna's phone has left."), ("device-home", "Anna's phone is home.")]
    assert core.commands.call("notifications")["notifications"][0]["detail"] == \
        "Its address on the home network ran out: it is away or switched off."
    assert core.counters.get("notify.presence") == 4


def test_a_forgotten_device_takes_its_alert_with_it(core):
    core.commands.call("presence-alert", mac=A, on=True)
    core.commands.call("forget", mac=A)
    assert core.commands.call("presence-alerts") == []
    assert not core.state.execute("SELECT 1 FROM settings WHERE key LIKE 'notify.presence.%'")


def test_a_device_let_in_as_the_device_it_was_keeps_its_alert(core):
    core.commands.call("presence-alert", mac=A, on=True)
    assert core.ctx.component("notify").carry_device(A, B) == ["presence alert"]
    assert [a["mac"] for a in core.commands.call("presence-alerts")] == [B]
    assert core.ctx.component("notify").carry_device(A, B) == []


def test_a_backup_carries_the_alert_and_a_bad_restored_row_is_refused(core, tmp_path, clock):
    core.commands.call("presence-alert", mac=A, on=True)
    doc = core.commands.call("backup", passphrase=PASS)["document"]
    assert {"key": f"notify.presence.{A}", "value": "on"} in doc["settings"]["settings"]
    fresh = make_core(tmp_path / "fresh", components=COMPONENTS, clock=clock)
    asked = []
    fresh.ctx.restart = asked.append                     # main.py wires restart.InPlace here
    fresh.commands.call("restore", passphrase=PASS, backup=json.loads(json.dumps(doc)))
    assert asked
    fresh.stop()
    restarted = make_core(tmp_path / "fresh", components=COMPONENTS, clock=clock)   # what the restart does
    assert [a["mac"] for a in restarted.commands.call("presence-alerts")] == [A]
    setting_row({"key": f"notify.presence.{A}", "value": "on"})
    for row, words in (({"key": "notify.presence.not-a-mac", "value": "on"}, "not-a-mac"),
                       ({"key": f"notify.presence.{A}", "value": "off"}, "must be \"on\"")):
        with pytest.raises(ValueError, match=words):
            setting_row(row)
    settings = dict(doc["settings"])
    settings["settings"] = settings["settings"] + [{"key": f"notify.presence.{B}", "value": "yes"}]
    bad = pack(settings, {}, PASS, schema=migrations.LATEST, software="test")
    with pytest.raises(CommandError, match="must be \"on\""):
        core.commands.call("restore", passphrase=PASS, backup=bad)


def test_the_api_reads_sets_and_guards_the_alert(core):
    api = Api(core)
    ro, admin = api.token("read-only"), api.token("admin")
    assert api.call("GET", f"notifications/presence/{A}", token=ro).json["on"] is False
    assert api.call("POST", f"notifications/presence/{A}", {"on": True}, token=ro).status_int == 403
    r = api.call("POST", f"notifications/presence/{A}", {"on": True}, token=admin)
    assert r.status_int == 200 and r.json["on"] is True
    assert api.call("GET", "notifications/presence", token=ro).json == [r.json]
    for body, status, words in (({"on": "maybe"}, 400, "on"), ({}, 400, "on"), ({"on": True, "x": 1}, 400, "x")):
        got = api.call("POST", f"notifications/presence/{A}", body, token=admin)
        assert got.status_int == status and words in got.json["error"], got.text
    assert api.call("POST", "notifications/presence/02:00:00:00:99:99", {"on": True}, token=admin).status_int == 404


def test_the_cli_form_comes_from_the_manifest(core, monkeypatch, capsys):
    declared = manifest.of("notify").cli
    assert set(declared) <= set(core.commands.names())      # every declared command exists
    calls = []
    monkeypatch.setattr(cli, "call", lambda sock, cmd, **kw: calls.append((cmd, kw)) or {"mac": A, "on": True})
    assert cli.main(["presence-alert", A, "on"]) == 0
    assert cli.main(["presence-alert", A]) == 0
    assert calls == [("presence-alert", {"mac": A, "on": "on"}), ("presence-alert", {"mac": A})]
    assert json.loads(capsys.readouterr().out.split("\n}\n")[0] + "}") == {"mac": A, "on": True}
