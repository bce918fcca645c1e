"""CLI for the resolver behind homework-dnsd (components/dns/resolver.py):

    homework dnssec [on|off]                  DNSSEC validation: show, or turn on or off
    homework dnssec insecure add DOMAIN       validation off for one domain (its signatures are broken)
    homework dnssec insecure remove DOMAIN
    homework dns-upstream                     where names are looked up, and whether that works
    homework dns-upstream isp|cloudflare|quad9|google [--fallback plain|none]
    homework dns-upstream custom ADDRESS#NAME ... [--fallback plain|none]
"""
from __future__ import annotations


def add_parsers(sub) -> None:
    p = sub.add_parser("dnssec", help="DNSSEC validation: show, on, off, or 'insecure add|remove DOMAIN'")
    p.add_argument("what", nargs="?", choices=("on", "off", "insecure"))
    p.add_argument("action", nargs="?", choices=("add", "remove"))
    p.add_argument("domain", nargs="?")
    u = sub.add_parser("dns-upstream", help="where the router looks names up: show, or isp, cloudflare, quad9, "
                                            "google, custom ADDRESS#NAME ...")
    u.add_argument("provider", nargs="?", choices=("isp", "cloudflare", "quad9", "google", "custom"))
    u.add_argument("servers", nargs="*", help="custom only: ADDRESS#NAME (the name its certificate carries)")
    u.add_argument("--fallback", choices=("plain", "none"),
                   help="while no encrypted resolver answers: your provider's in plain DNS, or none (default plain)")


def print_dnssec(view: dict) -> None:
    print(f"DNSSEC validation: {'on' if view['enabled'] else 'off'}"
          + ("" if view.get("running") else " (the resolver is not running: settings apply when it starts)"))
    if view.get("message"):
        print(view["message"])
    if view["insecure"]:
        print("not validated (negative trust anchors): " + ", ".join(view["insecure"]))
    if view.get("error"):
        print(f"resolver: {view['error']}")


def print_upstream(view: dict) -> None:
    print(view["message"])
    for s in view.get("servers_status", []):
        print(f"  {s['server']}: " + (f"answers ({s['rtt_ms']} ms)" if s["reachable"] else s["why"]))
    if view.get("error"):
        print(f"resolver: {view['error']}")


def run(args, call, sock: str):
    """(result, printer) for the commands of this module, None for the others."""
    if args.cmd == "dns-upstream":
        if args.provider is None:
            return call(sock, "dns-upstream"), print_upstream
        value = {"provider": args.provider, "fallback": args.fallback or "plain"}
        if args.servers:
            value["servers"] = args.servers
        return call(sock, "dns-upstream", **value), print_upstream
    if args.cmd != "dnssec":
        return None
    if args.what in ("on", "off"):
        return call(sock, "dnssec", enabled=args.what == "on"), print_dnssec
    if args.what == "insecure":
        if not args.action or not args.domain:
            raise SystemExit("usage: homework dnssec insecure add|remove DOMAIN")
        cmd = "dnssec-insecure-add" if args.action == "add" else "dnssec-insecure-remove"
        return call(sock, cmd, domain=args.domain), print_dnssec
    return call(sock, "dnssec"), print_dnssec
