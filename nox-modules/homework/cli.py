"""`homework`: the local admin CLI. Talks to the running controller over its control
socket, so every change goes through the same component methods as the API."""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

from . import cli_blocklists, cli_parity, cli_schedules
from . import cli_backup
from . import cli_wifi
from . import cli_update
from . import cli_qos
from . import cli_satellites
from . import cli_dns
from . import cli_reach
from . import cli_identify
from . import cli_remote
from . import cli_panels

DEFAULT_SOCKET = os.environ.get("HOMEWORK_SOCKET", "/run/homework/control.sock")


def call(sock_path: str, cmd: str, timeout: float = 10.0, **args):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        s.sendall((json.dumps({"cmd": cmd, "args": args}) + "\n").encode())
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("controller closed the connection")
            buf += chunk
    reply = json.loads(buf.split(b"\n", 1)[0])
    if not reply.get("ok"):
        raise RuntimeError(reply.get("error", "unknown error"))
    return reply["result"]


def _ago(ts: float) -> str:
    if not ts:
        return "-"
    delta = ts - time.time()
    return f"{int(delta)}s" if delta > 0 else "expired"


def print_devices(rows: list[dict]) -> None:
    if not rows:
        print("no devices yet")
        return
    print(f"{'MAC':17}  {'STATE':11}  {'ADDRESS':15}  {'LEASE':8}  NAME")
    for d in rows:
        lease = d.get("lease") or {}
        name = d.get("name") or d.get("hostname") or ""
        address = lease.get("ip", "-") if lease.get("active") else "-"
        print(f"{d['mac']:17}  {d['state']:11}  {address:15}  {_ago(lease.get('expires', 0)):8}  {name}")


def print_names(rows: list[dict]) -> None:
    if not rows:
        print("no named devices (only permitted devices with a lease are named)")
    for r in rows:
        print(f"{r['name']:40}  {r['ip']:15}  {r['mac']}")


def print_queries(result: dict) -> None:
    rows = result["queries"]
    if not rows:
        print("no queries logged")
    for r in rows:
        when = time.strftime("%H:%M:%S", time.localtime(r["at"]))
        times = f" x{r['count']}" if r["count"] > 1 else ""
        print(f"{when}  {r['mac']:17}  {r['verdict']:8}  {r['type']:5}  {r['name']}{times}")


def print_nearby(result: dict) -> None:
    """devices the radio hears probing that are not connected (--json: GET /ws.v1/nearby's body)."""
    rows = result["nearby"]
    if not rows:
        print("no nearby devices heard")
    for r in rows:
        what = f"{r['count']} randomised devices" if r["randomised"] else r["mac"]
        band = f" {r['band']}" if r.get("band") else ""
        heard = int(time.time() - r["last_heard"])
        print(f"{what:24}  {r['rssi']:>5} dBm  {r['radio']}{band}  heard {heard}s ago")

# name -> (positional argument names, how to print the result)
SIMPLE = {
    "devices": ((), print_devices),
    "nearby": ((), print_nearby),     # components/radio/nearby.py
    "whitelist": (("mac",), None),    # permit, deny, blacklist, forget: cli_parity (one or more MACs)
    "status": (("mac?",), None), "dhcp-status": ((), None), "leases": ((), None),
    "blacklist-status": ((), None), "stats": ((), None),
    "metrics": ((), lambda text: print(text, end="")),   # Prometheus text format (components/metrics)
    # notifications and webhooks (components/notify); notifications-read marks all read
    "notifications": ((), None), "notifications-read": ((), None), "notify-test": ((), None),
    "webhooks": ((), None), "webhook-remove": (("id",), None),
    "webhook-deliveries": ((), None),
    # DNS policy (components/dns); MAC "household" means the household-wide list
    "permit-dns": (("mac", "domain"), None), "deny-dns": (("mac", "domain"), None),
    "household-permit-dns": (("domain",), None), "household-deny-dns": (("domain",), None),
    "remove-dns-rule": (("domain", "mac?"), None), "dns-rules": (("mac?",), None),
    "dns-mode": (("mac", "mode?"), None), "dns-stats": ((), None), "dns-learned": (("name?",), None),
    "usage": (("period?", "by?"), None),     # components/usage: period hour|day|month, by device|owner|type
    "usage-cap": (("cap?", "billing_day?"), None),   # cap in bytes or e.g. 500G; billing day 1-31
    # limits: MAC or owner:NAME; allowance e.g. 2G; period day|month; action notify|slow|block;
    # rate (slow only) e.g. 1mbit
    "usage-limit": (("mac", "allowance", "period?", "action?", "rate?"), None), "usage-limits": ((), None),
    "usage-limit-remove": (("mac",), None), "usage-lift": (("mac",), None),
    # usage alerts: tell the household when a device moves more than SIZE (e.g. 500M) in MINUTES (1-60)
    "usage-burst": (("mac", "size", "minutes"), None), "usage-burst-remove": (("mac",), None),
    "usage-bursts": ((), None),
    # satellite switches (pairing.py); satellite-pair is cli_satellites
    "restore-status": ((), None),     # components/backup: the last restore, and whether it is in force
    "satellites": ((), None), "satellite-permit": (("dpid", "code?"), None), "satellite-deny": (("dpid",), None),
    "satellite-forget": (("dpid",), None),
}


def _new_password(generate: bool) -> str:
    if generate:
        import secrets
        return secrets.token_urlsafe(12)
    if sys.stdin.isatty():
        import getpass
        first = getpass.getpass("new Guest Board admin password: ")
        if getpass.getpass("again: ") != first:
            raise RuntimeError("the two passwords differ")
        return first
    return sys.stdin.readline().rstrip("\n")


def _add_simple(sub, name: str, params: tuple[str, ...], help_text: str | None = None) -> None:
    p = sub.add_parser(name, help=help_text)
    for param in params:
        p.add_argument(param.rstrip("?"), nargs="?" if param.endswith("?") else None)


def _declared_commands(sub, argv: list[str]) -> dict[str, tuple[str, ...]]:
    """The commands the components' manifests give a CLI form (`cli`: positional arguments),
    added as subcommands. Read only when the command line names none of the others (or asks
    for help): the manifests import every component's checks, which a plain `homework
    devices` need not pay for."""
    words = [a for a in argv if not a.startswith("-")]
    if words and words[0] in sub.choices and "-h" not in argv and "--help" not in argv:
        return {}
    from . import manifest
    declared: dict[str, tuple[str, ...]] = {}
    for m in manifest.every():
        for name, (params, help_text) in m.cli.items():
            if name not in sub.choices:
                _add_simple(sub, name, params, help_text)
                declared[name] = params
    return declared


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="homework", description="Homework router admin CLI")
    parser.add_argument("--socket", default=DEFAULT_SOCKET, help="controller control socket")
    parser.add_argument("--json", action="store_true", help="print raw JSON")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name, (params, _) in SIMPLE.items():
        _add_simple(sub, name, params)
    meta = sub.add_parser("name", help="set a device's name, owner and type")
    meta.add_argument("mac")
    meta.add_argument("--name")
    meta.add_argument("--owner")
    meta.add_argument("--type")
    hook = sub.add_parser("webhook-add", help="POST every notification to this URL (signed; the secret is shown once)")
    hook.add_argument("url")
    hook.add_argument("--allow-local", action="store_true",
                      help="the URL is on your own network or the router (refused otherwise)")
    # API tokens and the Guest Board password (api component)
    tok = sub.add_parser("token", help="API tokens for scripts: create, list, revoke")
    toksub = tok.add_subparsers(dest="token_cmd", required=True)
    tok_create = toksub.add_parser("create", help="create a token; its secret is shown only now")
    tok_create.add_argument("name")
    tok_create.add_argument("--role", choices=("admin", "read-only"), default="read-only")
    toksub.add_parser("list")
    toksub.add_parser("revoke").add_argument("id")
    passwd = sub.add_parser("passwd", help="set the Guest Board admin password (ends every session)")
    passwd.add_argument("--generate", action="store_true", help="make up a password and print it")
    # local names (components/localnames) and the DNS query log (hwdb's DnsQueries)
    sub.add_parser("names", help="the names devices answer to in the home (<label>.home.arpa)")
    queries = sub.add_parser("queries", help="recent DNS queries, newest first")
    queries.add_argument("--mac")
    queries.add_argument("--search", help="part of the name")
    queries.add_argument("--verdict", help="allowed, blocked, pending, ...")
    queries.add_argument("--limit", help="at most this many rows (default 100, at most 1000)")
    queries.add_argument("--summary", action="store_true", help="per device: total and blocked; top blocked names")
    cli_schedules.add_parsers(sub)       # schedule, pause, resume, rules' --schedule
    cli_parity.add_parsers(sub)          # group decisions, pre-approval, household-rule
    cli_blocklists.add_parsers(sub)      # blocklist add/list/refresh/remove, safe-search
    cli_backup.add_parsers(sub)          # backup, restore, factory-reset
    cli_wifi.add_parsers(sub)            # wifi (SSID, passphrase)
    cli_qos.add_parsers(sub)             # qos (priorities and shaping)
    cli_update.add_parsers(sub)          # update, update-status, reboot
    cli_satellites.add_parsers(sub)      # satellite-pair
    cli_dns.add_parsers(sub)             # the resolver: dnssec, dnssec insecure, dns-upstream
    cli_reach.add_parsers(sub)           # forward, open-ports, may-open-ports, upnp
    cli_identify.add_parsers(sub)        # identity, identify-correct, identify-clear
    cli_remote.add_parsers(sub)          # remote add/list/config (WireGuard)
    cli_panels.add_parsers(sub)          # panel pair/list/revoke (the router's screen, wall tablets)
    raw = sub.add_parser("call", help="call any controller command with key=value arguments")
    raw.add_argument("command")
    raw.add_argument("args", nargs="*")
    declared = _declared_commands(sub, sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)

    try:
        scheduled = cli_schedules.run(args, call, args.socket)
        parity = cli_parity.run(args, call, args.socket) if scheduled is None else None
        listed = cli_blocklists.run(args, call, args.socket) if scheduled is None and parity is None else None
        backed = cli_backup.run(args, call, args.socket) if args.cmd in ("backup", "restore", "factory-reset") else None
        backed = cli_wifi.run(args, call, args.socket) if args.cmd == "wifi" else backed
        backed = cli_qos.run(args, call, args.socket) if args.cmd == "qos" else backed
        backed = cli_update.run(args, call, args.socket) if args.cmd in cli_update.COMMANDS else backed
        backed = cli_satellites.run(args, call, args.socket) if args.cmd == "satellite-pair" else backed
        backed = cli_dns.run(args, call, args.socket) or backed
        backed = cli_reach.run(args, call, args.socket) if args.cmd in cli_reach.COMMANDS else backed
        backed = cli_identify.run(args, call, args.socket) if args.cmd in cli_identify.COMMANDS else backed
        backed = cli_remote.run(args, call, args.socket) if args.cmd in cli_remote.COMMANDS else backed
        backed = cli_panels.run(args, call, args.socket) if args.cmd in cli_panels.COMMANDS else backed
        if backed is not None:
            scheduled = backed
        if scheduled is not None:
            result, printer = scheduled
        elif parity is not None:
            result, printer = parity
        elif listed is not None:
            result, printer = listed
        elif args.cmd == "name":
            result = call(args.socket, "set-meta", mac=args.mac, name=args.name, owner=args.owner, type=args.type)
            printer = None
        elif args.cmd == "webhook-add":
            result, printer = call(args.socket, "webhook-add", url=args.url, allow_local=args.allow_local), None
        elif args.cmd == "token":
            printer = None
            if args.token_cmd == "create":
                result = call(args.socket, "token-create", name=args.name, role=args.role)
            elif args.token_cmd == "list":
                result = call(args.socket, "token-list")
            else:
                result = call(args.socket, "token-revoke", id=args.id)
        elif args.cmd == "passwd":
            password = _new_password(args.generate)
            result, printer = call(args.socket, "set-password", password=password), None
            if args.generate:
                result["password"] = password
        elif args.cmd == "names":
            result, printer = call(args.socket, "local-names"), print_names
        elif args.cmd == "queries" and args.summary:
            result, printer = call(args.socket, "dns-queries-summary"), None
        elif args.cmd == "queries":
            wanted = {k: getattr(args, k) for k in ("mac", "search", "verdict", "limit") if getattr(args, k)}
            result, printer = call(args.socket, "dns-queries", **wanted), print_queries
        elif args.cmd == "call":
            kv = dict(a.split("=", 1) for a in args.args if "=" in a)
            result, printer = call(args.socket, args.command, **kv), None
        else:
            params, printer = SIMPLE[args.cmd] if args.cmd in SIMPLE else (declared[args.cmd], None)
            kwargs = {p.rstrip("?"): getattr(args, p.rstrip("?")) for p in params
                      if getattr(args, p.rstrip("?")) is not None}
            result = call(args.socket, args.cmd, **kwargs)
    except FileNotFoundError:
        print(f"homework: no controller at {args.socket} (is it running? --socket PATH)", file=sys.stderr)
        return 2
    except (RuntimeError, ConnectionError, OSError) as exc:
        print(f"homework: {exc}", file=sys.stderr)
        return 1
    if printer and not args.json:
        printer(result)
    elif isinstance(result, dict) and "mac" in result and "state" in result and not args.json:
        print(f"{result['mac']} is now {result['state']}")
    else:
        print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
