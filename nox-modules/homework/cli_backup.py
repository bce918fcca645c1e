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


def print_restore(result: dict) -> None:
    rows = ", ".join(f"{table} {n}" for table, n in result["restored"].items() if n)
    print(f"restored the backup made {result.get('created')} ({rows or 'no rows'})")
    print(result.get("note", ""))


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
        return call(sock, "restore", timeout=60.0, passphrase=passphrase,
                    path=os.path.abspath(args.file)), print_restore
    if args.cmd == "factory-reset":
        if not args.yes:
            raise RuntimeError("factory-reset erases every device, rule and token: add --yes to do it")
        return call(sock, "factory-reset", confirm="erase everything"), lambda r: print(
            f"{r['note']}\nSet-up code for a device on the Wi-Fi (a wired one needs none): {r['setup_code']}")
    return None
