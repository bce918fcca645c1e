"""A fake A/B router disk in a directory, for the update tests: file-backed slot
"devices", an ESP directory with slot A's blessed entry, a kernel command line naming slot
A, a version stamp, and .hwup files made by the real scripts/make-hwup.py with a signing
key generated here (never committed)."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OLD_SLOT_B = b"old slot b\n" * 1000
RUNNING_SEQUENCE = 100


def make_hwup_module():
    spec = importlib.util.spec_from_file_location("make_hwup", REPO / "scripts" / "make-hwup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under root and its sha256: "unchanged" means equal digests."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@dataclass
class UpdateLab:
    dir: Path

    def __post_init__(self):
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        self.key = d / "keys" / "signing-key"
        self.pubkey = d / "update-key.pub"
        self.esp = d / "esp"
        self.cmdline = d / "cmdline"
        self.version_file = d / "version"
        self.state_dir = d / "state"
        self.state_dir.mkdir(exist_ok=True)
        (self.esp / "loader" / "entries").mkdir(parents=True)
        (self.esp / "homework" / "a").mkdir(parents=True)
        (self.esp / "homework" / "a" / "vmlinuz").write_bytes(b"kernel a")
        (self.esp / "homework" / "a" / "initrd.img").write_bytes(b"initrd a")
        (self.esp / "loader" / "entries" / "homework-a.conf").write_text(
            "title Homework router v1 (slot a)\nsort-key homework\nversion 100\n")
        from homework.update import slots
        slots.update_grubenv(self.esp, good_slot="a", try_slot="")
        self.cmdline.write_text("BOOT_IMAGE=/homework/a/vmlinuz root=PARTLABEL=hw-root-a rw console=ttyS0\n")
        self.version_file.write_text(f"v1\nsequence {RUNNING_SEQUENCE}\n")
        (d / "hw-root-a").write_bytes(b"running slot a\n" * 1000)
        (d / "hw-root-b").write_bytes(OLD_SLOT_B)
        self.root_image = os.urandom(5 * 1024 * 1024 + 12345) + bytes(2 * 1024 * 1024)
        self.builder = make_hwup_module()
        self.make("seed.hwup")        # creates the key pair and the public key file

    @property
    def slot_pattern(self) -> str:
        return str(self.dir / "hw-root-{slot}")

    def config(self) -> dict:
        """The [update] section pointing at this lab."""
        return {"enabled": True, "esp_dir": str(self.esp), "slot_device": self.slot_pattern,
                "cmdline_file": str(self.cmdline), "public_key": str(self.pubkey),
                "version_file": str(self.version_file), "reboot_command": "true"}

    def make(self, name: str, version: str = "v2", sequence: int = RUNNING_SEQUENCE + 1, arch: str = "amd64",
             key: Path | None = None, root: bytes | None = None) -> Path:
        parts = self.dir / "parts"
        parts.mkdir(exist_ok=True)
        (parts / "root.img").write_bytes(self.root_image if root is None else root)
        (parts / "vmlinuz").write_bytes(b"kernel " + version.encode())
        (parts / "initrd.img").write_bytes(b"initrd " + version.encode())
        out = self.dir / name
        argv = ["--root", str(parts / "root.img"), "--kernel", str(parts / "vmlinuz"),
                "--initrd", str(parts / "initrd.img"), "--version", version, "--sequence", str(sequence),
                "--arch", arch, "--key", str(key or self.key), "--zstd-level", "3", "-o", str(out)]
        if key is None:
            argv += ["--pubkey-out", str(self.pubkey)]
        self.builder.main(argv)
        return out

    def tamper(self, src: Path, member: str, name: str) -> Path:
        """A copy of src with one byte of a member's data flipped (the manifest still signed)."""
        data = bytearray(src.read_bytes())
        with tarfile.open(src) as tar:
            info = tar.getmember(member)
        data[info.offset_data + info.size // 2] ^= 0xFF
        out = self.dir / name
        out.write_bytes(bytes(data))
        return out

    def truncate(self, src: Path, name: str, keep: int | None = None) -> Path:
        data = src.read_bytes()
        out = self.dir / name
        out.write_bytes(data[: keep if keep is not None else len(data) * 2 // 3])
        return out

    def snapshot(self) -> tuple[bytes, dict]:
        """What an update may change: slot B's bytes and the ESP."""
        return (self.dir / "hw-root-b").read_bytes(), tree_digest(self.esp)


def main(argv: list[str]) -> None:
    """For the browser test: a lab in argv[1]; prints {config, good, bad} as JSON."""
    import json
    lab = UpdateLab(Path(argv[1]))
    good = lab.make("v2.hwup")
    bad = lab.make("evil.hwup", version="v9", sequence=900, key=lab.dir / "evil-key")
    print(json.dumps({"config": lab.config(), "good": str(good), "bad": str(bad), "dir": str(lab.dir)}))


if __name__ == "__main__":
    import sys
    main(sys.argv)
