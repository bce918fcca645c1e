"""The A/B slots as the boot loaders see them: the running slot from the kernel
command line, loader entries with boot counting, the GRUB environment block, mark-good."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from homework.update import __main__ as update_main
from homework.update import slots
from homework import config as configuration
from update_lab import UpdateLab


@pytest.fixture
def lab(tmp_path):
    return UpdateLab(tmp_path / "lab")


def test_the_running_slot_comes_from_the_kernel_command_line(tmp_path):
    cmdline = tmp_path / "cmdline"
    for text, slot in (("root=PARTLABEL=hw-root-b rw quiet", "b"), ("ro root=PARTLABEL=hw-root-a", "a"),
                       ("root=/dev/sda2 rw", None), ("root=PARTLABEL=hw-root-ab", None)):
        cmdline.write_text(text + "\n")
        assert slots.running_slot(cmdline) == slot
    assert slots.running_slot(tmp_path / "missing") is None
    assert slots.slot_device("/dev/disk/by-partlabel/hw-root-{slot}", "b").name == "hw-root-b"


def test_the_grub_env_block_is_1024_bytes_and_round_trips(tmp_path):
    slots.update_grubenv(tmp_path, good_slot="a", try_slot="")
    data = (tmp_path / "grub" / "grubenv").read_bytes()
    assert len(data) == 1024 and data.startswith(b"# GRUB Environment Block\ngood_slot=a\ntry_slot=\n###")
    slots.update_grubenv(tmp_path, try_slot="b")
    assert slots.read_grubenv(tmp_path) == {"good_slot": "a", "try_slot": "b"}
    with pytest.raises(slots.SlotError):
        slots.update_grubenv(tmp_path, big="x" * 1100)
    assert slots.read_grubenv(tmp_path) == {"good_slot": "a", "try_slot": "b"}    # unchanged


def test_a_try_entry_replaces_the_slots_old_entries(lab):
    entries = lab.esp / "loader" / "entries"
    (entries / "homework-b+0-1.conf").write_text("title Homework router v0 (slot b)\nversion 99\n")
    path = slots.add_try_entry(lab.esp, "b", "v2", 101)
    assert sorted(p.name for p in entries.iterdir()) == ["homework-a.conf", "homework-b+1.conf"]
    text = path.read_text()
    assert "version 101\n" in text and "options root=PARTLABEL=hw-root-b rw" in text
    assert "linux /homework/b/vmlinuz\n" in text and "sort-key homework\n" in text
    assert slots.slot_info(lab.esp, "b") == {"slot": "b", "state": "trying", "version": "v2", "sequence": 101}


def test_mark_good_blesses_the_entry_systemd_boot_renamed(lab):
    slots.add_try_entry(lab.esp, "b", "v2", 101)
    entries = lab.esp / "loader" / "entries"
    (entries / "homework-b+1.conf").rename(entries / "homework-b+0-1.conf")    # what systemd-boot does
    slots.update_grubenv(lab.esp, try_slot="")                                  # what GRUB does
    assert slots.slot_info(lab.esp, "b")["state"] == "failed"                  # if nobody blesses it
    result = slots.mark_good(lab.esp, "b")
    assert result == {"slot": "b", "entry": "homework-b.conf", "renamed_from": "homework-b+0-1.conf",
                      "withdrawn": [], "written": True}
    assert sorted(p.name for p in entries.iterdir()) == ["homework-a.conf", "homework-b.conf"]
    assert slots.read_grubenv(lab.esp) == {"good_slot": "b", "try_slot": ""}
    assert slots.slot_info(lab.esp, "b")["state"] == "good"


def test_an_offer_the_boot_loader_did_not_take_is_withdrawn_from_the_other_loader_too(lab):
    # slot B was offered to both loaders; GRUB (BIOS) spent its one-shot try and the power
    # went; the next boot came back on the good slot A: systemd-boot's half of the same
    # offer must not try B on a later UEFI boot
    offered = slots.add_try_entry(lab.esp, "b", "v3", 103)
    slots.update_grubenv(lab.esp, try_slot="")                  # GRUB took the try and cleared it
    past = time.time() - 600
    os.utime(offered, (past, past))
    result = slots.mark_good(lab.esp, "a", booted_at=time.time() - 60)
    assert result["withdrawn"] == ["homework-b+1.conf -> homework-b+0-1.conf"]
    assert slots.slot_info(lab.esp, "b")["state"] == "failed"
    assert slots.slot_info(lab.esp, "a")["state"] == "good"


def test_grubs_half_of_a_spent_offer_is_cleared_but_a_fresh_offer_stays(lab):
    slots.add_try_entry(lab.esp, "b", "v3", 103)
    slots.update_grubenv(lab.esp, try_slot="b")
    env = lab.esp / "grub" / "grubenv"
    entry = lab.esp / "loader" / "entries" / "homework-b+1.conf"
    # made during this boot (an update written before the router was ready): kept
    result = slots.mark_good(lab.esp, "a", booted_at=time.time() - 60)
    assert result["withdrawn"] == [] and entry.exists()
    assert slots.read_grubenv(lab.esp) == {"good_slot": "a", "try_slot": "b"}
    # made before this boot, which is on A: systemd-boot spent it (UEFI); GRUB's half goes too
    entries = lab.esp / "loader" / "entries"
    (entries / "homework-b+1.conf").rename(entries / "homework-b+0-1.conf")
    past = time.time() - 600
    os.utime(env, (past, past))
    result = slots.mark_good(lab.esp, "a", booted_at=time.time() - 60)
    assert result["withdrawn"] == ["grubenv try_slot=b"]
    assert slots.read_grubenv(lab.esp) == {"good_slot": "a", "try_slot": ""}
    assert slots.slot_info(lab.esp, "b")["state"] == "failed"


def lab_config(lab):
    # the alert files go beside the control socket: the lab's, never this machine's /run/homework
    return configuration.parse({"update": lab.config(),
                                "controller": {"control_socket": str(lab.dir / "control.sock")}})


def test_mark_good_command_waits_for_ready_and_refuses_when_never_ready(lab, capsys):
    cfg = lab_config(lab)
    lab.cmdline.write_text("root=PARTLABEL=hw-root-b rw\n")
    slots.add_try_entry(lab.esp, "b", "v2", 101)
    before = (lab.esp / "grub" / "grubenv").read_bytes()
    assert update_main.mark_good(cfg, ready=lambda: False, wait=0.2, uefi=True) == update_main.REBOOT
    assert (lab.esp / "loader" / "entries" / "homework-b+1.conf").exists()       # not blessed
    assert (lab.esp / "grub" / "grubenv").read_bytes() == before
    assert "NOT marked good" in capsys.readouterr().err
    calls = iter([False, False, True])
    assert update_main.mark_good(cfg, ready=lambda: next(calls), wait=30, uefi=True) == 0
    assert (lab.esp / "loader" / "entries" / "homework-b.conf").exists()
    assert slots.read_grubenv(lab.esp)["good_slot"] == "b"


def test_mark_good_cli_without_a_slot_does_nothing(tmp_path, capsys):
    conf = tmp_path / "homework.toml"
    conf.write_text(f'version = 2\n[update]\ncmdline_file = "{tmp_path / "cmdline"}"\n'
                    f'esp_dir = "{tmp_path / "esp"}"\n')
    (tmp_path / "cmdline").write_text("root=/dev/sda1\n")
    assert update_main.main(["--config", str(conf), "mark-good"]) == 0
    assert "nothing to mark" in capsys.readouterr().out and not (tmp_path / "esp").exists()


# -- a power cut at boot must never make a reboot loop ------------------------------------------
def test_a_good_slot_is_not_written_again(lab):
    env = lab.esp / "grub" / "grubenv"
    entries = lab.esp / "loader" / "entries"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (env, *entries.iterdir())}
    result = slots.mark_good(lab.esp, "a", booted_at=time.time() - 60)
    assert result["written"] is False and result["entry"] == "homework-a.conf"
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (env, *entries.iterdir())}
    assert after == before                               # not a byte, not even a time stamp
    assert slots.update_grubenv(lab.esp, good_slot="a") is False


def test_grubenv_changes_are_one_sector_written_in_place(lab, monkeypatch):
    env = lab.esp / "grub" / "grubenv"
    inode = env.stat().st_ino
    writes = []
    real = os.pwrite
    monkeypatch.setattr(os, "pwrite", lambda fd, data, at: writes.append((at, len(data))) or real(fd, data, at))
    monkeypatch.setattr(slots, "write_atomic", lambda *a: pytest.fail("a whole new file for a one-key change"))
    assert slots.update_grubenv(lab.esp, try_slot="b") is True
    assert writes == [(0, 512)] and env.stat().st_ino == inode        # in place, like GRUB's save_env
    assert slots.read_grubenv(lab.esp) == {"good_slot": "a", "try_slot": "b"}
    assert len(env.read_bytes()) == 1024


def test_a_broken_grubenv_is_made_anew(lab):
    env = lab.esp / "grub" / "grubenv"
    env.write_bytes(b"\0" * 300)                          # torn, half zeroes
    assert slots.update_grubenv(lab.esp, good_slot="a", try_slot="") is True
    assert slots.read_grubenv(lab.esp) == {"good_slot": "a", "try_slot": ""} and len(env.read_bytes()) == 1024


@pytest.mark.parametrize("uefi", [True, False])
def test_boot_status_names_a_trial_and_its_fallback(lab, uefi):
    (lab.esp / "homework" / "b").mkdir()
    (lab.esp / "homework" / "b" / "vmlinuz").write_bytes(b"kernel b")
    assert slots.boot_status(lab.esp, "a", uefi) == {"trial": False, "fallback": False}    # the only slot
    slots.add_try_entry(lab.esp, "b", "v2", 101)
    slots.update_grubenv(lab.esp, try_slot="")          # GRUB booted b once and cleared it
    assert slots.boot_status(lab.esp, "b", uefi) == {"trial": True, "fallback": True}
    slots.mark_good(lab.esp, "b")
    assert slots.boot_status(lab.esp, "b", uefi)["trial"] is False


def test_a_slot_not_ready_reboots_only_when_tried_once_with_a_fallback(lab, capsys):
    cfg = lab_config(lab)
    never = lambda: False      # noqa: E731
    # the only slot that boots, never ready: no reboot, an alert
    assert update_main.mark_good(cfg, ready=never, wait=0.1, uefi=True) == update_main.PROBLEM
    alert = update_main.alert_dir(cfg) / update_main.ALERT_FILE
    assert "only system that boots" in json.loads(alert.read_text())["detail"]
    # good already (a fallback exists), never ready: no reboot either
    (lab.esp / "homework" / "b").mkdir()
    (lab.esp / "homework" / "b" / "vmlinuz").write_bytes(b"kernel b")
    (lab.esp / "loader" / "entries" / "homework-b.conf").write_text("title Homework router v0 (slot b)\nversion 90\n")
    assert update_main.mark_good(cfg, ready=never, wait=0.1, uefi=True) == update_main.PROBLEM
    assert "good system already" in json.loads(alert.read_text())["detail"]


def test_an_unreadable_esp_never_reboots_and_tells_the_household(lab, monkeypatch):
    cfg = lab_config(lab)
    lab.cmdline.write_text("root=PARTLABEL=hw-root-b rw\n")
    slots.add_try_entry(lab.esp, "b", "v2", 101)        # even a slot being tried

    def eio(*args, **kw):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(slots, "read_grubenv", eio)
    assert update_main.mark_good(cfg, ready=lambda: False, wait=0.1, uefi=False) == update_main.PROBLEM
    alert = update_main.alert_dir(cfg) / update_main.ALERT_FILE
    assert "could not be read" in json.loads(alert.read_text())["detail"]
    # ready, and the ESP fails while marking: the router works, no reboot, an alert
    assert update_main.mark_good(cfg, ready=lambda: True, wait=1, uefi=False) == update_main.PROBLEM
    assert "could not be updated" in json.loads(alert.read_text())["detail"]


def test_the_image_script_reboots_on_exit_10_only():
    script = (Path(__file__).resolve().parents[2] / "image" / "guest" / "homework-mark-good").read_text()
    assert "\n  10) announce \"HOMEWORK-SLOT failed=" in script and "exit 1 ;;" in script
    assert script.rstrip().endswith("exit 0")


def test_mark_good_says_each_write_before_it_and_nothing_when_good(lab):
    slots.add_try_entry(lab.esp, "b", "v2", 101)
    steps = []
    slots.mark_good(lab.esp, "b", step=steps.append)
    assert steps == ["bless homework-b+1.conf", "grubenv good_slot=b"]
    steps.clear()
    assert slots.mark_good(lab.esp, "b", step=steps.append)["written"] is False and steps == []


def test_the_esp_mount_is_found_in_mountinfo(tmp_path):
    info = tmp_path / "mountinfo"
    info.write_text("22 1 0:21 / /boot/efi rw,relatime shared:7 - autofs systemd-1 rw,fd=50\n"
                    "80 22 254:2 / /boot/efi ro,relatime shared:40 - vfat /dev/vda2 ro,fmask=0077\n")
    assert slots._mount_options(Path("/boot/efi"), str(info)) == ["ro", "relatime"]      # the top one
    assert slots._mount_options(Path("/elsewhere"), str(info)) is None
