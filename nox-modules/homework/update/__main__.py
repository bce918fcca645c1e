"""python3 -m homework.update mark-good [--wait-ready SECONDS] [--config FILE]

Marks the running slot good: its loader entry loses its boot counter and GRUB's
good_slot becomes it. With --wait-ready it first waits until the router is ready (the
controller answers on its control socket and holds the bridge: Open vSwitch says its
controller is connected); if that does not happen in time it marks nothing and exits 1,
so the image's unit can reboot and the boot loaders fall back to the other slot.
"""
from __future__ import annotations

import argparse
import json
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


def mark_good(cfg, ready=None, wait: float | None = None) -> int:
    slot = slots.running_slot(cfg.update_cmdline_file)
    if slot is None:
        print(f"not booted from an A/B slot ({cfg.update_cmdline_file}): nothing to mark")
        return 0
    if wait is not None:
        if not wait_ready(ready or (lambda: router_ready(cfg)), wait):
            print(f"the router did not become ready in {wait:g} s: slot {slot} is NOT marked good "
                  "(rebooting falls back to the other slot)", file=sys.stderr)
            return 1
    slots.ensure_mounted(cfg.update_esp_dir, cfg.update_esp_mount_command)
    result = slots.mark_good(cfg.update_esp_dir, slot, booted_at=boot_time())
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
        return mark_good(cfg, wait=args.wait_ready)
    except (configuration.ConfigError, slots.SlotError, OSError) as exc:
        print(f"homework.update: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
