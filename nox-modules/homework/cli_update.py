"""The CLI's system updates (homework/update/):

    homework update FILE      verify FILE (a .hwup on this router), write it to the other slot,
                              show progress until it is ready to reboot (exit 1 if refused or failed)
    homework update-status    the update's state and both slots' versions
    homework reboot           reboot (into the update, if one is ready)

The controller reads FILE itself (the CLI runs on the router, next to it), so nothing
is copied through the control socket.
"""
from __future__ import annotations

import os
import sys
import time

COMMANDS = ("update", "update-status", "reboot")
VERIFY_TIMEOUT = 900.0      # the controller checks every byte's sha256 before it answers


def add_parsers(sub) -> None:
    up = sub.add_parser("update", help="install a .hwup update into the other system slot (then `homework reboot`)")
    up.add_argument("file", help="the .hwup file")
    up.add_argument("--no-wait", action="store_true", help="return once it is verified and being written")
    sub.add_parser("update-status", help="the update in progress and the system slots' versions")
    sub.add_parser("reboot", help="reboot the router (into an update that is ready)")


def describe(status: dict) -> str:
    running = status.get("running") or {}
    lines = [f"running {running.get('version')} (build {running.get('sequence')}) from slot "
             f"{running.get('slot') or '- (not an A/B system)'}"]
    other = status.get("other")
    if other:
        lines.append(f"slot {other['slot']}: {other['state']}" +
                     (f", {other['version']} (build {other['sequence']})" if other.get("version") else ""))
    state = status.get("state")
    line = f"update: {state}"
    if state in ("writing", "ready-to-reboot"):
        line += f" {status.get('percent', 0)}% {status.get('version') or ''}".rstrip()
    if status.get("error"):
        line += f" ({status['error']})"
    if not status.get("enabled"):
        line += " (updates are off: [update] enabled = false)"
    lines.append(line)
    return "\n".join(lines)


def follow(call, sock: str, quiet: bool) -> dict:
    """update-status until the update is ready or failed, with a progress line on a terminal."""
    last = None
    while True:
        status = call(sock, "update-status")
        if status["state"] not in ("receiving", "verifying", "writing"):
            if not quiet and last is not None:
                print(file=sys.stderr)
            return status
        text = f"\r{status.get('phase') or status['state']}: {status['percent']:3d}%"
        if not quiet and text != last and sys.stderr.isatty():
            print(text, end="", file=sys.stderr, flush=True)
        last = text
        time.sleep(1)


def run(args, call, sock: str):
    """(result, printer) for update, update-status and reboot; None for any other command."""
    if args.cmd == "update-status":
        return call(sock, "update-status"), lambda r: print(describe(r))
    if args.cmd == "reboot":
        return call(sock, "reboot"), lambda r: print("rebooting")
    if args.cmd != "update":
        return None
    path = os.path.abspath(args.file)
    if not os.path.isfile(path):
        raise RuntimeError(f"{args.file}: no such file")
    call(sock, "update-start", timeout=VERIFY_TIMEOUT, path=path)
    if args.no_wait:
        return call(sock, "update-status"), lambda r: print(describe(r))
    status = follow(call, sock, quiet=args.json)
    if status["state"] != "ready-to-reboot":
        raise RuntimeError(f"update failed: {status.get('error')}")
    return status, lambda r: print(f"{r['version']} is written to slot {r['other']['slot']}: "
                                   "run `homework reboot` to start it (it is kept only once the router is ready)")
