"""The A/B slots as the boot loaders see them: the running slot from the kernel
command line, loader entries with boot counting, the GRUB environment block, mark-good."""
from __future__ import annotations

import os
import time

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
                      "withdrawn": []}
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
    return configuration.parse({"update": lab.config()})


def test_mark_good_command_waits_for_ready_and_refuses_when_never_ready(lab, capsys):
    cfg = lab_config(lab)
    lab.cmdline.write_text("root=PARTLABEL=hw-root-b rw\n")
    slots.add_try_entry(lab.esp, "b", "v2", 101)
    before = (lab.esp / "grub" / "grubenv").read_bytes()
    assert update_main.mark_good(cfg, ready=lambda: False, wait=0.2) == 1
    assert (lab.esp / "loader" / "entries" / "homework-b+1.conf").exists()       # not blessed
    assert (lab.esp / "grub" / "grubenv").read_bytes() == before
    assert "NOT marked good" in capsys.readouterr().err
    calls = iter([False, False, True])
    assert update_main.mark_good(cfg, ready=lambda: next(calls), wait=30) == 0
    assert (lab.esp / "loader" / "entries" / "homework-b.conf").exists()
    assert slots.read_grubenv(lab.esp)["good_slot"] == "b"


def test_mark_good_cli_without_a_slot_does_nothing(tmp_path, capsys):
    conf = tmp_path / "homework.toml"
    conf.write_text(f'version = 2\n[update]\ncmdline_file = "{tmp_path / "cmdline"}"\n'
                    f'esp_dir = "{tmp_path / "esp"}"\n')
    (tmp_path / "cmdline").write_text("root=/dev/sda1\n")
    assert update_main.main(["--config", str(conf), "mark-good"]) == 0
    assert "nothing to mark" in capsys.readouterr().out and not (tmp_path / "esp").exists()
