"""python3 -m homework.update mark-good [--wait-ready SECONDS] [--config FILE]

Marks the running slot good: its loader entry loses its boot counter and GRUB's
good_slot becomes it (nothing is written when the ESP already says so). With --wait-ready
it first waits until the router is ready (the controller answers on its control socket
and holds the bridge: Open vSwitch says its controller is connected).

Exit status, what the image's unit does with it (image/guest/homework-mark-good):
  0  marked good, or nothing to mark;
  10 not ready, on a slot being tried once whose fallback the boot loader has: reboot, and
     the loader boots the good slot;
  3  something failed (not ready, or the ESP could not be read or written) on a slot that
     is good already, the only one that boots, or one whose state could not be read: never
     a reboot, which could only loop. An alert file tells the household (ALERT_FILE: the
     controller shows it on the Guest Board; the unit prints it on the console).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from .. import config as configuration
from . import slots

DEFAULT_CONFIG = "/run/homework/homework.toml"     # what homework-controller.service runs with


def controller_answers(sock_path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(sock_path))
            s.sendall(b'{"cmd": "system-info", "args": {}}\n')
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    return False
                buf += chunk
        return bool(json.loads(buf.split(b"\n", 1)[0]).get("ok"))
    except (OSError, ValueError):
        return False


def bridge_connected(bridge: str) -> bool:
    try:
        r = subprocess.run(["ovs-vsctl", "--timeout=2", "get", "controller", bridge, "is_connected"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and r.stdout.strip() == "true"


def router_ready(cfg) -> bool:
    return controller_answers(cfg.control_socket) and bridge_connected(cfg.bridge)


def wait_ready(check, seconds: float, interval: float = 1.0) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def load_config(path: str):
    if not Path(path).exists():
        return configuration.parse({})      # the defaults are the image's paths
    return configuration.load(path)


REBOOT, PROBLEM = 10, 3     # 10, not 1: a crash (exit 1) must never reboot
ALERT_FILE = "boot-slot.json"      # in alert_dir(cfg): what went wrong, for the Guest Board


def alert_dir(cfg) -> Path:
    """Where boot-time scripts leave alerts for the controller (the control socket's
    directory: /run/homework/alerts on the image)."""
    return Path(cfg.control_socket).parent / "alerts"


def raise_alert(cfg, name: str, detail: str) -> None:
    """An alert file the controller publishes once (system.py); also printed here, which
    the unit sends to the console."""
    print(detail, file=sys.stderr)
    try:
        d = alert_dir(cfg)
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{name}.tmp"
        tmp.write_text(json.dumps({"kind": "router-boot", "detail": detail, "at": time.time()}))
        os.replace(tmp, d / name)
    except OSError as exc:
        print(f"could not leave the alert for the Guest Board: {exc}", file=sys.stderr)


def test_pause():
    """The boot test's hook (HOMEWORK_MARK_GOOD_PAUSE=SECONDS, set by a drop-in only the test
    writes): before each ESP write, say which on the consoles and wait, so that the test can
    capture the disk as a power cut there would leave it. None (no pause) otherwise."""
    seconds = float(os.environ.get("HOMEWORK_MARK_GOOD_PAUSE") or 0)
    if seconds <= 0:
        return None

    def pause(what: str) -> None:
        for tty in ("/dev/ttyS1", "/dev/console"):
            try:
                with open(tty, "w") as f:
                    f.write(f"HOMEWORK-MARK before {what}\n")
            except OSError:
                pass
        time.sleep(seconds)
    return pause


def mark_good(cfg, ready=None, wait: float | None = None, uefi: bool | None = None) -> int:
    slot = slots.running_slot(cfg.update_cmdline_file)
    if slot is None:
        print(f"not booted from an A/B slot ({cfg.update_cmdline_file}): nothing to mark")
        return 0
    uefi = Path("/sys/firmware/efi").is_dir() if uefi is None else uefi
    is_ready = wait is None or wait_ready(ready or (lambda: router_ready(cfg)), wait)
    try:
        slots.ensure_mounted(cfg.update_esp_dir, cfg.update_esp_mount_command)
        status = slots.boot_status(cfg.update_esp_dir, slot, uefi)
    except (OSError, slots.SlotError) as exc:
        status, esp_error = None, exc
    if not is_ready:
        if status is not None and status["trial"] and status["fallback"]:
            print(f"the router did not become ready in {wait:g} s: slot {slot} is NOT marked good "
                  "(rebooting falls back to the other slot)", file=sys.stderr)
            return REBOOT
        why = ("it is the only system that boots" if status is not None and not status["fallback"] else
               "it is the good system already" if status is not None else
               f"its boot partition could not be read ({esp_error})")
        raise_alert(cfg, ALERT_FILE, f"The router did not finish starting within {wait:g} seconds on system "
                                     f"{slot.upper()}. It keeps running and is not restarted, as {why}; some of "
                                     "its services may not work until it is restarted.")
        return PROBLEM
    try:
        if status is None:
            raise esp_error
        result = slots.mark_good(cfg.update_esp_dir, slot, booted_at=boot_time(), step=test_pause())
    except (OSError, slots.SlotError) as exc:
        raise_alert(cfg, ALERT_FILE, f"The router works, but its boot partition could not be updated to keep "
                                     f"starting system {slot.upper()} ({exc}). It is not restarted for that; if "
                                     "the problem stays, the router may need its image written again.")
        return PROBLEM
    if not result["written"]:
        print(f"slot {slot} is good already; nothing written")
        return 0
    withdrawn = f"; the other slot's untaken offer withdrawn: {', '.join(result['withdrawn'])}" \
        if result["withdrawn"] else ""
    print(f"slot {slot} marked good ({result['entry'] or 'no loader entry'}; GRUB good_slot={slot}){withdrawn}")
    return 0


def boot_time(uptime_file: str = "/proc/uptime") -> float | None:
    """When this boot began (epoch seconds), from the kernel's uptime."""
    try:
        with open(uptime_file) as f:
            return time.time() - float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m homework.update", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=DEFAULT_CONFIG, help=f"controller configuration (default {DEFAULT_CONFIG})")
    sub = parser.add_subparsers(dest="cmd", required=True)
    good = sub.add_parser("mark-good", help="mark the running slot good (after the router is ready)")
    good.add_argument("--wait-ready", type=float, metavar="SECONDS",
                      help="wait this long for the router to be ready; not ready: exit 1, nothing marked")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except (configuration.ConfigError, OSError) as exc:
        print(f"homework.update: {exc}", file=sys.stderr)
        return 2
    return mark_good(cfg, wait=args.wait_ready)


if __name__ == "__main__":
    sys.exit(main())
