"""The CLI's commands for what each device is (components/identify):

    homework identity MAC                                 the guess, why, and what the device said
    homework identify-correct MAC [--type T] [--os OS] [--label TEXT]   the household's word
    homework identify-clear MAC                           back to the router's guess
    homework identify-join MAC AS_MAC                     let a device back with a new private address in
                                                          as the device it looks like
"""
from __future__ import annotations

COMMANDS = ("identity", "identify-correct", "identify-clear", "identify-join")


def print_identity(result: dict) -> None:
    label = result.get("label") or "not known"
    how = "as the household said" if result.get("corrected") else f"{result.get('level')}, " \
                                                                  f"{round(100 * result.get('confidence', 0))} %"
    print(f"{result['mac']}: {label} ({how})")
    twin = result.get("looks_like")
    if twin:
        print(f"  {twin['text']} (homework identify-join {result['mac']} {twin['mac']})")
    for why in result.get("why") or []:
        print(f"  because it {why}" if not why.startswith("the household") else f"  because {why}")
    for key, value in sorted((result.get("evidence") or {}).items()):
        print(f"  {key}: {value}")


def add_parsers(sub) -> None:
    sub.add_parser("identity", help="what a device is: the router's guess, why, and what the device said").add_argument(
        "mac")
    fix = sub.add_parser("identify-correct", help="say what a device is (kept; the board shows it)")
    fix.add_argument("mac")
    fix.add_argument("--type", default="", help="phone, laptop, tablet, TV, console, speaker, printer, camera or IoT")
    fix.add_argument("--os", default="")
    fix.add_argument("--label", default="", help="what it is, in your words")
    sub.add_parser("identify-clear", help="back to the router's guess").add_argument("mac")
    join = sub.add_parser("identify-join", help="let a device back with a new private address in as the device "
                                                "it looks like (its name, rules of access and history)")
    join.add_argument("mac")
    join.add_argument("as_mac")


def run(args, call, sock: str):
    """(result, printer) for the commands above."""
    if args.cmd == "identify-correct":
        result = call(sock, "identify-correct", mac=args.mac, type=args.type, os=args.os, label=args.label)
        return result, print_identity
    if args.cmd == "identify-join":
        return call(sock, "identify-join", mac=args.mac, as_mac=args.as_mac), print_identity
    if args.cmd == "identify-clear":
        return call(sock, "identify-clear", mac=args.mac), print_identity
    return call(sock, "identity", mac=args.mac), print_identity
