#!/usr/bin/env python3
"""Build a signed Homework update file (.hwup) from an image build's parts.

    make-hwup.py --root ROOT.img --kernel VMLINUZ --initrd INITRD --version V --sequence N
                 [--arch amd64] [--key KEYFILE] [--pubkey-out PATH] [--zstd-level L] -o OUT.hwup

The .hwup is an uncompressed POSIX tar: manifest.json, manifest.sig (raw ed25519
signature of manifest.json), vmlinuz, initrd.img, root.img.zst (the system partition's
ext4 image through zstd). The router checks it with nox-modules/homework/update/hwup.py.

The signing key is KEYFILE (default $HOMEWORK_SIGNING_KEY, else ~/.config/homework/signing-key):
a PEM PKCS#8 ed25519 private key, made on first use (mode 0600) and never in the repository.
Its public key (PEM) is written next to it as KEYFILE.pub, and to --pubkey-out if given
(the image bakes that file in as /usr/share/homework/update-key.pub).
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

CHUNK = 1 << 20


def default_key() -> Path:
    env = os.environ.get("HOMEWORK_SIGNING_KEY")
    return Path(env) if env else Path.home() / ".config" / "homework" / "signing-key"


def load_or_create_key(path: Path) -> tuple[Ed25519PrivateKey, bool]:
    if path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise SystemExit(f"make-hwup: {path} is not an ed25519 private key")
        return key, False
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return key, True


def public_pem(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def digest(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def compress(src: Path, dst: Path, level: int) -> None:
    subprocess.run(["zstd", "-q", "-f", "-T0", f"-{level}", str(src), "-o", str(dst)], check=True)


def add(tar: tarfile.TarFile, name: str, data: bytes | None = None, path: Path | None = None) -> None:
    info = tarfile.TarInfo(name)
    info.mode, info.mtime, info.uname, info.gname = 0o644, 0, "root", "root"
    if data is not None:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    else:
        info.size = path.stat().st_size
        with open(path, "rb") as f:
            tar.addfile(info, f)


def build(args) -> Path:
    key, created = load_or_create_key(args.key)
    pub = public_pem(key)
    pub_path = args.key.with_name(args.key.name + ".pub")
    pub_path.write_bytes(pub)
    if args.pubkey_out:
        args.pubkey_out.parent.mkdir(parents=True, exist_ok=True)
        args.pubkey_out.write_bytes(pub)
    out = args.output
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".make-hwup-") as tmp:
        packed = Path(tmp) / "root.img.zst"
        compress(args.root, packed, args.zstd_level)
        raw_sha, raw_size = digest(args.root)
        files = {}
        for name, path in (("vmlinuz", args.kernel), ("initrd.img", args.initrd), ("root.img.zst", packed)):
            sha, size = digest(path)
            files[name] = {"sha256": sha, "size": size}
        files["root.img.zst"].update(raw_size=raw_size, raw_sha256=raw_sha)
        manifest = json.dumps({"format": 1, "version": args.version, "sequence": args.sequence,
                               "arch": args.arch, "files": files}, indent=1, sort_keys=True).encode()
        partial = Path(tmp) / "out.hwup"
        with tarfile.open(partial, "w", format=tarfile.USTAR_FORMAT) as tar:
            add(tar, "manifest.json", data=manifest)
            add(tar, "manifest.sig", data=key.sign(manifest))
            add(tar, "vmlinuz", path=args.kernel)
            add(tar, "initrd.img", path=args.initrd)
            add(tar, "root.img.zst", path=packed)
        os.replace(partial, out)
    if created:
        print(f"make-hwup: created a new signing key {args.key} (keep it safe; never commit it)", file=sys.stderr)
    print(f"make-hwup: public key {pub_path}" + (f" and {args.pubkey_out}" if args.pubkey_out else ""))
    print(f"make-hwup: wrote {out} ({out.stat().st_size} bytes; version {args.version}, build {args.sequence})")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", required=True, type=Path, help="the system partition's ext4 image")
    p.add_argument("--kernel", required=True, type=Path, help="vmlinuz")
    p.add_argument("--initrd", required=True, type=Path, help="initrd.img")
    p.add_argument("--version", required=True, help="version string (shown on the board)")
    p.add_argument("--sequence", required=True, type=int, help="build number; must grow with every build")
    p.add_argument("--arch", default="amd64", help="Debian architecture (default amd64)")
    p.add_argument("--key", type=Path, default=default_key(),
                   help="ed25519 private key, PEM; created if missing (default $HOMEWORK_SIGNING_KEY "
                        "or ~/.config/homework/signing-key)")
    p.add_argument("--pubkey-out", type=Path, help="also write the public key (PEM) here")
    p.add_argument("--zstd-level", type=int, default=10, choices=range(1, 20), metavar="1-19")
    p.add_argument("-o", "--output", required=True, type=Path, help="the .hwup to write")
    args = p.parse_args(argv)
    if args.sequence < 0:
        p.error("--sequence must be >= 0")
    for what in ("root", "kernel", "initrd"):
        if not getattr(args, what).is_file():
            p.error(f"--{what} {getattr(args, what)}: no such file")
    build(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
