"""Settings backup and restore end to end: real OVS, the real controller with
the dns, schedules and backup components, homework-dnsd and the router's dnsmasq; the
admin CLI; udhcpc, TCP connects and dig in device namespaces.

Two devices are permitted and named, one gets a DNS deny rule, the other a schedule; a
backup is made with the CLI; a factory reset (controller stopped, its state dir deleted,
started again) makes them pending strangers; the restore restarts the controller in place
by itself (same PID, the switch reconnects) and gives them back the internet and the rule
applies again. A tampered file is refused and nothing changes."""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, UTC

import pytest

from homelab import WEB_ADDR, new_run_id
from homelab.dns import WEB, DnsLab, _wait, dns_config
from homelab.routing import can_connect, wait_until

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
PASSPHRASE = "correct horse backup staple"


@pytest.fixture(scope="module")
def lab():
    from homelab import Home
    run_id = new_run_id()
    config = dns_config(run_id, ("dhcp", "routing", "dns", "schedules", "backup"))
    config["router"] = {"timezone": "UTC"}
    with Home(run_id=run_id, config=config) as home:
        yield DnsLab(home).start(captive=False)


def web_ok(dev) -> bool:
    return can_connect(dev, WEB_ADDR, 80, timeout=0.5)


def restart(lab, reset: bool = False) -> None:
    """Restart the controller (after deleting its state dir: a factory reset) and wait
    until it has given dnsd its policy again."""
    home = lab.home
    sent = home.controller_log().count("policy snapshot sent")
    home.stop_controller()
    if reset:
        shutil.rmtree(home.state_dir)
    home.start_controller()
    _wait("controller -> dnsd link", lambda: home.controller_log().count("policy snapshot sent") > sent, 15)


def comes_back_by_itself(lab, sent: int, pid: int) -> None:
    """The controller restarted in place (restart.py): the process the harness started
    is still the one running (exec, not exit), it holds the switch again and has given
    dnsd its policy again."""
    home = lab.home
    _wait("the controller restarts by itself",
          lambda: home.controller_log().count("policy snapshot sent") > sent, 20)
    assert home.controller_running() and home._controller.pid == pid
    home.wait_connected()


def states(lab) -> dict:
    return {d["mac"]: d["state"] for d in json.loads(lab.homework("--json", "devices"))}


def test_backup_factory_reset_restore(lab, tmp_path):
    home = lab.home
    a, b = lab.join("laptop"), lab.join("tablet")
    lab.homework("name", a.mac, "--name", "Laptop", "--owner", "Ana")
    lab.homework("name", b.mac, "--name", "Tablet", "--owner", "Ben")
    lab.homework("deny-dns", a.mac, "example.com")
    tomorrow = DAYS[(datetime.now(UTC) + timedelta(days=1)).weekday()]
    lab.homework("schedule", "add", "--mac", b.mac, "--days", tomorrow, "--from", "03:00", "--to", "04:00")
    wait_until(lambda: web_ok(a) and web_ok(b), 10, "both permitted devices reach the internet")
    assert lab.dig(a, "example.com")[0] == "NXDOMAIN" and lab.dig(b, "example.com") == ("NOERROR", [WEB])

    secret = tmp_path / "passphrase"
    secret.write_text(PASSPHRASE + "\n")
    backup = tmp_path / "homework.hwbak"
    lab.homework("backup", "--out", str(backup), "--passphrase-file", str(secret))
    assert backup.stat().st_mode & 0o077 == 0                  # only its owner reads it

    restart(lab, reset=True)                                   # factory reset
    for dev in (a, b):
        dev.renew()
    wait_until(lambda: states(lab) == {a.mac: "pending", b.mac: "pending"}, 20, "both are strangers again")
    assert not web_ok(a) and not web_ok(b)

    sent, pid = home.controller_log().count("policy snapshot sent"), home._controller.pid
    res = home.homework("restore", str(backup), "--passphrase-file", str(secret), timeout=240)
    assert res.returncode == 0, res.stderr
    assert "every setting is in force" in res.stdout     # said once the restarted controller has it all
    comes_back_by_itself(lab, sent, pid)
    assert "restarting the controller in place" in home.controller_log()
    for dev in (a, b):
        dev.renew()
    wait_until(lambda: web_ok(a) and web_ok(b), 20, "the restored devices reach the internet again")
    devices = {d["mac"]: d for d in json.loads(lab.homework("--json", "devices"))}
    assert (devices[a.mac]["name"], devices[a.mac]["owner"]) == ("Laptop", "Ana")
    assert devices[b.mac]["state"] == "permitted" and devices[b.mac]["name"] == "Tablet"
    assert lab.dig(a, "example.com")[0] == "NXDOMAIN"         # the rule applies again
    assert lab.dig(b, "example.com") == ("NOERROR", [WEB])
    schedules = json.loads(lab.homework("--json", "schedule", "list"))
    assert [(s["mac"], s["action"]) for s in schedules] == [(b.mac, "pause")]

    # A tampered file: b made denied in the settings. Refused, and nothing changes.
    doc = json.loads(backup.read_text())
    for row in doc["settings"]["devices"]:
        if row["mac"] == b.mac:
            row["state"] = "denied"
    tampered = tmp_path / "tampered.hwbak"
    tampered.write_text(json.dumps(doc))
    res = home.homework("restore", str(tampered), "--passphrase-file", str(secret))
    assert res.returncode != 0 and "changed after it was made" in res.stderr, res.stderr
    wrong = tmp_path / "wrong"
    wrong.write_text("not the passphrase\n")
    res = home.homework("restore", str(backup), "--passphrase-file", str(wrong))
    assert res.returncode != 0 and "wrong passphrase" in res.stderr, res.stderr
    restart(lab)
    assert states(lab) == {a.mac: "permitted", b.mac: "permitted"}
    wait_until(lambda: web_ok(b), 20, "b still reaches the internet")
