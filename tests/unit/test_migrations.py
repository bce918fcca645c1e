"""Numbered state migrations: a state.db written by the previous
release (tests/fixtures/state-release-1.sql is its dump, made by that release's own
code) is migrated and keeps every device, lease, rule and token; a newer one is refused."""
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from homework import migrations
from homework.components.api.auth import Auth
from homework.components.dns.policy import Policy
from homework.migrations import StateVersionError
from homework.state import StateStore

FIXTURE = Path(__file__).parents[1] / "fixtures" / "state-release-1.sql"
NOW = 1795400000.0
READ_ONLY_TOKEN = "hwk_2e4cf0cc_l6-f2KF5ith_n5GThoRKlH1q061m6MwIjxx82ux6o68"
ADMIN_TOKEN = "hwk_8ad8916f_XcFh5UM5VM4uLHXkuJRX9IGrnQzasTIZi3jxYPWZHgU"


def previous_release_db(tmp_path) -> Path:
    path = tmp_path / "state.db"
    con = sqlite3.connect(path)
    con.executescript(FIXTURE.read_text())
    con.close()
    return path


def test_the_previous_release_database_is_migrated_and_keeps_everything(tmp_path):
    path = previous_release_db(tmp_path)
    assert migrations.version(sqlite3.connect(path)) == 0
    store = StateStore(path)
    assert migrations.version(store.db) == migrations.LATEST
    devices = {d.mac: d for d in store.devices()}
    assert {mac: d.state for mac, d in devices.items()} == {
        "02:68:77:00:00:01": "permitted", "02:68:77:00:00:02": "pending", "02:68:77:00:00:03": "denied",
        "02:68:77:00:00:04": "blacklisted", "02:68:77:00:00:05": "permitted"}
    tv = devices["02:68:77:00:00:01"]
    assert (tv.name, tv.owner, tv.type, tv.hostname) == ("Living room TV", "Mary", "tv", "host0")
    assert sorted((r["mac"], r["block"], r["port"], r["relay"]) for r in store.leases()) == [
        ("02:68:77:00:00:01", 0, 1, ""), ("02:68:77:00:00:02", 1, 2, ""),
        ("02:68:77:00:00:03", 2, 3, ""), ("02:68:77:00:00:04", 3, 4, "10.9.0.1")]
    policy = Policy(store, lambda: NOW)
    assert policy.verdict("02:68:77:00:00:01", "www.games.example") != "allow"
    assert policy.mode("02:68:77:00:00:05") == "allowlist"
    assert {(r["owner"], r["domain"]) for r in policy.list_rules()} >= {
        ("02:68:77:00:00:01", "games.example"), ("*", "tracker.example"), ("02:68:77:00:00:05", "school.example")}
    auth = Auth(store, lambda: NOW)
    assert auth.check_password("correct horse battery staple")
    assert auth.token(READ_ONLY_TOKEN) is not None and not auth.token(READ_ONLY_TOKEN).is_admin
    assert auth.token(ADMIN_TOKEN).is_admin
    # and the tables of this release are there too
    store.save_quarantine(5, NOW + 600)
    assert store.quarantine() == {5: NOW + 600}


def test_migrating_twice_changes_nothing(tmp_path):
    path = previous_release_db(tmp_path)
    StateStore(path).close()
    db = sqlite3.connect(path)
    assert migrations.migrate(db) == []


def test_a_newer_database_is_refused_clearly(tmp_path):
    path = tmp_path / "state.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {migrations.LATEST + 1}")
    con.close()
    with pytest.raises(StateVersionError, match="newer than this controller"):
        StateStore(path)
    # the controller stops with that message and exit status 2
    conf = tmp_path / "c.toml"
    conf.write_text(f'[state]\ndir = "{tmp_path}"\n[controller]\ncontrol_socket = "{tmp_path}/c.sock"\n')
    res = subprocess.run([sys.executable, "-m", "homework", "--config", str(conf)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and "newer than this controller" in res.stderr, res.stderr


def test_after_a_rollback_the_copy_from_before_the_update_is_used_and_the_newer_one_kept(tmp_path):
    """an update copied state.db (state.db.pre-<version>) before it ran; the new
    release migrated it past this one's schema; the router fell back to this release."""
    path = previous_release_db(tmp_path)
    StateStore(path).close()
    copy = tmp_path / "state.db.pre-v2"
    copy.write_bytes(path.read_bytes())
    con = sqlite3.connect(path)              # what the newer release made of it
    con.execute("DELETE FROM devices WHERE mac = '02:68:77:00:00:02'")
    con.execute(f"PRAGMA user_version = {migrations.LATEST + 1}")
    con.commit()
    con.close()
    store = StateStore(path)
    assert migrations.version(store.db) == migrations.LATEST
    assert "02:68:77:00:00:02" in {d.mac for d in store.devices()}      # the state from before the update
    store.close()
    aside = tmp_path / f"state.db.newer-{migrations.LATEST + 1}"
    assert migrations.version(sqlite3.connect(aside)) == migrations.LATEST + 1
    assert copy.exists()


def test_a_newer_database_without_a_usable_copy_is_still_refused(tmp_path):
    path = tmp_path / "state.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {migrations.LATEST + 1}")
    con.close()
    (tmp_path / "state.db.pre-v3").write_bytes(path.read_bytes())     # as new as state.db: no use
    with pytest.raises(StateVersionError, match="newer than this controller"):
        StateStore(path)
    assert migrations.version(sqlite3.connect(path)) == migrations.LATEST + 1     # untouched


def test_steps_are_numbered_in_order():
    assert [s.number for s in migrations.STEPS] == list(range(1, migrations.LATEST + 1))


def test_the_state_database_is_readable_by_its_owner_only(tmp_path):
    import stat
    from homework.state import StateStore
    path = tmp_path / "state" / "state.db"
    store = StateStore(path)
    store.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)                        # an older release's file is tightened at start
    StateStore(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
