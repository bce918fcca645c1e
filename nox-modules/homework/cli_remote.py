"""The CLI's remote access commands (components/remote):

    homework remote add NAME [--owner O]     a device away from home: prints its WireGuard
                                             configuration and a QR code to scan on this screen
    homework remote list                     every one, with where it connects from
    homework remote config MAC [--qr]        its configuration again ("--qr": as a QR code)

It is pending until let in (`homework permit MAC`); `homework forget MAC` removes it.
"""
from __future__ import annotations

import subprocess
import time

COMMANDS = ("remote",)


def _terminal_qr(text: str) -> str:
    try:
        res = subprocess.run(["qrencode", "-t", "ansiutf8", "-m", "2"], input=text.encode(), capture_output=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "(no QR code: qrencode is not installed here)"
    return res.stdout.decode() if res.returncode == 0 else "(qrencode failed)"


def _where(d: dict) -> str:
    if d.get("connected"):
        return f"connected from {d['endpoint']}"
    if d.get("last_handshake"):
        return f"last seen {time.strftime('%Y-%m-%d %H:%M', time.localtime(d['last_handshake']))} from {d['endpoint']}"
    return "not connected yet"


def print_list(rows: list[dict]) -> None:
    if not rows:
        print("no devices away from home")
    for d in rows:
        print(f"{d['mac']}  {d['state']:10}  {d['address'] or '-':15}  {d['name']}  ({_where(d)})")


def printer(qr: bool):
    def show(view: dict) -> None:
        print(f"# {view['file_name']}: {view['name']} ({view['mac']}), {view['state']}")
        print(view["config"])
        if qr:
            print(_terminal_qr(view["config"]))
        if view.get("state") == "pending":
            print(f"It is waiting for approval: let it in on the Guest Board, or `homework permit {view['mac']}`.")
    return show


def add_parsers(sub) -> None:
    remote = sub.add_parser("remote", help="devices away from home over WireGuard: add, list, config")
    rsub = remote.add_subparsers(dest="remote_cmd", required=True)
    add = rsub.add_parser("add", help="a device away from home; prints its configuration and a QR code")
    add.add_argument("name")
    add.add_argument("--owner")
    rsub.add_parser("list")
    cfg = rsub.add_parser("config", help="a remote device's configuration again")
    cfg.add_argument("mac")
    cfg.add_argument("--qr", action="store_true", help="as a QR code for the WireGuard app")


def run(args, call, sock: str):
    if args.remote_cmd == "add":
        return call(sock, "remote-add", timeout=60, name=args.name, owner=args.owner), printer(True)
    if args.remote_cmd == "list":
        return call(sock, "remote-list"), print_list
    return call(sock, "remote-config", mac=args.mac), printer(args.qr)
