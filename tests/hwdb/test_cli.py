"""The hwdb CLI end to end against the real daemon."""

import json
import subprocess
import time

from pathlib import Path

import hwdb_client

# Not imported from conftest: another conftest on PYTHONPATH could shadow it.
BIN = Path(__file__).resolve().parents[2] / "hwdb" / "target" / "release"


def test_query_prints_an_aligned_table(cli):
    assert cli("-q", "insert into Links values ('aa:bb', -40.5, 1, 10, 1000)").returncode == 0
    cli("-q", "insert into Links values ('aa:cc:dd', -60, 2, 20, 2000)")
    r = cli("-q", "select mac, rssi from Links")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["mac", "|", "rssi"]
    assert set(lines[1]) <= {"-", "+"}
    assert lines[2].startswith("aa:bb    | -40.5")
    assert lines[-1] == "(2 rows)"
    # Columns line up.
    assert len({line.index("|") for line in lines[2:4]}) == 1


def test_json_output_is_typed(cli):
    cli("-q", "insert into Links values ('aa:bb', -40.5, 1, 10, 1000)")
    r = cli("--json", "-q", "select * from Links")
    doc = json.loads(r.stdout)
    assert doc["status"] == 0
    (row,) = doc["rows"]
    assert row["rssi"] == -40.5 and row["retries"] == 1 and isinstance(row["timestamp"], int)
    assert [c["type"] for c in doc["columns"]][:3] == ["tstamp", "varchar", "real"]


def test_errors_exit_nonzero_with_position(cli):
    r = cli("-q", "select * from Links where")
    assert r.returncode == 1
    assert "syntax error at 26" in r.stderr


def test_interactive_mode_reads_statements_from_stdin(cli):
    r = cli(input="insert into Alerts values ('m', 'k', 'd')\n\nselect count(*) from Alerts\nshow tables\n")
    assert r.returncode == 0, r.stderr
    assert "count(*)" in r.stdout and "Alerts" in r.stdout


def test_subscribe_prints_notifications(cli, daemon):
    c = hwdb_client.Client(port=daemon.port)
    c.query("save (select mac from Links [last]) as LastLink")
    proc = subprocess.Popen([str(BIN / "hwdb"), "--port", str(daemon.port), "--subscribe", "LastLink", "--count", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not c.query("show subscriptions").rows and time.monotonic() < deadline:
            time.sleep(0.05)
        c.insert("Links", ("first", -1.0, 0, 0, 0))
        c.insert("Links", ("second", -1.0, 0, 0, 0))
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "first" in out and "second" in out
    assert c.query("show subscriptions").rows == []  # it unsubscribed on the way out
    c.close()
