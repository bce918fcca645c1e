#!/usr/bin/env python3
"""Keep only the firmware the image's kernel can ask for.

    firmware-prune.py ROOT PACKAGE...

Debian's firmware packages carry every file for every generation of a vendor's chips:
Bluetooth firmware, phone and DSP firmware, and each Intel Wi-Fi card's firmware in a dozen
API versions. A driver names the files it may load (`modinfo -F firmware`, MODULE_FIRMWARE
in its source); this keeps, of the files the named PACKAGEs installed, those some module
in ROOT names (a name with wildcards matches as a pattern; ALWAYS_KEEP for drivers that
ask for more than they name), and for Intel's versioned
files (NAME-<api>.ucode) the newest one at or below the version the driver names: the
driver tries its versions from that one down and loads the first it finds. The rest goes,
with the symbolic links left dangling and the directories left empty. Files of other
packages (wireless-regdb's regulatory.db) are never touched.

Prints, per package, the files and MiB kept. Every update writes and reads back the whole
system slot, so each MiB left here costs time on every router's every update.
"""
from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

VERSIONED = re.compile(r"^(?P<stem>.+)-(?P<api>\d+)\.ucode$")
# Drivers that load files they do not declare: ath10k builds the names of QCA9984's and
# QCA99X0's firmware (access point chips) at run time, ath11k asks for each PCIe chip's
# amss.bin, m3.bin and board-2.bin by its hardware revision. Their PCIe chips' directories
# stay whole (ath11k's IPQ* and WCN6750 are parts of ARM SoCs, never on a PC's bus).
ALWAYS_KEEP = ("ath10k/QCA9984/*", "ath10k/QCA99X0/*", "ath11k/QCN9074/*", "ath11k/WCN6855/*")
# Chips a router cannot use however its driver asks: Intel's 802.11n cards of 2008-2012
# (iwldvm: no access-point mode), 60 GHz WiGig (wil6210), server NICs and accelerators
# (Chelsio, QuickAssist), ADSL USB modems. Their drivers are trimmed too (image/build.sh).
NEVER = ("iwlwifi-100-*", "iwlwifi-105-*", "iwlwifi-135-*", "iwlwifi-1000-*", "iwlwifi-2000-*",
         "iwlwifi-2030-*", "iwlwifi-5000-*", "iwlwifi-5150-*", "iwlwifi-6000-*", "iwlwifi-6000g2a-*",
         "iwlwifi-6000g2b-*", "iwlwifi-6050-*", "iwlwifi-4965-*", "iwlwifi-3945-*",
         "wil6210*", "cxgb4/*", "qat_*", "ueagle-atm/*")
COMPRESSED = (".xz", ".zst")


def firmware_names(root: Path) -> set[str]:
    """Every firmware name any module in ROOT's kernels declares."""
    names: set[str] = set()
    for kdir in sorted((root / "usr/lib/modules").iterdir()):
        modules = [str(p) for p in kdir.rglob("*.ko*")]
        for i in range(0, len(modules), 500):
            out = subprocess.run(["modinfo", "-F", "firmware", *modules[i:i + 500]], capture_output=True,
                                 text=True, check=False).stdout
            names.update(line.strip() for line in out.splitlines() if line.strip())
    return names


def package_files(root: Path, package: str) -> list[str]:
    """The firmware files (relative to lib/firmware) a package installed."""
    listing = root / "var/lib/dpkg/info" / f"{package}.list"
    out = []
    for line in listing.read_text().splitlines():
        for prefix in ("/lib/firmware/", "/usr/lib/firmware/"):
            if line.startswith(prefix):
                rel = line[len(prefix):]
                path = root / "usr/lib/firmware" / rel
                if path.is_symlink() or path.is_file():
                    out.append(rel)
    return out


def wanted(files: list[str], names: set[str]) -> set[str]:
    keep: set[str] = set()
    present = set(files)
    bare = {}                      # the name a driver asks for -> the file (the kernel tries NAME.xz too)
    for f in files:
        suffix = next((s for s in COMPRESSED if f.endswith(s)), "")
        bare[f[: len(f) - len(suffix)]] = f
    keep.update(f for f in files if any(fnmatch.fnmatch(f, pattern) for pattern in ALWAYS_KEEP))
    for name in names:
        if any(ch in name for ch in "*?["):
            keep.update(f for f in files if fnmatch.fnmatch(f, name))
            continue
        m = VERSIONED.match(name)
        if m and f"{m.group('stem')}.pnvm" in present:      # Intel's platform data beside its ucode
            keep.add(f"{m.group('stem')}.pnvm")
        if name in bare:
            keep.add(bare[name])
        elif m:   # the newest version at or below the one the driver names
            stem, api = m.group("stem"), int(m.group("api"))
            versions = [(int(v.group("api")), f) for f in present
                        if (v := VERSIONED.match(f)) and v.group("stem") == stem and int(v.group("api")) <= api]
            if versions:
                keep.add(max(versions)[1])
    return {f for f in keep if not any(fnmatch.fnmatch(f, pattern) for pattern in NEVER)}


def size(path: Path) -> int:
    return 0 if path.is_symlink() else path.stat().st_size


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[1])
    fw = root / "usr/lib/firmware"
    names = firmware_names(root)
    print(f"firmware-prune: {len(names)} firmware names declared by the kernel's modules")
    total_before = total_after = 0
    for package in argv[2:]:
        files = package_files(root, package)
        keep = wanted(files, names)
        for f in list(keep):          # a kept link keeps what it points at (within the package)
            p = fw / f
            while p.is_symlink():
                target = (p.parent / os.readlink(p)).resolve()
                try:
                    rel = str(target.relative_to(fw.resolve()))
                except ValueError:
                    break
                keep.add(rel)
                p = fw / rel
        before = sum(size(fw / f) for f in files)
        after = sum(size(fw / f) for f in files if f in keep)
        for f in files:
            if f not in keep:
                (fw / f).unlink()
        total_before += before
        total_after += after
        print(f"firmware-prune: {package}: kept {len([f for f in files if f in keep])} of {len(files)} files, "
              f"{after / 2**20:.1f} of {before / 2**20:.1f} MiB")
    for dirpath, _dirnames, filenames in os.walk(fw, topdown=False):    # dangling links, empty directories
        for name in filenames:
            p = Path(dirpath) / name
            if p.is_symlink() and not p.exists():
                p.unlink()
        if Path(dirpath) != fw and not os.listdir(dirpath):
            os.rmdir(dirpath)
    print(f"firmware-prune: all: {total_after / 2**20:.1f} of {total_before / 2**20:.1f} MiB kept")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
