"""Reading and verifying .hwup files: files made by the real scripts/make-hwup.py
with a key generated here; each bad file is refused with its reason."""
from __future__ import annotations

import stat

import pytest
from cryptography.hazmat.primitives import serialization

from homework.update import hwup
from update_lab import RUNNING_SEQUENCE, UpdateLab


@pytest.fixture
def lab(tmp_path):
    return UpdateLab(tmp_path / "lab")


def verify(lab, path):
    return hwup.verify(path, hwup.load_public_key(lab.pubkey), hwup.read_running(lab.version_file))


def refused(lab, path) -> hwup.UpdateRefused:
    with pytest.raises(hwup.UpdateRefused) as info:
        verify(lab, path)
    return info.value


def test_a_good_file_verifies_and_names_its_members(lab):
    bundle = verify(lab, lab.make("good.hwup"))
    assert (bundle.version, bundle.sequence, bundle.arch) == ("v2", RUNNING_SEQUENCE + 1, "amd64")
    root = bundle.members["root.img.zst"]
    assert root.raw_size == len(lab.root_image) and root.size < root.raw_size      # compressed
    with open(bundle.path, "rb") as f:
        f.seek(bundle.members["vmlinuz"].offset)
        assert f.read(bundle.members["vmlinuz"].size) == b"kernel v2"


def test_the_builder_makes_the_key_0600_and_writes_the_public_key(lab):
    assert stat.S_IMODE(lab.key.stat().st_mode) == 0o600
    assert lab.key.with_name("signing-key.pub").read_bytes() == lab.pubkey.read_bytes()
    assert lab.pubkey.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    raw = hwup.load_public_key(lab.pubkey).public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    lab.pubkey.write_bytes(raw)                       # the raw 32 bytes are accepted too
    verify(lab, lab.make("again.hwup", key=lab.key))


def test_another_key_is_a_bad_signature(lab):
    other = lab.make("other.hwup", key=lab.dir / "other-key")
    assert refused(lab, other).reason == hwup.BAD_SIGNATURE


def test_a_changed_manifest_is_a_bad_signature(lab):
    good = lab.make("good.hwup")
    data = good.read_bytes().replace(b'"arch": "amd64"', b'"arch": "amd65"', 1)
    (lab.dir / "edited.hwup").write_bytes(data)
    assert refused(lab, lab.dir / "edited.hwup").reason == hwup.BAD_SIGNATURE


def test_wrong_architecture_and_too_old_are_refused(lab):
    assert refused(lab, lab.make("arm.hwup", arch="arm64")).reason == hwup.WRONG_ARCH
    err = refused(lab, lab.make("same.hwup", sequence=RUNNING_SEQUENCE))
    assert err.reason == hwup.TOO_OLD and "not newer" in str(err)
    assert refused(lab, lab.make("older.hwup", sequence=5)).reason == hwup.TOO_OLD


@pytest.mark.parametrize("member", ["vmlinuz", "initrd.img", "root.img.zst"])
def test_a_tampered_member_is_a_checksum_mismatch(lab, member):
    bad = lab.tamper(lab.make("good.hwup"), member, "tampered.hwup")
    assert refused(lab, bad).reason == hwup.CHECKSUM


@pytest.mark.parametrize("keep", [None, 700, 1600, 100])
def test_a_truncated_file_is_refused_as_truncated(lab, keep):
    bad = lab.truncate(lab.make("good.hwup"), "cut.hwup", keep)
    assert refused(lab, bad).reason == hwup.TRUNCATED


def test_something_else_is_not_an_update_file(lab):
    junk = lab.dir / "junk.hwup"
    junk.write_bytes(b"<html>not a tar</html>" * 100)
    assert refused(lab, junk).reason == hwup.NOT_HWUP


def test_running_version_stamp(tmp_path):
    stamp = tmp_path / "version"
    stamp.write_text("v0.4-2-gabc\ninputs 12\nsequence 1732400000\n")
    assert hwup.read_running(stamp) == hwup.Running("v0.4-2-gabc", 1732400000, hwup.running_arch())
    assert hwup.read_running(tmp_path / "missing").sequence == 0
