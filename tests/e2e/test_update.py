"""System updates end to end: the real controller (api component) in the emulated
home, lighttpd with the Guest Board in front of it, the real scripts/make-hwup.py with a key
made for this run; the A/B "disk" is files in a directory (slot devices, an ESP, a kernel
command line naming slot A: tests/update_lab.py).

An upload over HTTPS through lighttpd is verified, written to slot B with progress up to
ready-to-reboot, and points the boot loaders at B once (homework-b+1.conf, try_slot=b); a
file signed with another key gets 400 with the reason and changes nothing; the CLI installs
a newer build the same way; a read-only token cannot update or reboot."""
from __future__ import annotations

import time

import pytest

from homelab.web import Web, api, web_home
from update_lab import UpdateLab

OCTETS = {"Content-Type": "application/octet-stream"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return UpdateLab(tmp_path_factory.mktemp("update") / "disk")


@pytest.fixture(scope="module")
def web(lab):
    config = {"controller": {"components": ["dhcp", "routing"]}, "update": lab.config()}
    with web_home(config) as home:
        w = Web(home).start()
        yield w
        w.stop()


def wait_state(web, wanted: str, timeout: float = 60) -> dict:
    deadline, seen = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        status = api(web, "GET", "system/update").json()
        seen.append((status["state"], status["percent"]))
        if status["state"] not in ("receiving", "verifying", "writing"):
            assert status["state"] == wanted, status
            return status | {"seen": seen}
        time.sleep(0.1)
    raise AssertionError(f"no {wanted} in {timeout} s: {seen[-5:]}")


def test_an_upload_over_https_is_written_to_the_other_slot_and_booted_once(web, lab):
    before = api(web, "GET", "system/update").json()
    assert before["running"]["slot"] == "a" and before["state"] == "idle"
    assert before["other"]["state"] == "empty"
    good = lab.make("v2.hwup")
    assert good.stat().st_size > 4 * 1024 * 1024        # larger than lighttpd's limit for other routes
    r = api(web, "POST", "system/update", data=good.read_bytes(), headers=dict(OCTETS), timeout=60)
    assert r.status_code == 202, r.text
    assert r.json()["version"] == "v2" and r.json()["slot"] == "b"
    status = wait_state(web, "ready-to-reboot")
    assert status["percent"] == 100 and status["other"] == {"slot": "b", "state": "trying", "version": "v2",
                                                            "sequence": 101}
    assert (lab.dir / "hw-root-b").read_bytes()[:len(lab.root_image)] == lab.root_image
    entries = sorted(p.name for p in (lab.esp / "loader" / "entries").iterdir())
    assert entries == ["homework-a.conf", "homework-b+1.conf"]
    assert (lab.esp / "homework" / "b" / "vmlinuz").read_bytes() == b"kernel v2"
    from homework.update import slots
    assert slots.read_grubenv(lab.esp) == {"good_slot": "a", "try_slot": "b"}
    assert not list((web.home.state_dir / "update").iterdir())        # the upload is not kept
    assert (web.home.state_dir / "state.db.pre-v2").exists()
    system = api(web, "GET", "system").json()
    assert system["update_slot"] == "A (updates go to B)"


def test_a_file_signed_by_another_key_is_refused_with_the_reason_and_changes_nothing(web, lab):
    bad = lab.make("evil.hwup", version="v9", sequence=900, key=lab.dir / "evil-key")
    before = lab.snapshot()
    r = api(web, "POST", "system/update", data=bad.read_bytes(), headers=dict(OCTETS), timeout=60)
    assert r.status_code == 400 and r.json()["error"].startswith("update refused: bad signature"), r.text
    assert lab.snapshot() == before
    status = api(web, "GET", "system/update").json()
    assert (status["state"], status["reason"]) == ("failed", "bad signature")
    truncated = lab.truncate(lab.make("v3.hwup", version="v3", sequence=102), "v3-cut.hwup")
    r = api(web, "POST", "system/update", data=truncated.read_bytes(), headers=dict(OCTETS), timeout=60)
    assert r.status_code == 400 and "truncated" in r.json()["error"]
    assert lab.snapshot() == before


def test_read_only_cannot_update_or_reboot(web, lab):
    good = lab.dir / "v2.hwup"
    assert api(web, "POST", "system/update", role="read-only", data=b"x", headers=dict(OCTETS)).status_code == 403
    assert api(web, "POST", "system/reboot", role="read-only").status_code == 403
    assert api(web, "POST", "system/update", role=None, data=good.read_bytes()[:100],
               headers=dict(OCTETS)).status_code == 401
    assert api(web, "GET", "system/update", role="read-only").status_code == 200


def test_the_cli_installs_a_newer_build_and_shows_it(web, lab):
    newer = lab.make("v3.hwup", version="v3", sequence=102)
    out = web.home.homework("update", str(newer), check=True).stdout
    assert "v3 is written to slot b" in out
    status = web.home.homework("update-status", check=True).stdout
    assert "running v1 (build 100) from slot a" in status and "slot b: trying, v3 (build 102)" in status
    assert sorted(p.name for p in (lab.esp / "loader" / "entries").iterdir()) == ["homework-a.conf",
                                                                                  "homework-b+1.conf"]
    assert "version 102" in (lab.esp / "loader" / "entries" / "homework-b+1.conf").read_text()
    copies = sorted(p.name for p in web.home.state_dir.glob("state.db.pre-*"))
    assert copies == ["state.db.pre-v3"]                      # only the newest copy is kept
    refused = web.home.homework("update", str(lab.dir / "evil.hwup"))
    assert refused.returncode != 0 and "bad signature" in refused.stderr
    assert web.home.homework("reboot", check=True).stdout.strip() == "rebooting"    # reboot_command = true
