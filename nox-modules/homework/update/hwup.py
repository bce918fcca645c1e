"""Read and verify a .hwup update file without writing anything.

A .hwup is an uncompressed POSIX tar whose members are, in this order:
manifest.json, manifest.sig (raw ed25519 signature of manifest.json's bytes), then
the files the manifest lists (vmlinuz, initrd.img, root.img.zst). Verification checks
the signature against the key baked into the running image first, so nothing an
attacker wrote is trusted (not even the manifest's sizes) before it is known signed.
"""
from __future__ import annotations

import hashlib
import json
import platform
import re
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

FORMAT = 1
MEMBERS = ("vmlinuz", "initrd.img", "root.img.zst")
MAX_MANIFEST = 64 * 1024
CHUNK = 1024 * 1024
ARCHES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "armhf", "riscv64": "riscv64"}

# The reasons an update is refused (the board, API and CLI show them as they are).
BAD_SIGNATURE = "bad signature"
WRONG_ARCH = "wrong architecture"
TOO_OLD = "too old"
TRUNCATED = "truncated"
CHECKSUM = "checksum mismatch"
NOT_HWUP = "not an update file"


class UpdateRefused(Exception):
    """Why an update file is not installed; str() is "<reason>: <detail>"."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Running:
    """What the router runs now: the update must be for its arch and newer."""
    version: str
    sequence: int
    arch: str


@dataclass(frozen=True)
class Member:
    name: str
    offset: int         # of the data in the .hwup
    size: int
    sha256: str
    raw_size: int | None = None
    raw_sha256: str | None = None


@dataclass(frozen=True)
class Bundle:
    """A verified .hwup: its manifest and where each member's bytes are."""
    path: Path
    version: str
    sequence: int
    arch: str
    members: dict[str, Member]


def running_arch() -> str:
    machine = platform.machine()
    return ARCHES.get(machine, machine)


def read_running(version_file: Path) -> Running:
    """The image's stamp: first line the version, a line `sequence N` (0 when absent: a dev tree)."""
    try:
        lines = Path(version_file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    version = lines[0].strip() if lines else "development"
    sequence = 0
    for line in lines[1:]:
        m = re.fullmatch(r"\s*sequence\s+(\d+)\s*", line)
        if m:
            sequence = int(m.group(1))
    return Running(version or "development", sequence, running_arch())


def load_public_key(path: Path) -> Ed25519PublicKey:
    """PEM (what scripts/make-hwup.py writes) or the raw 32 bytes."""
    data = Path(path).read_bytes()
    if data.lstrip().startswith(b"-----BEGIN"):
        key = serialization.load_pem_public_key(data)
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"{path}: not an ed25519 public key")
        return key
    if len(data) != 32:
        raise ValueError(f"{path}: expected a PEM ed25519 public key or its raw 32 bytes")
    return Ed25519PublicKey.from_public_bytes(data)


def _pause() -> None:
    # Under the controller's eventlet hub this lets other green threads run between chunks.
    time.sleep(0)


def _read_member(f, info: tarfile.TarInfo, total: int, limit: int) -> bytes:
    if info.offset_data + info.size > total:
        raise UpdateRefused(TRUNCATED, f"{info.name} ends past the end of the file")
    if info.size > limit:
        raise UpdateRefused(NOT_HWUP, f"{info.name} is {info.size} bytes (at most {limit})")
    f.seek(info.offset_data)
    return f.read(info.size)


def _entries(path: Path, total: int) -> list[tarfile.TarInfo]:
    try:
        with tarfile.open(path, "r:") as tar:
            infos: list[tarfile.TarInfo] = []
            while True:
                try:
                    info = tar.next()
                except tarfile.TarError as exc:
                    # A header cut short is a truncated file; anything else is not a .hwup.
                    raise UpdateRefused(TRUNCATED if "unexpected end" in str(exc) or "truncated" in str(exc)
                                        else NOT_HWUP, str(exc)) from None
                if info is None:
                    return infos
                infos.append(info)
    except tarfile.ReadError as exc:
        if total < 512:
            raise UpdateRefused(TRUNCATED, f"only {total} bytes") from None
        raise UpdateRefused(NOT_HWUP, f"not a tar archive ({exc})") from None


def _files(manifest: dict) -> dict[str, dict]:
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != set(MEMBERS):
        raise UpdateRefused(NOT_HWUP, f"the manifest must list exactly {', '.join(MEMBERS)}")
    for name, meta in files.items():
        if not (isinstance(meta, dict) and isinstance(meta.get("size"), int) and meta["size"] >= 0
                and isinstance(meta.get("sha256"), str) and re.fullmatch(r"[0-9a-f]{64}", meta["sha256"])):
            raise UpdateRefused(NOT_HWUP, f"the manifest's entry for {name} needs size and sha256")
    raw = files["root.img.zst"]
    if not isinstance(raw.get("raw_size"), int) or raw["raw_size"] <= 0:
        raise UpdateRefused(NOT_HWUP, "the manifest's root.img.zst needs raw_size")
    if "raw_sha256" in raw and not (isinstance(raw["raw_sha256"], str)
                                    and re.fullmatch(r"[0-9a-f]{64}", raw["raw_sha256"])):
        raise UpdateRefused(NOT_HWUP, "the manifest's raw_sha256 is not a sha256")
    return files


def sha256_of(f, offset: int, size: int) -> str:
    h = hashlib.sha256()
    f.seek(offset)
    left = size
    while left:
        chunk = f.read(min(CHUNK, left))
        if not chunk:
            raise UpdateRefused(TRUNCATED, "the file ended early")
        h.update(chunk)
        left -= len(chunk)
        _pause()
    return h.hexdigest()


def verify(path: Path, public_key: Ed25519PublicKey, running: Running) -> Bundle:
    """The verified Bundle, or UpdateRefused naming why. Reads only."""
    path = Path(path)
    total = path.stat().st_size
    infos = _entries(path, total)
    if len(infos) < 2 or [i.name for i in infos[:2]] != ["manifest.json", "manifest.sig"]:
        if not infos or (infos[0].name == "manifest.json" and len(infos) < 2):
            raise UpdateRefused(TRUNCATED, "the signature is missing")
        raise UpdateRefused(NOT_HWUP, "manifest.json and manifest.sig must come first")
    with open(path, "rb") as f:
        manifest_bytes = _read_member(f, infos[0], total, MAX_MANIFEST)
        signature = _read_member(f, infos[1], total, 64)
        try:
            public_key.verify(signature, manifest_bytes)
        except InvalidSignature:
            raise UpdateRefused(BAD_SIGNATURE, "not signed with this router's update key") from None
        try:
            manifest = json.loads(manifest_bytes)
        except ValueError:
            raise UpdateRefused(NOT_HWUP, "manifest.json is not JSON") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise UpdateRefused(NOT_HWUP, f"unknown manifest format (this router reads format {FORMAT})")
        version, sequence, arch = manifest.get("version"), manifest.get("sequence"), manifest.get("arch")
        if not isinstance(version, str) or not isinstance(sequence, int) or not isinstance(arch, str):
            raise UpdateRefused(NOT_HWUP, "the manifest needs version, sequence and arch")
        if arch != running.arch:
            raise UpdateRefused(WRONG_ARCH, f"the update is for {arch}, this router is {running.arch}")
        if sequence <= running.sequence:
            raise UpdateRefused(TOO_OLD, f"{version} (build {sequence}) is not newer than the running "
                                         f"{running.version} (build {running.sequence})")
        files = _files(manifest)
        by_name = {i.name: i for i in infos[2:]}
        extra = sorted(set(by_name) - set(MEMBERS))
        if extra or len(by_name) != len(infos) - 2:
            raise UpdateRefused(NOT_HWUP, f"unexpected members: {', '.join(extra) or 'duplicates'}")
        members = {}
        for name in MEMBERS:
            info = by_name.get(name)
            if info is None:
                raise UpdateRefused(TRUNCATED, f"{name} is missing")
            if not info.isreg():
                raise UpdateRefused(NOT_HWUP, f"{name} is not a regular file")
            if info.offset_data + info.size > total:
                raise UpdateRefused(TRUNCATED, f"{name} ends past the end of the file")
            meta = files[name]
            if info.size != meta["size"]:
                raise UpdateRefused(CHECKSUM, f"{name} is {info.size} bytes, the manifest says {meta['size']}")
            if sha256_of(f, info.offset_data, info.size) != meta["sha256"]:
                raise UpdateRefused(CHECKSUM, f"{name} does not match its sha256 in the manifest")
            members[name] = Member(name, info.offset_data, info.size, meta["sha256"],
                                   meta.get("raw_size"), meta.get("raw_sha256"))
    return Bundle(path, version, sequence, arch, members)
