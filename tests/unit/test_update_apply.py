"""Installing an update into the inactive slot, on a file-backed "disk": the slot
gets the image, the ESP the kernel and a try-once entry, only after the data is verified;
a refused or interrupted update leaves the slot's old bytes (refused) and the ESP as they were."""
from __future__ import annotations

import sqlite3
import time

import pytest

from homework import config as configuration
from homework.commands import CommandError
from homework.update import apply as applier
from homework.update import hwup, slots
from homework.update.service import Updater
from update_lab import UpdateLab


@pytest.fixture
def lab(tmp_path):
    return UpdateLab(tmp_path / "lab")


def updater(lab) -> Updater:
    cfg = configuration.parse({"state": {"dir": str(lab.state_dir)}, "update": lab.config()})
    db = sqlite3.connect(cfg.state_db)
    db.execute("CREATE TABLE devices (mac TEXT)")
    db.execute("INSERT INTO devices VALUES ('02:00:00:00:00:01')")
    db.commit()
    db.close()
    return Updater(cfg, cfg.state_db)


def wait_done(up: Updater, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = up.status()
        if status["state"] not in ("verifying", "writing"):
            return status
        time.sleep(0.05)
    raise AssertionError(f"update still {up.status()}")


def test_a_good_update_writes_slot_b_then_points_the_boot_loaders_at_it_once(lab):
    up = updater(lab)
    assert up.status()["other"] == {"slot": "b", "state": "empty", "version": None, "sequence": None}
    started = up.start(lab.make("good.hwup"))
    assert started == {"state": "writing", "version": "v2", "slot": "b"}
    status = wait_done(up)
    assert (status["state"], status["percent"], status["version"], status["error"]) == ("ready-to-reboot", 100,
                                                                                        "v2", None)
    assert (lab.dir / "hw-root-b").read_bytes()[:len(lab.root_image)] == lab.root_image
    assert (lab.dir / "hw-root-a").read_bytes().startswith(b"running slot a")
    esp = lab.esp
    assert sorted(p.name for p in (esp / "loader" / "entries").iterdir()) == ["homework-a.conf", "homework-b+1.conf"]
    assert (esp / "homework" / "b" / "vmlinuz").read_bytes() == b"kernel v2"
    assert (esp / "homework" / "b" / "initrd.img").read_bytes() == b"initrd v2"
    assert slots.read_grubenv(esp) == {"good_slot": "a", "try_slot": "b"}
    assert status["running"] == {"version": "v1", "sequence": 100, "arch": "amd64", "slot": "a"}
    assert status["other"] == {"slot": "b", "state": "trying", "version": "v2", "sequence": 101}
    copy = lab.state_dir / "state.db.pre-v2"                   # for a rollback to find its data
    assert sqlite3.connect(copy).execute("SELECT mac FROM devices").fetchall() == [("02:00:00:00:00:01",)]
    # A new controller (restarted before the reboot) still says the update waits for a reboot.
    again = Updater(up.config, up.state_db).status()
    assert (again["state"], again["version"]) == ("ready-to-reboot", "v2")
    assert up.slot_text() == "A (updates go to B)"


@pytest.mark.parametrize("make_bad, reason", [
    (lambda lab: lab.make("other.hwup", key=lab.dir / "other-key"), hwup.BAD_SIGNATURE),
    (lambda lab: lab.truncate(lab.make("good.hwup"), "cut.hwup"), hwup.TRUNCATED),
    (lambda lab: lab.make("arm.hwup", arch="arm64"), hwup.WRONG_ARCH),
    (lambda lab: lab.make("old.hwup", sequence=99), hwup.TOO_OLD),
    (lambda lab: lab.tamper(lab.make("good.hwup"), "root.img.zst", "bad.hwup"), hwup.CHECKSUM),
])
def test_a_refused_update_writes_nothing(lab, make_bad, reason):
    up = updater(lab)
    bad = make_bad(lab)
    before = lab.snapshot()
    with pytest.raises(CommandError) as info:
        up.start(bad)
    assert info.value.status == 400 and reason in str(info.value)
    status = up.status()
    assert (status["state"], status["reason"]) == ("failed", reason)
    assert lab.snapshot() == before
    assert not list(lab.state_dir.glob("state.db.pre-*"))


def test_an_interrupted_write_leaves_the_esp_so_the_old_slot_still_boots(lab):
    up = updater(lab)
    bundle = hwup.verify(lab.make("good.hwup"), hwup.load_public_key(lab.pubkey),
                         hwup.read_running(lab.version_file))
    before_esp = lab.snapshot()[1]
    seen = []

    def power_cut(phase, percent):
        seen.append(percent)
        if phase == "writing" and percent >= 40:
            raise KeyboardInterrupt("power cut")

    with pytest.raises(KeyboardInterrupt):
        applier.apply(bundle, up.target(), None, power_cut)
    assert max(seen) >= 40 and lab.snapshot()[1] == before_esp
    assert (lab.dir / "hw-root-b").read_bytes()[:len(lab.root_image)] != lab.root_image      # half written
    assert slots.read_grubenv(lab.esp) == {"good_slot": "a", "try_slot": ""}


def test_the_slot_being_written_is_offered_to_no_boot_loader_until_it_is_verified(lab):
    # slot B held a build that was once good (its blessed entry) and a pending GRUB try:
    # both go before its first byte is overwritten, so a power cut boots only slot A
    up = updater(lab)
    (lab.esp / "loader" / "entries" / "homework-b.conf").write_text(slots.entry_text("b", "v0", 99))
    slots.update_grubenv(lab.esp, try_slot="b")
    bundle = hwup.verify(lab.make("good.hwup"), hwup.load_public_key(lab.pubkey),
                         hwup.read_running(lab.version_file))
    seen = {}

    def power_cut(phase, percent):
        if phase == "writing" and percent >= 10:
            seen["entries"] = sorted(p.name for p in (lab.esp / "loader" / "entries").iterdir())
            seen["grubenv"] = slots.read_grubenv(lab.esp)
            raise KeyboardInterrupt("power cut")

    with pytest.raises(KeyboardInterrupt):
        applier.apply(bundle, up.target(), None, power_cut)
    assert seen == {"entries": ["homework-a.conf"], "grubenv": {"good_slot": "a", "try_slot": ""}}


def test_a_slot_that_reads_back_wrong_is_not_booted(lab, monkeypatch):
    up = updater(lab)
    before_esp = lab.snapshot()[1]
    real = applier.read_back
    monkeypatch.setattr(applier, "read_back", lambda device, size, expected, progress:
                        real(device, size, "0" * 64, progress))          # a disk that lost the write
    up.start(lab.make("good.hwup"))
    status = wait_done(up)
    assert status["state"] == "failed" and "does not read back" in status["error"]
    assert lab.snapshot()[1] == before_esp


def test_one_update_at_a_time_and_off_unless_enabled(lab):
    stale = lab.state_dir / "update" / "upload.hwup.part"      # a controller stopped mid-upload
    stale.parent.mkdir()
    stale.write_bytes(b"half")
    up = updater(lab)
    assert not stale.exists()
    up.claim()
    with pytest.raises(CommandError) as info:
        up.start(lab.make("good.hwup"))
    assert info.value.status == 409
    with pytest.raises(CommandError):
        up.reboot()
    up.release()
    assert up.reboot() == {"rebooting": True}
    off = Updater(configuration.parse({"state": {"dir": str(lab.state_dir)}}), None)
    with pytest.raises(CommandError) as info:
        off.start(lab.dir / "good.hwup")
    assert info.value.status == 409 and "enabled = false" in str(info.value)
