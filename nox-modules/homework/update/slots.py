"""The A/B slots as the boot loaders see them (the layout is image/README.md's contract).

- The running slot is named by the kernel command line: root=PARTLABEL=hw-root-<a|b>.
- UEFI (systemd-boot) boots the first loader entry homework-* by version; an entry
  homework-<slot>+1.conf is tried once (systemd-boot renames it +0-1 before booting it)
  and sorts last once its tries are used up, so an update never blessed falls back.
- Legacy BIOS (GRUB) reads /grub/grubenv on the ESP: try_slot (one-shot, GRUB clears
  it when it boots it) else good_slot.

Every change to the ESP is its smallest atomic step, and none is made when nothing changes
(a power cut at boot must never be able to hurt an ESP that was already right):
- GRUB's environment block is a file of exactly 1024 bytes that GRUB itself rewrites in
  place (save_env writes its sectors; it cannot make files). We do the same: the 512-byte
  sectors that differ are written where they are and synced; every key we keep fits the
  first sector, so a change is one sector write, which a disk does whole or not at all.
  Only a missing or malformed block is made anew (write-to-temporary + fsync + rename).
- A loader entry is blessed or spent by a rename (what systemd-boot does itself).
- A new file (a slot's kernel, a try-once entry) is written to a temporary name, synced,
  then renamed, so a power cut leaves the old file or the new one, never half of one.
The image checks and repairs the FAT (fsck.fat -a) at every boot before anything reads or
writes it (image/guest/homework-esp-check), since a cut in a rename can still leave a
directory half updated.
"""
from __future__ import annotations

import os
import re
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SLOTS = ("a", "b")
ENTRIES = Path("loader") / "entries"
GRUBENV = Path("grub") / "grubenv"
GRUBENV_SIZE = 1024
GRUBENV_HEADER = b"# GRUB Environment Block\n"
ENTRY = re.compile(r"^homework-(?P<slot>[ab])(?:\+(?P<left>\d+)(?:-(?P<done>\d+))?)?\.conf$")
CMDLINE_SLOT = re.compile(r"(?:^|\s)root=PARTLABEL=hw-root-(?P<slot>[ab])(?:\s|$)")


class SlotError(Exception):
    pass


def running_slot(cmdline_file: Path) -> str | None:
    """'a' or 'b', or None when the system was not booted from a slot (a dev machine)."""
    try:
        m = CMDLINE_SLOT.search(Path(cmdline_file).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return m.group("slot") if m else None


def other(slot: str) -> str:
    return "b" if slot == "a" else "a"


def slot_device(pattern: str, slot: str) -> Path:
    return Path(pattern.format(slot=slot))


# -- the ESP is read-only until a change needs it --------------------------------------------
def _mount_options(path: Path, mountinfo: str = "/proc/self/mountinfo") -> list[str] | None:
    """The options of the top mount on exactly `path`, None if nothing is mounted there."""
    found = None
    try:
        with open(mountinfo, encoding="utf-8") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 5 and fields[4] == str(path):
                    found = fields[5].split(",")
    except OSError:
        return None
    return found


@contextmanager
def writable(esp: Path):
    """The image mounts the ESP read-only (fstab), so reading it, as every boot does, writes
    nothing, not even FAT's dirty flag, which a read-write mount sets. A change remounts it
    read-write for just that long, and read-only again after (which writes the flag back
    clean). A plain directory (tests, a system not booted from the image) is left alone."""
    esp = Path(esp)
    os.listdir(esp)                        # an automount mounts on first access
    options = _mount_options(esp)
    was_ro = options is not None and "ro" in options
    if was_ro:
        _remount(esp, "rw")
    try:
        yield
    finally:
        if was_ro:
            _remount(esp, "ro")


def _remount(esp: Path, mode: str) -> None:
    r = subprocess.run(["mount", "-o", f"remount,{mode}", str(esp)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SlotError(f"cannot remount the ESP at {esp} {mode}: {r.stderr.strip()}")


# -- atomic files on the ESP (FAT: rename replaces; fsync the directory for the rename) --------
def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass      # some file systems refuse fsync on a directory; the rename is still ordered
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def copy_atomic(src, offset: int, size: int, path: Path) -> None:
    """size bytes of the open file src from offset into path, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    src.seek(offset)
    with open(tmp, "wb") as f:
        left = size
        while left:
            chunk = src.read(min(1 << 20, left))
            if not chunk:
                raise SlotError(f"{path.name}: the source ended early")
            f.write(chunk)
            left -= len(chunk)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


# -- GRUB environment block ------------------------------------------------------------------
def read_grubenv(esp: Path) -> dict[str, str]:
    try:
        data = (Path(esp) / GRUBENV).read_bytes()
    except FileNotFoundError:
        return {}
    env = {}
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        env[key] = value
    return env


def grubenv_block(env: dict[str, str]) -> bytes:
    body = GRUBENV_HEADER + b"".join(f"{k}={v}\n".encode() for k, v in env.items())
    if len(body) > GRUBENV_SIZE:
        raise SlotError("the GRUB environment does not fit in its 1024 bytes")
    return body + b"#" * (GRUBENV_SIZE - len(body))


SECTOR = 512


def _grubenv_well_formed(esp: Path) -> bool:
    try:
        data = (Path(esp) / GRUBENV).read_bytes()
    except FileNotFoundError:
        return False
    return len(data) == GRUBENV_SIZE and data.startswith(GRUBENV_HEADER)


def update_grubenv(esp: Path, **changes: str) -> bool:
    """Apply `changes` to the block; False (nothing written) when it already says that."""
    env = read_grubenv(esp)
    wanted = {**env, **changes}
    block = grubenv_block(wanted)
    path = Path(esp) / GRUBENV
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        old = b""
    if old == block:
        return False
    if len(old) != GRUBENV_SIZE or not old.startswith(GRUBENV_HEADER):
        write_atomic(path, block)        # missing or malformed: a whole new block
        return True
    fd = os.open(path, os.O_WRONLY)
    try:
        for at in range(0, GRUBENV_SIZE, SECTOR):
            if old[at:at + SECTOR] != block[at:at + SECTOR]:
                os.pwrite(fd, block[at:at + SECTOR], at)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


# -- systemd-boot loader entries ---------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    path: Path
    slot: str
    tries_left: int | None     # None: a blessed entry (no counter)
    tries_done: int

    @property
    def state(self) -> str:
        if self.tries_left is None:
            return "good"
        return "trying" if self.tries_left > 0 else "failed"

    def fields(self) -> dict[str, str]:
        out: dict[str, str] = {}
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return out
        for line in text.splitlines():
            key, _, value = line.strip().partition(" ")
            if key:
                out[key] = value.strip()
        return out


def entries(esp: Path, slot: str | None = None) -> list[Entry]:
    directory = Path(esp) / ENTRIES
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        m = ENTRY.match(name)
        if m and (slot is None or m.group("slot") == slot):
            left = m.group("left")
            found.append(Entry(directory / name, m.group("slot"), int(left) if left is not None else None,
                               int(m.group("done") or 0)))
    return found


def entry_text(slot: str, version: str, sequence: int) -> str:
    return (f"title Homework router {version} (slot {slot})\n"
            "sort-key homework\n"
            f"version {sequence}\n"
            f"linux /homework/{slot}/vmlinuz\n"
            f"initrd /homework/{slot}/initrd.img\n"
            f"options root=PARTLABEL=hw-root-{slot} rw console=tty0 console=ttyS0,115200n8 net.ifnames=1\n")


def remove_entries(esp: Path, slot: str) -> None:
    for entry in entries(esp, slot):
        entry.path.unlink()
    _fsync_dir(Path(esp) / ENTRIES)


def add_try_entry(esp: Path, slot: str, version: str, sequence: int) -> Path:
    """The slot's only entry: boot it once (+1), then fall back unless it is marked good."""
    remove_entries(esp, slot)
    path = Path(esp) / ENTRIES / f"homework-{slot}+1.conf"
    write_atomic(path, entry_text(slot, version, sequence).encode())
    return path


def mark_good(esp: Path, slot: str, booted_at: float | None = None, step=None) -> dict:
    """The running slot works: bless its entry (drop the counter) and make it GRUB's good
    slot. An offer of the other slot made before this boot (`booted_at`, epoch seconds)
    was not taken, so the boot loader that ran spent it (systemd-boot counts the entry
    down, GRUB clears try_slot before it boots): the other loader's half of that offer is
    withdrawn too, or a box whose firmware boots the other way next time (a BIOS/UEFI
    setting changed) would try a slot that already failed. An offer made during this boot
    (an update written before the router was ready) stays. Nothing is written (the ESP is
    not even remounted read-write) when all of that holds already."""
    esp = Path(esp)
    step = step or (lambda what: None)     # called before each write (the boot test cuts there)
    target = esp / ENTRIES / f"homework-{slot}.conf"
    bless = [e for e in entries(esp, slot) if e.tries_left is not None]
    spend = [e for e in entries(esp, other(slot)) if e.tries_left and _older_than(e.path, booted_at)]
    changes = {"good_slot": slot}
    try_slot = read_grubenv(esp).get("try_slot", "")
    withdrawn = []
    if try_slot == slot or (try_slot and _older_than(esp / GRUBENV, booted_at)):
        changes["try_slot"] = ""
    env_change = {**read_grubenv(esp), **changes} != read_grubenv(esp) or not _grubenv_well_formed(esp)
    renamed = None
    if bless or spend or env_change:
        with writable(esp):
            for entry in bless:
                step(f"bless {entry.path.name}")
                os.replace(entry.path, target)
                renamed = entry.path.name
            for entry in spend:
                spent = esp / ENTRIES / f"homework-{entry.slot}+0-{entry.tries_done + (entry.tries_left or 0)}.conf"
                step(f"withdraw {entry.path.name}")
                os.replace(entry.path, spent)
                withdrawn.append(f"{entry.path.name} -> {spent.name}")
            if bless or spend:
                _fsync_dir(esp / ENTRIES)
            if env_change:
                step(f"grubenv {' '.join(f'{k}={v}' for k, v in changes.items())}")
                update_grubenv(esp, **changes)
    if try_slot and try_slot != slot and changes.get("try_slot") == "":
        withdrawn.append(f"grubenv try_slot={try_slot}")
    return {"slot": slot, "entry": target.name if target.exists() else None, "renamed_from": renamed,
            "withdrawn": withdrawn, "written": bool(bless or spend or env_change)}


def boot_status(esp: Path, slot: str, uefi: bool) -> dict:
    """How this boot of `slot` came about, as the boot loader that ran it keeps it:
    trial (a freshly written slot booted once, not yet marked good) and fallback (the other
    slot is one the loader would boot instead). Reading the ESP may raise OSError: the
    caller then knows neither, and must not reboot on a guess."""
    esp = Path(esp)
    env = read_grubenv(esp)
    if uefi:
        mine = entries(esp, slot)
        trial = bool(mine) and all(e.tries_left is not None for e in mine)
        fallback = any(e.tries_left is None for e in entries(esp, other(slot)))
    else:
        trial = env.get("good_slot", "") != slot
        fallback = env.get("good_slot", "") == other(slot)
    if fallback:      # and it has a kernel to boot
        fallback = (esp / "homework" / other(slot) / "vmlinuz").is_file()
    return {"trial": trial, "fallback": fallback}


def _older_than(path: Path, when: float | None) -> bool:
    """Written before `when` (None: always). FAT keeps times to 2 s: a margin of 2 s."""
    if when is None:
        return True
    try:
        return path.stat().st_mtime < when - 2
    except OSError:
        return False


def slot_info(esp: Path, slot: str) -> dict:
    """What the boot loader knows of a slot: its entry's state and version (title), if any."""
    found = entries(esp, slot)
    if not found:
        return {"slot": slot, "state": "empty", "version": None, "sequence": None}
    entry = found[0]
    fields = entry.fields()
    title = fields.get("title", "")
    m = re.match(r"Homework router (.+) \(slot [ab]\)$", title)
    seq = fields.get("version", "")
    return {"slot": slot, "state": entry.state, "version": m.group(1) if m else None,
            "sequence": int(seq) if seq.isdigit() else None}


def ensure_mounted(esp: Path, mount_command: str) -> None:
    """The image may leave the ESP unmounted (fstab noauto): mount it before use."""
    if (Path(esp) / "loader").is_dir() or not mount_command:
        return
    r = subprocess.run(mount_command, shell=True, capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or not (Path(esp) / "loader").is_dir():
        raise SlotError(f"the ESP is not available at {esp}: {r.stderr.strip() or 'no loader/ directory'}")
