"""The router's own facts and settings (homework/system.py and api/system.py):
version, uptime, schema and update slot; a time zone applied at once and stored in
state.db, where it overrides the config file at the next start; the admin password change."""
from __future__ import annotations

import pytest

from homework import migrations, system
from homework.commands import CommandError
from test_api import PASSWORD, Api
from test_backup import router
from datetime import UTC


@pytest.fixture
def core(tmp_path, clock):
    return router(tmp_path / "r", clock)


def test_system_info_names_version_schema_and_slot(core, tmp_path):
    info = core.commands.call("system-info")
    assert info["version"] == system.software_version() and info["schema"] == migrations.LATEST
    assert info["update_slot"] == "single (not booted from an A/B slot)" and info["uptime"] >= 0
    stamp = tmp_path / "version"
    stamp.write_text("v0.3-12-gabc1234\ninputs 1234\nbuilt 2026-11-23T20:00:00Z\n")
    assert system.software_version(stamp) == "v0.3-12-gabc1234"      # the image's stamp wins
    assert system.software_version(tmp_path / "missing") == system.__version__


def test_a_time_zone_applies_at_once_and_overrides_the_config_at_the_next_start(core, tmp_path, clock):
    assert core.commands.call("system-info")["timezone_source"] == "config"
    for bad in ("Mars/Olympus", "", None, "../../etc/passwd"):
        with pytest.raises(CommandError, match="time zone"):
            core.commands.call("set-timezone", timezone=bad)
    asked = []
    core.ctx.restart = lambda why, then=None: asked.append(why)
    result = core.commands.call("set-timezone", timezone="Europe/London")
    assert result["restarting"] is False and asked == []            # live: no restart
    info = core.commands.call("system-info")
    assert (info["timezone"], info["timezone_source"]) == ("Europe/London", "board")
    assert str(core.ctx.component("schedules").tz) == "Europe/London"    # at once
    usage = core.ctx.component("usage")
    if usage is not None:
        assert str(usage.tz) == "Europe/London"
    core.state.flush(force=True)
    core.stop()
    again = router(tmp_path / "r", clock)                  # what the in-place restart does
    info = again.commands.call("system-info")
    assert (info["timezone"], info["timezone_source"]) == ("Europe/London", "board")
    assert again.ctx.config.timezone == "Europe/London"
    assert str(again.ctx.component("schedules").tz) == "Europe/London"   # schedules use it


def test_api_system_timezone_and_password(core):
    api = Api(core)
    reader, admin = api.token("read-only"), api.token("admin")
    r = api.call("GET", "system", token=reader)
    assert r.status_int == 200 and r.json["schema"] == migrations.LATEST, r.text
    assert api.call("POST", "system/timezone", {"timezone": "Europe/Paris"}, token=reader).status_int == 403
    r = api.call("POST", "system/timezone", {"timezone": "Nowhere/Town"}, token=admin)
    assert r.status_int == 400 and "unknown time zone" in r.json["error"], r.text
    assert api.call("POST", "system/timezone", {"tz": "UTC"}, token=admin).status_int == 400
    r = api.call("POST", "system/timezone", {"timezone": "Europe/Paris"}, token=admin)
    assert r.status_int == 200 and r.json["timezone"] == "Europe/Paris", r.text

    new = "a new household password"
    r = api.call("POST", "password", {"old": "not it at all", "new": new}, token=admin)
    assert r.status_int == 400 and "current password is wrong" in r.json["error"] and new not in r.text
    r = api.call("POST", "password", {"old": PASSWORD, "new": "short"}, token=admin)
    assert r.status_int == 400 and "characters" in r.json["error"]
    assert api.call("POST", "password", {"old": PASSWORD}, token=admin).status_int == 400
    r = api.call("POST", "password", {"old": PASSWORD, "new": new}, token=admin)
    assert r.status_int == 200 and r.json["password_changed"] and new not in r.text and PASSWORD not in r.text
    assert api.login(PASSWORD).status_int == 401 and api.login(new).status_int == 200


def test_a_new_time_zone_moves_schedule_windows_at_once(core, clock):
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo
    from test_dhcp_server import join
    mac = "02:00:00:00:0e:01"
    join(core, mac, 1)
    core.commands.call("permit", mac=mac)
    # a window around this moment's hour in Tokyo, which is not this hour in UTC
    tokyo = datetime.fromtimestamp(clock.now, ZoneInfo("Asia/Tokyo"))
    start, end = tokyo - timedelta(minutes=30), tokyo + timedelta(minutes=30)
    utc = datetime.fromtimestamp(clock.now, UTC)
    assert not (start.time() <= utc.time() <= end.time())
    core.commands.call("set-timezone", timezone="UTC")
    core.commands.call("schedule-add", mac=mac, days=tokyo.strftime("%a").lower(),
                       start=start.strftime("%H:%M"), end=end.strftime("%H:%M"), action="pause")
    schedules = core.ctx.component("schedules")
    assert mac not in schedules.wanted(clock.now)[0]
    core.commands.call("set-timezone", timezone="Asia/Tokyo")
    assert mac in schedules.wanted(clock.now)[0]          # cut now, by Tokyo's clock, no restart
