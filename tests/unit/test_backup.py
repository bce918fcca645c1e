"""Settings backup and restore (components/backup): a round trip onto a fresh
router, and every way a file is refused (wrong passphrase, tampered settings or secrets,
truncated, not JSON, unknown format version, newer schema, a bad row) with nothing changed."""
import base64
import copy
import json
from urllib.parse import quote

import pytest

from homework import migrations
from homework.commands import CommandError
from homework.components.backup.fileformat import pack
from homework.flows import Datapath
from conftest import make_core, on_disk
from test_api import MAC, MAC2, PASSWORD, Api
from test_dhcp_server import join

PASS = "a long backup passphrase"
COMPONENTS = ("dhcp", "routing", "dns", "api", "schedules", "backup")


def router(path, clock):
    path.mkdir(exist_ok=True)
    pwfile = path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(path, components=COMPONENTS, clock=clock, api_admin_password_file=str(pwfile),
                     dns_control="", dns_intercept=False)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


@pytest.fixture
def configured(tmp_path, clock):
    """A router with two named devices (one permitted, one denied), DNS rules, a schedule and a token."""
    core = router(tmp_path / "old", clock)
    join(core, MAC, 1)
    join(core, MAC2, 2, hostname=b"phone")
    core.commands.call("permit", mac=MAC)
    core.commands.call("deny", mac=MAC2)
    core.commands.call("set-meta", mac=MAC, name="Laptop", owner="Ana", type="laptop")
    core.commands.call("deny-dns", mac=MAC, domain="games.example", schedule="sun-thu 21:30-07:00")
    core.commands.call("household-deny-dns", domain="ads.example")
    core.commands.call("schedule-add", mac=MAC, days="mon-fri", start="22:00", end="06:30", action="pause")
    token = core.commands.call("token-create", name="script", role="admin")["token"]
    core.state.flush(force=True)
    return core, token


def settings_of(core):
    rows = {}
    for table in ("devices", "dns_rules", "schedules", "api_tokens", "api_admin"):
        rows[table] = [tuple(r) for r in core.state.execute(f"SELECT * FROM {table} ORDER BY 1")]
    return rows


def test_round_trip_onto_a_fresh_router(configured, tmp_path, clock):
    old, token = configured
    doc = old.commands.call("backup", passphrase=PASS)["document"]
    assert doc["format"] == "homework-backup" and doc["schema"] == migrations.LATEST
    text = json.dumps(doc)
    assert "token_hash" not in text and "password_hash" not in text      # secrets only encrypted
    assert "games.example" in text                                        # settings readable

    fresh = router(tmp_path / "new", clock)
    assert fresh.commands.call("devices") == []
    asked = []
    fresh.ctx.restart = asked.append                     # main.py wires restart.InPlace here
    result = fresh.commands.call("restore", passphrase=PASS, backup=json.loads(text))
    assert result["restarting"] and result["restored"]["devices"] == 2 and "restarts" in result["note"]
    assert result["applied"] is False and fresh.commands.call("restore-status")["restore"]["applied"] is False
    assert asked == ["settings restored from a backup"]
    fresh.stop()
    restarted = router(tmp_path / "new", clock)          # what the in-place restart does
    states = {d["mac"]: (d["state"], d["name"], d["owner"]) for d in restarted.commands.call("devices")}
    assert states == {MAC: ("permitted", "Laptop", "Ana"), MAC2: ("denied", "", "")}
    rules = restarted.commands.call("dns-rules")
    assert "ads.example" in json.dumps(rules) and "games.example" in json.dumps(rules)
    assert [(s["mac"], s["window"]) for s in restarted.commands.call("schedules")] == \
        [(MAC, old.commands.call("schedules")[0]["window"])]
    assert Api(restarted).call("GET", "devices", token=token).status_int == 200   # the token came along
    assert Api(restarted).login().status_int == 200                              # and the password
    # the restored controller says so once everything is in force (here: its switch)
    assert restarted.commands.call("restore-status")["restore"]["applied"] is False
    from homework.flows import Datapath
    restarted.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE}))
    restarted.ctx.component("backup")._check_applied()
    status = restarted.commands.call("restore-status")["restore"]
    assert status["applied"] is True and status["restored"]["devices"] == 2
    assert Api(restarted).call("GET", "restore/status").json["restore"]["applied"] is True   # no login needed


def test_a_file_rewritten_by_a_browser_still_restores(configured):
    """JavaScript's JSON writes whole floats without '.0' (the board saves the download so)."""
    core, _ = configured
    doc = core.commands.call("backup", passphrase=PASS)["document"]
    for row in doc["settings"]["devices"]:
        row["first_seen"] = float(int(row["first_seen"]))
    as_js = json.loads(json.dumps(doc).replace(".0,", ",").replace(".0}", "}"))
    assert core.commands.call("restore", passphrase=PASS, backup=as_js)["restored"]["devices"] == 2


def tampered_settings(doc):
    doc["settings"]["devices"][1]["state"] = "permitted"


def tampered_secrets(doc):
    raw = bytearray(base64.b64decode(doc["secrets"]["ciphertext"]))
    raw[5] ^= 1
    doc["secrets"]["ciphertext"] = base64.b64encode(bytes(raw)).decode()


def newer_schema(doc):
    doc["schema"] = migrations.LATEST + 1


def unknown_version(doc):
    doc["version"] = 99


@pytest.mark.parametrize("change, passphrase, message", [
    (None, "not the passphrase", "wrong passphrase"),
    (tampered_settings, PASS, "changed after it was made"),
    (tampered_secrets, PASS, "changed after it was made"),
    (newer_schema, PASS, "newer release"),
    (unknown_version, PASS, "format version"),
    (None, "short", "at least 8"),
])
def test_a_bad_backup_is_refused_and_nothing_changes(configured, change, passphrase, message):
    core, _ = configured
    doc = core.commands.call("backup", passphrase=PASS)["document"]
    if change:
        change(doc)
    core.commands.call("forget", mac=MAC2)            # differs from the backup now
    core.state.flush(force=True)
    before = settings_of(core)
    with pytest.raises(CommandError, match=message):
        core.commands.call("restore", passphrase=passphrase, backup=doc)
    assert settings_of(core) == before


@pytest.mark.parametrize("raw, message", [
    (None, "not JSON"),                   # truncated: the file cut in the middle
    (b"\x00\xffjunk", "not JSON"),
    (b"[1, 2]", "not a Homework backup"),
])
def test_a_damaged_file_is_refused_with_a_reason(configured, tmp_path, raw, message):
    core, _ = configured
    doc = core.commands.call("backup", passphrase=PASS)["document"]
    text = json.dumps(doc).encode()
    path = tmp_path / "file.hwbak"
    path.write_bytes(text[: len(text) // 2] if raw is None else raw)
    before = settings_of(core)
    with pytest.raises(CommandError, match=message):
        core.commands.call("restore", passphrase=PASS, path=str(path))
    assert settings_of(core) == before


@pytest.mark.parametrize("table, row, message", [
    ("devices", {"mac": "not-a-mac", "state": "permitted"}, "not-a-mac"),
    ("devices", {"mac": MAC2, "state": "trusted"}, "state must be one of"),
    ("dns_rules", {"owner": "*", "domain": "http://x/", "action": "deny"}, "not a domain"),
    ("dns_rules", {"owner": "*", "domain": "x.example", "action": "deny", "schedule": "someday"}, "schedule"),
    ("schedules", {"target": MAC, "days": "0,1", "start_min": 1500, "end_min": 60, "action": "pause"}, "start_min"),
    ("usage_limits", {"target": MAC, "period": "day", "allowance": 2 ** 70, "action": "block"}, "allowance"),
    ("dns_rules", {"owner": "*", "domain": "ads.example", "action": "allow"}, "cannot go together"),   # twice
    ("qos_devices", {"mac": MAC2, "class": "urgent", "window": ""}, "class must be one of"),
    ("qos_apps", {"id": 3, "name": "games", "class": "medium", "ports": "udp/99999", "domains": "",
                  "window": ""}, "ports"),
    ("qos_apps", {"id": 4, "name": "calls", "class": "high", "ports": "", "domains": "zoom.us",
                  "window": "someday 25:00-26:00"}, "window|day|time"),
])
def test_a_bad_row_in_an_intact_backup_changes_nothing(configured, table, row, message):
    core, _ = configured
    doc = core.commands.call("backup", passphrase=PASS)["document"]
    settings = copy.deepcopy(doc["settings"])
    settings[table] = settings.get(table, []) + [row]
    bad = pack(settings, {}, PASS, schema=migrations.LATEST, software="test")   # signed, so only validation stops it
    before = settings_of(core)
    with pytest.raises(CommandError, match=message):
        core.commands.call("restore", passphrase=PASS, backup=bad)
    assert settings_of(core) == before


def test_an_older_backup_restores_onto_the_current_schema(configured):
    """A backup from schema 7 (no schedules table yet): the schedules end up empty, the rest restored."""
    core, _ = configured
    doc = core.commands.call("backup", passphrase=PASS)["document"]
    settings = {k: v for k, v in doc["settings"].items() if k not in ("schedules", "pauses")}
    old = pack(settings, {}, PASS, schema=7, software="0.0.9")
    result = core.commands.call("restore", passphrase=PASS, backup=old)
    assert result["restored"]["schedules"] == 0 and result["restored"]["devices"] == 2
    assert on_disk(core.config.state_db, "SELECT COUNT(*) FROM schedules") == [(0,)]


def test_api_backup_is_a_download_and_restore_reports_errors(configured):
    core, _ = configured
    api = Api(core)
    admin, reader = api.token("admin"), api.token("read-only")
    assert api.call("POST", "backup", {"passphrase": PASS}, token=reader).status_int == 403
    r = api.call("POST", "backup", {"passphrase": PASS}, token=admin)
    assert r.status_int == 200, r.text
    assert 'attachment; filename="homework-backup-' in r.headers["Content-Disposition"]
    assert PASS not in r.text
    doc = json.loads(r.body)
    r = api.call("POST", "restore", {"passphrase": "wrong passphrase", "backup": doc}, token=admin)
    assert r.status_int == 400 and "wrong passphrase" in r.json["error"] and PASS not in r.text
    assert api.call("POST", "restore", {"passphrase": PASS}, token=admin).status_int == 400
    assert api.call("POST", "backup", {"passphrase": 5}, token=admin).status_int == 400
    r = api.call("POST", "restore", {"passphrase": PASS, "backup": doc}, token=admin)
    assert r.status_int == 200 and r.json["restarting"] is False, r.text     # no ctx.restart here
    assert "systemctl restart" in r.json["note"]


def test_only_the_restore_route_takes_a_large_body(configured):
    """A household's backup is larger than the 16 KiB every other route takes."""
    core, _ = configured
    api = Api(core)
    admin = api.token("admin")
    big = {"passphrase": PASS, "backup": {"padding": "x" * 200_000}}
    r = api.call("POST", "restore", big, token=admin)
    assert r.status_int == 400 and "larger than" not in r.json["error"], r.text    # read, then refused as a backup
    r = api.call("POST", "backup", big, token=admin)
    assert r.status_int == 413 and "larger than" in r.json["error"], r.text


def test_priorities_go_into_the_backup_and_come_back(configured, tmp_path, clock):
    """The priorities' rules (qos_devices, qos_apps, migration 10) are settings too; the app's id
    (its connections' ct mark) is kept."""
    old, _ = configured
    old.state.execute("INSERT INTO qos_devices (mac, class, window) VALUES (?, 'high', 'mon-fri 09:00-17:00')", (MAC,))
    old.state.execute("INSERT INTO qos_apps (id, name, class, ports, domains, window) "
                      "VALUES (7, 'video calls', 'high', 'udp/3478-3481', 'zoom.us', '')")
    doc = old.commands.call("backup", passphrase=PASS)["document"]
    assert [r["name"] for r in doc["settings"]["qos_apps"]] == ["video calls"]
    fresh = router(tmp_path / "new", clock)
    fresh.ctx.restart = lambda why: None
    fresh.commands.call("restore", passphrase=PASS, backup=doc)
    assert [tuple(r) for r in fresh.state.execute("SELECT mac, class, window FROM qos_devices")] == \
        [(MAC, "high", "mon-fri 09:00-17:00")]
    assert [tuple(r) for r in fresh.state.execute("SELECT id, name, ports, domains FROM qos_apps")] == \
        [(7, "video calls", "udp/3478-3481", "zoom.us")]


def test_the_wifi_network_travels_encrypted_and_comes_back(configured, tmp_path, clock):
    """the Wi-Fi name and passphrase (wifi.env, not state.db) are in the backup's
    encrypted part and a restore writes them back through set-wifi; a bad one refuses the file."""
    old, _ = configured
    old.commands.call("set-wifi", ssid="Casa Ana", passphrase="correct horse battery")
    doc = old.commands.call("backup", passphrase=PASS)["document"]
    assert "correct horse battery" not in json.dumps(doc) and "Casa Ana" not in json.dumps(doc)
    fresh = router(tmp_path / "new", clock)
    fresh.ctx.restart = lambda why: None
    result = fresh.commands.call("restore", passphrase=PASS, backup=doc)
    assert result["restored"]["wifi"] == 1
    assert fresh.commands.call("wifi-info")["ssid"] == "Casa Ana"
    assert "correct horse battery" in (tmp_path / "new" / "wifi.env").read_text()

    bad = pack(doc["settings"], {"wifi": [{"ssid": "x", "passphrase": "short"}]}, PASS,
               schema=migrations.LATEST, software="test")
    with pytest.raises(CommandError, match="passphrase"):
        fresh.commands.call("restore", passphrase=PASS, backup=bad)
    assert fresh.commands.call("wifi-info")["ssid"] == "Casa Ana"


# -- a crafted or careless restore: the commands' own validators, 400s, never a failing controller
def crafted(core, settings_extra=None, secrets_extra=None):
    doc = core.commands.call("backup", passphrase=PASS)["document"]
    settings = copy.deepcopy(doc["settings"])
    for table, rows in (settings_extra or {}).items():
        settings[table] = settings.get(table, []) + rows
    return pack(settings, secrets_extra or {}, PASS, schema=migrations.LATEST, software="test")


@pytest.mark.parametrize("table, row, message", [
    ("settings", {"key": "qos.down_kbit", "value": "²"}, "qos.down_kbit must be a whole number"),
    ("settings", {"key": "qos.up_kbit", "value": "٣٠٠"}, "whole number"),
    ("settings", {"key": "qos.down_kbit", "value": "0"}, "between"),
    ("settings", {"key": "qos.high_share", "value": "95"}, "high_share"),
    ("settings", {"key": "qos.enabled", "value": "yes"}, "0 or 1"),
    ("settings", {"key": "timezone", "value": "Mars/Olympus"}, "unknown time zone"),
    ("settings", {"key": "anything", "value": "1"}, "unknown setting"),
    ("dns_options", {"key": "safe_search", "value": "maybe"}, "safe_search"),
    ("blocklists", {"url": "ftp://lists.example/x", "owner": "*"}, "http"),
])
def test_a_restored_value_the_commands_would_refuse_is_refused(configured, table, row, message):
    core, _ = configured
    before = settings_of(core)
    with pytest.raises(CommandError, match=message):
        core.commands.call("restore", passphrase=PASS, backup=crafted(core, {table: [row]}))
    assert settings_of(core) == before


def test_an_admin_hash_with_a_huge_scrypt_cost_is_refused(configured):
    core, _ = configured
    good = core.state.execute("SELECT password_hash FROM api_admin")[0][0].split("$")
    costly = "$".join(["scrypt", "16384", "8", "600", *good[4:]])
    with pytest.raises(CommandError, match="password_hash"):
        core.commands.call("restore", passphrase=PASS, backup=crafted(core, secrets_extra={
            "api_admin": [{"id": 1, "password_hash": costly, "changed": 0}]}))
    with pytest.raises(CommandError, match="url"):
        core.commands.call("restore", passphrase=PASS, backup=crafted(core, secrets_extra={
            "webhooks": [{"id": "wh-1", "url": "gopher://x", "secret": "s", "created": 0}]}))


def test_a_stored_link_rate_nobody_could_have_set_is_ignored_not_fatal(tmp_path, clock):
    """Written by hand (or by an older release's restore): the shaper keeps working."""
    from homework.components.qos.store import QosStore
    core = router(tmp_path / "r", clock)
    core.state.execute("INSERT INTO settings (key, value) VALUES ('qos.down_kbit', '²'), ('qos.up_kbit', '5000')")
    assert QosStore(core.state).link() == {"up_kbit": 5000}


def test_deep_json_and_unicode_ids_are_400s_not_500s(configured):
    core, _ = configured
    api = Api(core)
    admin = api.token("admin")
    deep = b"[" * 400_000 + b"]" * 400_000
    for path in ("restore", "permit", "meta/" + MAC):
        r = api.call("POST", path, deep, token=admin)
        assert r.status_int in (400, 413) and "error" in r.json, (path, r.status_int, r.text[:200])
    nested: list = [1]
    for _ in range(40):
        nested = [nested]
    r = api.call("POST", "restore", {"passphrase": PASS, "backup": {"a": nested}}, token=admin)
    assert r.status_int == 400 and "deeper" in r.json["error"]
    for bad in ("²", "٣", "5_0", "-1", "99999999999999999999999"):
        r = api.call("POST", f"schedules/{quote(bad)}/remove", token=admin)
        assert r.status_int == 400 and "schedule id" in r.json["error"], (bad, r.status_int, r.text)
    with pytest.raises(CommandError, match="whole number"):
        core.commands.call("pause", mac=MAC, minutes="٣")
