"""CLI for blocklists and safe-search:

    homework blocklist add URL [--owner NAME] [--allow-local]   subscribe (fetched now; errors say why)
    homework blocklist list
    homework blocklist refresh ID
    homework blocklist remove ID
    homework safe-search [on|off]
"""
from __future__ import annotations

import time

FETCH_TIMEOUT = 180.0      # a fetch (up to [blocklists] fetch_timeout) plus parsing a big list


def add_parsers(sub) -> None:
    bl = sub.add_parser("blocklist", help="blocklist subscriptions: add URL, list, refresh ID, remove ID")
    blsub = bl.add_subparsers(dest="blocklist_cmd", required=True)
    add = blsub.add_parser("add", help="subscribe to a hosts-file or ||domain^ list by URL")
    add.add_argument("url")
    add.add_argument("--owner", help="only for the devices of this owner (default: every device)")
    add.add_argument("--allow-local", action="store_true",
                     help="the URL is on your own network or the router (refused otherwise)")
    blsub.add_parser("list")
    blsub.add_parser("refresh").add_argument("id")
    blsub.add_parser("remove").add_argument("id")
    safe = sub.add_parser("safe-search", help="search engines' safe-search for every device: on, off, or show")
    safe.add_argument("state", nargs="?", choices=("on", "off"))


def print_lists(result: dict) -> None:
    print(f"safe-search: {'on' if result.get('safe_search') else 'off'}")
    for r in result.get("blocklists", []):
        fetched = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["fetched"])) if r.get("fetched") else "never"
        print(f"{r['id']:>3}  {r['rules']:>8} names  {r['blocked_queries']:>7} blocked  {r['owner']:<12} "
              f"fetched {fetched}  {r['url']}" + (f"\n     last error: {r['error']}" if r.get("error") else ""))


def run(args, call, sock: str):
    """(result, printer) for the commands of this module, None for the others."""
    if args.cmd == "safe-search":
        if args.state is None:
            return call(sock, "safe-search"), None
        return call(sock, "safe-search", enabled=args.state == "on"), None
    if args.cmd != "blocklist":
        return None
    if args.blocklist_cmd == "add":
        return call(sock, "blocklist-add", timeout=FETCH_TIMEOUT, url=args.url, owner=args.owner,
                    allow_local=args.allow_local), None
    if args.blocklist_cmd == "refresh":
        return call(sock, "blocklist-refresh", timeout=FETCH_TIMEOUT, id=args.id), None
    if args.blocklist_cmd == "remove":
        return call(sock, "blocklist-remove", id=args.id), None
    return call(sock, "blocklists"), print_lists
