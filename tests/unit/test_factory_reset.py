"""Factory reset (factory_reset.py and the API route): a wrong confirmation
erases nothing; the right one erases the controller's state once it has stopped and
restarts it, keeping the admin password file so the label's password logs in again."""
from __future__ import annotations

import pytest

from homework.commands import CommandError
from test_api import MAC, PASSWORD, Api
from test_backup import configured, router  # noqa: F401 - the fixture and the router it builds

PHRASE = "erase everything"


def restart_capture(core):
    asked = []
    core.ctx.restart = lambda why, then=None: asked.append((why, then))
    return asked


def test_a_wrong_confirmation_erases_nothing(configured, tmp_path):  # noqa: F811
    core, _ = configured
    asked = restart_capture(core)
    for confirm in (None, "yes", "erase everything!", "Erase Everything"):
        with pytest.raises(CommandError, match="erase everything"):
            core.commands.call("factory-reset", confirm=confirm)
    assert asked == [] and len(core.commands.call("devices")) == 2
    (tmp_path / "old" / "admin-password").unlink()       # nothing to log in with after a reset
    with pytest.raises(CommandError, match="password file .* is missing"):
        core.commands.call("factory-reset", confirm=PHRASE)
    assert asked == []


def test_reset_erases_the_state_restarts_and_keeps_the_password_file(configured, tmp_path, clock):  # noqa: F811
    core, token = configured
    state_dir = tmp_path / "old"
    (state_dir / "blocklists").mkdir(exist_ok=True)
    (state_dir / "ula-prefix").write_text("fd00:1::/48\n")
    pwfile = state_dir / "admin-password"
    pwfile.rename(state_dir / "admin-password.consumed")     # the image moves it aside once changed
    asked = restart_capture(core)
    result = core.commands.call("factory-reset", confirm=PHRASE)
    assert result["restarting"] and "restarting" in result["note"]
    [(why, erase)] = asked
    assert why == "factory reset" and (state_dir / "state.db").exists()   # nothing gone before the stop
    before = {d["mac"]: d for d in core.commands.call("devices")}
    assert any(d["state"] == "permitted" and d["name"] for d in before.values())
    core.stop()
    erase()                                    # what restart.InPlace runs after stopping
    assert not (state_dir / "blocklists").exists()
    assert (state_dir / "ula-prefix").exists() and pwfile.read_text().strip() == PASSWORD

    fresh = router(state_dir, clock)           # the controller, started again in place
    assert fresh.commands.call("schedules") == []
    # every device a nameless pending stranger, on the address it holds (no DHCP needed)
    after = {d["mac"]: d for d in fresh.commands.call("devices")}
    assert set(after) == {m for m, d in before.items() if d["lease"]} and after
    for mac, d in after.items():
        assert (d["state"], d["name"], d["owner"]) == ("pending", "", ""), d
        assert d["lease"]["ip"] == before[mac]["lease"]["ip"]
    api = Api(fresh)
    assert api.call("GET", "devices", token=token).status_int == 401       # the old token is gone
    assert api.login().status_int == 200                                  # the label's password works


def test_api_factory_reset_needs_admin_and_the_exact_phrase(configured):  # noqa: F811
    core, _ = configured
    asked = restart_capture(core)
    api = Api(core)
    admin, reader = api.token("admin"), api.token("read-only")
    assert api.call("POST", "factory-reset", {"confirm": PHRASE}, token=reader).status_int == 403
    for body in ({}, {"confirm": "yes"}, {"confirm": PHRASE, "also": 1}):
        r = api.call("POST", "factory-reset", body, token=admin)
        assert r.status_int == 400 and PHRASE in r.json["error"], r.text
    assert asked == [] and MAC in {d["mac"] for d in core.commands.call("devices")}
    r = api.call("POST", "factory-reset", {"confirm": PHRASE}, token=admin)
    assert r.status_int == 200 and r.json["restarting"] is True, r.text
    assert [why for why, _ in asked] == ["factory reset"]
