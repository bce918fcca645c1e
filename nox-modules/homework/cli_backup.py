"""The CLI's backup and restore (components/backup):

    homework backup --out FILE [--passphrase-file F]     (asks for the passphrase twice if no file)
    homework restore FILE [--passphrase-file F]          (the controller then restarts by itself)
    homework factory-reset --yes                          (erase the controller's state, restart)

The file holds encrypted secrets but readable settings (device names, rules): it is
written readable by its owner only.
"""
from __future__ import annotations

import json
import os
import sys


def add_parsers(sub) -> None:
    backup = sub.add_parser("backup", help="save the settings to a file (secrets encrypted with a passphrase)")
    backup.add_argument("--out", required=True, help="the file to write, e.g. homework-backup-2026-11-23.hwbak")
    backup.add_argument("--passphrase-file", help="read the passphrase from this file's first line")
    restore = sub.add_parser("restore", help="replace the settings with a backup's (the controller then restarts)")
    restore.add_argument("file")
    restore.add_argument("--passphrase-file", help="read the passphrase from this file's first line")
    reset = sub.add_parser("factory-reset", help="erase every device, rule, token and setting of the controller "
                                                 "(not the admin password file) and restart it")
    reset.add_argument("--yes", action="store_true", help="really erase everything (required)")


def _passphrase(path: str | None, confirm: bool) -> str:
    if path:
        with open(path, encoding="utf-8") as f:
            return f.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    import getpass
    first = getpass.getpass("backup passphrase: ")
    if confirm and getpass.getpass("again: ") != first:
        raise RuntimeError("the two passphrases differ")
    return first


APPLY_WAIT = 180.0        # seconds the restored controller may take to be back with everything in force


def print_restore(result: dict) -> None:
    rows = ", ".join(f"{table} {n}" for table, n in result["restored"].items() if n)
    if result.get("applied"):
        print(f"Restored the backup made {result.get('created')} ({rows or 'no rows'}): every setting is in force.")
    else:
        print(f"Wrote the backup made {result.get('created')} ({rows or 'no rows'}).")
        print(result.get("note", ""))
    for problem in result.get("problems", []):
        print(f"  {problem}")


def wait_applied(call, sock: str, result: dict) -> dict:
    """The controller restarts to apply a restore: say "restored" only once the restored
    controller has everything in force (restore-status), not when the rows are written."""
    if not result.get("restarting"):
        return result
    import time
    deadline = time.monotonic() + APPLY_WAIT
    time.sleep(1.0)          # the old controller answers, then restarts
    while time.monotonic() < deadline:
        try:
            status = call(sock, "restore-status", timeout=5.0).get("restore") or {}
        except (OSError, RuntimeError, ConnectionError, ValueError):
            status = {}
        if status.get("applied") and status.get("at") == result.get("at", status.get("at")):
            return {**result, "applied": True, "problems": status.get("problems", result.get("problems", []))}
        time.sleep(0.5)
    raise RuntimeError(f"the restored settings were written, but the router did not say they are in force "
                       f"within {APPLY_WAIT:.0f} s: check `homework restore-status`")


def run(args, call, sock: str):
    """(result, printer) for backup and restore; None for any other command."""
    if args.cmd == "backup":
        result = call(sock, "backup", timeout=60.0, passphrase=_passphrase(args.passphrase_file, confirm=True))
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(result["document"], f, indent=1, sort_keys=True)
        return {"written": os.path.abspath(args.out)}, lambda r: print(f"backup written to {r['written']}")
    if args.cmd == "restore":
        passphrase = _passphrase(args.passphrase_file, confirm=False)
        result = call(sock, "restore", timeout=300.0, passphrase=passphrase, path=os.path.abspath(args.file))
        return wait_applied(call, sock, result), print_restore
    if args.cmd == "factory-reset":
        if not args.yes:
            raise RuntimeError("factory-reset erases every device, rule and token: add --yes to do it")
        return call(sock, "factory-reset", confirm="erase everything"), lambda r: print(
            f"{r['note']}\nSet-up code for a device on the Wi-Fi (a wired one needs none): {r['setup_code']}")
    return None
