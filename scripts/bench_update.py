#!/usr/bin/env python3
"""Update benchmark: how big an update is and how long installing it takes,
against the floor of doing the same by hand, same machine, same run.

Uses the last `make image` (built first if out/ has none): the raw disk image, its .zst
and the .hwup made with it. The A/B disk is files in a directory (tests/update_lab.py's
layout: slot files the size of the real system partition, an ESP directory), driven by the
real controller behind lighttpd, as the e2e test does:

  homework   upload the .hwup over HTTPS to /ws.v1/system/update, until ready-to-reboot
             (upload, signature and checksums, decompress into the slot, read-back
             check, kernel + initrd + loader entry on the ESP)
  by hand    `zstd -dc root.img.zst > slot; sync` (what `dd` of a trusted file costs: no
             signature, no checksum, no read-back)

Rounds alternate; medians of BENCH_UPDATE_RUNS (3). The downtime a permitted device sees
(the reboot into the new slot) is measured by the image boot test, which boots it.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "nox-modules")]

from homelab.web import Web, api, web_home  # noqa: E402
from update_lab import UpdateLab  # noqa: E402

RUNS = int(os.environ.get("BENCH_UPDATE_RUNS", "3"))
OUT = REPO / "out"


def latest(pattern: str) -> Path | None:
    found = sorted((p for p in OUT.glob(pattern) if "latest" not in p.name), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def main() -> int:
    img, hwup = latest("homework-*-amd64.img"), latest("homework-*-amd64.hwup")
    if img is None or hwup is None:
        subprocess.run(["make", "-C", str(REPO), "image"], check=True)
        img, hwup = latest("homework-*-amd64.img"), latest("homework-*-amd64.hwup")
    zst = Path(str(img) + ".zst")
    with tarfile.open(hwup) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        root_zst = tar.getmember("root.img.zst")
    raw_size = manifest["files"]["root.img.zst"]["raw_size"]
    key = Path(os.environ.get("HOMEWORK_SIGNING_KEY") or Path.home() / ".config/homework/signing-key")
    key_pub = key.with_name(key.name + ".pub")        # what make image signed the .hwup with
    print(f"image {img.name}: raw {mib(img.stat().st_size)} (allocated {mib(img.stat().st_blocks * 512)}), "
          f".img.zst {mib(zst.stat().st_size) if zst.exists() else 'not built'}; update {hwup.name}: "
          f"{mib(hwup.stat().st_size)} (system partition {mib(raw_size)} raw)")

    work = Path(tempfile.mkdtemp(prefix="hw-bench-update-"))
    lab = UpdateLab(work / "disk")
    lab.pubkey.write_bytes(key_pub.read_bytes())
    lab.version_file.write_text("bench\nsequence 0\n")
    for slot in ("a", "b"):
        with open(lab.dir / f"hw-root-{slot}", "wb") as f:
            f.truncate(raw_size)
    by_hand_input = work / "root.img.zst"
    with tarfile.open(hwup) as tar, open(by_hand_input, "wb") as f:
        src = tar.extractfile(root_zst)
        while chunk := src.read(1 << 20):
            f.write(chunk)

    ours, floor = [], []
    config = {"controller": {"components": ["dhcp", "routing"]}, "update": lab.config()}
    with web_home(config) as home:
        web = Web(home).start()
        try:
            body = hwup.read_bytes()
            for run in range(RUNS):
                for label in (("homework", "by hand") if run % 2 == 0 else ("by hand", "homework")):
                    subprocess.run(["sync"], check=True)
                    t = time.monotonic()
                    if label == "homework":
                        r = api(web, "POST", "system/update", data=body,
                                headers={"Content-Type": "application/octet-stream"}, timeout=900)
                        assert r.status_code == 202, r.text
                        while (state := api(web, "GET", "system/update").json())["state"] in (
                                "receiving", "verifying", "writing"):
                            time.sleep(0.2)
                        assert state["state"] == "ready-to-reboot", state
                        ours.append(time.monotonic() - t)
                        # the next round installs into the same slot again: forget this one
                        for entry in (lab.esp / "loader" / "entries").glob("homework-b*"):
                            entry.unlink()
                        home.restart_controller()
                    else:
                        subprocess.run(f"zstd -dcq {by_hand_input} > {lab.dir / 'hw-root-b'} && sync",
                                       shell=True, check=True)
                        floor.append(time.monotonic() - t)
        finally:
            web.stop()
    subprocess.run(["rm", "-rf", str(work)], check=False)
    a, b = statistics.median(ours), statistics.median(floor)
    print(f"\n{'install, upload to ready-to-reboot':52} {'median s':>9}")
    print(f"{'Homework (HTTPS upload, verify, write, read back)':52} {a:9.1f}")
    print(f"{'by hand (zstd -dc > slot; sync)':52} {b:9.1f}")
    print(f"ratio Homework / by hand: {a / b:.2f} (runs: {', '.join(f'{x:.1f}' for x in ours)} / "
          f"{', '.join(f'{x:.1f}' for x in floor)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
