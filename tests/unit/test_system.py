"""The router's own facts and settings (homework/system.py and api/system.py):
version, uptime, schema and update slot; a time zone stored in state.db that overrides
the config file at the next start; the admin password change."""
from __future__ import annotations

import pytest

from homework import migrations, system
from homework.commands import CommandError
from test_api import PASSWORD, Api
from test_backup import router


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


def test_a_stored_time_zone_overrides_the_config_at_the_next_start(core, tmp_path, clock):
    assert core.commands.call("system-info")["timezone_source"] == "config"
    for bad in ("Mars/Olympus", "", None, "../../etc/passwd"):
        with pytest.raises(CommandError, match="time zone"):
            core.commands.call("set-timezone", timezone=bad)
    asked = []
    core.ctx.restart = lambda why, then=None: asked.append(why)
    result = core.commands.call("set-timezone", timezone="Europe/London")
    assert result["restarting"] and asked == ["time zone set to Europe/London"]
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
