"""`homework wifi`: the Wi-Fi network name and passphrase (homework/wifi.py).

    homework wifi                                   the SSID, interfaces, whether a passphrase is set
    homework wifi --ssid NAME                       rename (the passphrase stays)
    homework wifi [--ssid NAME] --passphrase-file F|-   new passphrase from F's first line (- = stdin)

The passphrase is read from a file or stdin, never from the command line (ps would show it).
"""
from __future__ import annotations

import sys


def add_parsers(sub) -> None:
    wifi = sub.add_parser("wifi", help="show or set the Wi-Fi SSID and passphrase (restarts the access point)")
    wifi.add_argument("--ssid", help="the network name (1-32 bytes)")
    wifi.add_argument("--passphrase-file", help="read the new passphrase from this file's first line ('-' = stdin)")


def _passphrase(path: str) -> str:
    if path == "-":
        return sys.stdin.readline().rstrip("\r\n")
    with open(path, encoding="utf-8") as f:
        return f.readline().rstrip("\r\n")


def print_wifi(r: dict) -> None:
    print(f"SSID: {r['ssid'] or '(none)'}")
    print(f"interfaces: {', '.join(r['interfaces']) or '(none)'}")
    print(f"passphrase: {'set' if r['passphrase_set'] else 'not set'}")
    if r.get("note"):
        print(r["note"])


def run(args, call, sock: str):
    """(result, printer) for `wifi`; None for any other command."""
    if args.cmd != "wifi":
        return None
    if args.ssid is None and args.passphrase_file is None:
        return call(sock, "wifi-info"), print_wifi
    ssid = args.ssid if args.ssid is not None else call(sock, "wifi-info")["ssid"]
    kwargs = {"ssid": ssid}
    if args.passphrase_file is not None:
        kwargs["passphrase"] = _passphrase(args.passphrase_file)
    return call(sock, "set-wifi", **kwargs), print_wifi
