"""Install a verified .hwup into the inactive slot.

Order (each step only after the previous one fully succeeded, so a power cut or an
error anywhere leaves the boot loaders pointing at the running slot):
1. a copy of state.db (sqlite's backup API: consistent while the controller writes) as
   <state dir>/state.db.pre-<new version>, for a rollback that finds a newer schema (only
   the newest copy is kept);
2. root.img.zst through `zstd -dc` onto the slot's device, hashing what goes in (what
   comes out only when the manifest has no raw_sha256: the read-back checks it); fsync;
   drop the cache and read it back: sha256 against the manifest;
3. only then the ESP: vmlinuz/initrd.img to /homework/<slot>/, the slot's loader entry
   homework-<slot>+1.conf (boot once), try_slot=<slot> in the GRUB env block.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

from . import slots
from ..worker import offload
from .hwup import CHECKSUM, TRUNCATED, Bundle, UpdateRefused

CHUNK = 1024 * 1024
Progress = Callable[[str, int], None]      # (phase, percent 0-100)


class ApplyError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    slot: str                 # the inactive slot, written
    device: Path              # its block device (a plain file in tests)
    esp: Path
    esp_mount_command: str = ""


def _pause() -> None:
    time.sleep(0)     # a green thread under the controller's eventlet hub: let others run


def save_state(state_db: Path, version: str) -> Path | None:
    """state.db as it is now, next to it, for the old slot to find after a rollback."""
    state_db = Path(state_db)
    if not state_db.exists():
        return None
    safe = "".join(c if c.isalnum() or c in "._-+" else "_" for c in version)[:64]
    out = state_db.with_name(f"{state_db.name}.pre-{safe}")
    tmp = out.with_name(out.name + ".tmp")
    tmp.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{state_db}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(tmp)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    os.chmod(tmp, 0o600)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, out)
    # Only the newest copy matters: a rollback returns to the version that made it.
    for older in state_db.parent.glob(f"{state_db.name}.pre-*"):
        if older != out and not older.name.endswith(".tmp"):
            older.unlink(missing_ok=True)
    return out


def _device_size(fd: int) -> int | None:
    """A block device's size; None for a plain file (tests), which may grow."""
    if not stat.S_ISBLK(os.fstat(fd).st_mode):
        return None
    size = os.lseek(fd, 0, os.SEEK_END)
    os.lseek(fd, 0, os.SEEK_SET)
    return size


def _feed(src_path: Path, offset: int, size: int, pipe, digest, errors: list) -> None:
    """Copy the member's compressed bytes into zstd's stdin, hashing them on the way."""
    try:
        with open(src_path, "rb") as src:
            src.seek(offset)
            left = size
            while left:
                chunk = src.read(min(CHUNK, left))
                if not chunk:
                    raise ApplyError("the update file ended early")
                digest.update(chunk)
                pipe.write(chunk)
                left -= len(chunk)
    except (OSError, ApplyError) as exc:
        errors.append(exc)
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def write_root(bundle: Bundle, device: Path, progress: Progress) -> None:
    member = bundle.members["root.img.zst"]
    raw_size = member.raw_size
    assert raw_size is not None         # hwup.py refuses a manifest without it
    fd = os.open(device, os.O_WRONLY)
    try:
        capacity = _device_size(fd)
        if capacity is not None and capacity < raw_size:
            raise ApplyError(f"slot device {device} holds {capacity} bytes, the system image needs {raw_size}")
        proc = subprocess.Popen(["zstd", "-dcq"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None     # pipes
        # the unpacked bytes are hashed here only if the manifest has no raw_sha256 for
        # the read-back to check (one hash of a gigabyte fewer: minutes on a slow router)
        packed = hashlib.sha256()
        errors: list[BaseException] = []        # the feeder's, if it failed
        raw = hashlib.sha256() if not member.raw_sha256 else None
        feeder = threading.Thread(target=_feed, daemon=True,
                                  args=(bundle.path, member.offset, member.size, proc.stdin, packed, errors))
        feeder.start()
        written = 0
        try:
            while True:
                chunk = proc.stdout.read(CHUNK)
                if not chunk:
                    break
                if written + len(chunk) > raw_size:
                    raise ApplyError(f"root.img.zst unpacks to more than its raw_size {raw_size}")
                if raw is not None:
                    raw.update(chunk)
                view = memoryview(chunk)
                while view:     # a real thread: the kernel may hold a writer back (dirty pages)
                    view = view[offload(os.write, fd, view):]
                written += len(chunk)
                progress("writing", written * 90 // raw_size)
                _pause()
        finally:
            if proc.poll() is None and written < raw_size:
                proc.kill()
            proc.stdout.close()
            stderr = proc.stderr.read().decode(errors="replace").strip()
            proc.stderr.close()
            proc.wait()
            feeder.join()
        if errors:
            raise ApplyError(f"reading the update file: {errors[0]}")
        if proc.returncode != 0:
            raise ApplyError(f"zstd could not unpack root.img.zst: {stderr or proc.returncode}")
        if packed.hexdigest() != member.sha256:
            raise UpdateRefused(CHECKSUM, "root.img.zst changed while it was written")
        if written != raw_size:
            raise UpdateRefused(TRUNCATED, f"root.img.zst unpacked to {written} bytes, not {raw_size}")
        offload(os.fsync, fd)   # a gigabyte to a slow disk: never on the controller's loop
    finally:
        os.close(fd)
    expected = member.raw_sha256 if member.raw_sha256 else raw.hexdigest() if raw is not None else ""
    read_back(device, raw_size, expected, progress)


def read_back(device: Path, size: int, expected: str, progress: Progress) -> None:
    """What the slot holds now, read from the disk (not the page cache), against the image."""
    fd = os.open(device, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        h = hashlib.sha256()
        done = 0
        while done < size:
            chunk = offload(os.read, fd, min(CHUNK, size - done))   # from the disk, not the cache
            if not chunk:
                break
            h.update(chunk)
            done += len(chunk)
            progress("verifying", 90 + done * 8 // size)
            _pause()
    finally:
        os.close(fd)
    if done != size or h.hexdigest() != expected:
        raise ApplyError(f"the slot's device {device} does not read back the image the manifest names: "
                         "the disk may be failing")


def withdraw_offers(target: Target) -> None:
    """Before a byte of the slot is overwritten, no boot loader may still know it: its
    entries go (even a blessed one of the build it held) and GRUB's try_slot if it was
    this slot. A power cut during the write then leaves only the running slot bootable."""
    slots.ensure_mounted(target.esp, target.esp_mount_command)
    if not slots.entries(target.esp, target.slot) and slots.read_grubenv(target.esp).get("try_slot") != target.slot:
        return                              # nothing points at it: the ESP stays untouched
    with slots.writable(target.esp):
        slots.remove_entries(target.esp, target.slot)
        if slots.read_grubenv(target.esp).get("try_slot") == target.slot:
            slots.update_grubenv(target.esp, try_slot="")


def point_boot_at(bundle: Bundle, target: Target) -> None:
    """The ESP: the slot's kernel and initrd, its try-once entry, GRUB's one-shot try_slot."""
    slots.ensure_mounted(target.esp, target.esp_mount_command)
    with slots.writable(target.esp):
        # The slot's old entries first: none may point at a half-copied kernel.
        slots.remove_entries(target.esp, target.slot)
        kernel_dir = Path(target.esp) / "homework" / target.slot
        with open(bundle.path, "rb") as src:
            for name in ("vmlinuz", "initrd.img"):
                m = bundle.members[name]
                slots.copy_atomic(src, m.offset, m.size, kernel_dir / name)
        slots.add_try_entry(target.esp, target.slot, bundle.version, bundle.sequence)
        slots.update_grubenv(target.esp, try_slot=target.slot)


def apply(bundle: Bundle, target: Target, state_db: Path | None, progress: Progress) -> dict:
    """Install the verified bundle into target.slot; the next boot tries it once."""
    progress("writing", 0)
    saved = save_state(state_db, bundle.version) if state_db else None
    withdraw_offers(target)
    write_root(bundle, target.device, progress)
    progress("boot-loader", 98)
    point_boot_at(bundle, target)
    progress("ready-to-reboot", 100)
    return {"slot": target.slot, "version": bundle.version, "sequence": bundle.sequence,
            "state_copy": str(saved) if saved else None}
