"""CLI for decisions on one or several MACs (`homework permit MAC [MAC ...]`,
all or nothing, a MAC not seen yet is pre-approved) and `homework household-rule`."""
from __future__ import annotations

DECISIONS = ("permit", "deny", "blacklist", "forget")


def add_parsers(sub) -> None:
    for name in DECISIONS:
        p = sub.add_parser(name, help=f"{name} one or more devices (all or nothing); "
                                      + ("" if name == "forget" else "a MAC not seen yet is pre-approved"))
        p.add_argument("mac", nargs="+")
    rule = sub.add_parser("household-rule", help="a DNS rule for every device in the home")
    rule.add_argument("action", choices=("allow", "deny", "remove"))
    rule.add_argument("domain")


def print_decisions(results) -> None:
    for r in results if isinstance(results, list) else [results]:
        if r.get("forgotten"):
            print(f"{r['mac']} forgotten")
        elif r.get("last_seen") == 0:
            print(f"{r['mac']} is now {r['state']} (pre-approved: not seen yet)")
        else:
            print(f"{r['mac']} is now {r['state']}")


def run(args, call, sock: str):
    """(result, printer) for the commands of this module, None for the others."""
    if args.cmd in DECISIONS:
        if len(args.mac) == 1:
            return call(sock, args.cmd, mac=args.mac[0]), print_decisions   # --json: as before
        return call(sock, "decide-group", decision=args.cmd, macs=args.mac), print_decisions
    if args.cmd == "household-rule":
        if args.action == "remove":
            return call(sock, "remove-dns-rule", domain=args.domain, mac="household"), None
        name = "household-permit-dns" if args.action == "allow" else "household-deny-dns"
        return call(sock, name, domain=args.domain), None
    return None
