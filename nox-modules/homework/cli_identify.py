"""The CLI's commands for what each device is (components/identify):

    homework identity MAC                                 the guess, why, and what the device said
    homework identify-correct MAC [--type T] [--os OS] [--label TEXT]   the household's word
    homework identify-clear MAC                           back to the router's guess
    homework identify-join MAC AS_MAC                     let a device back with a new private address in
                                                          as the device it looks like
    homework story MAC [--csv]                            the device's story (--csv: as the download)
"""
from __future__ import annotations

import time

COMMANDS = ("identity", "identify-correct", "identify-clear", "identify-join", "story")


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


def print_story(result: dict) -> None:
    if "csv" in result:
        print(result["csv"], end="")
        return
    print(f"{result['name']}{' (' + result['label'] + ')' if result.get('label') else ''}")
    for e in result["events"]:
        print(f"  {time.strftime('%Y-%m-%d %H:%M', time.localtime(e['at']))}  {e['words']}")
    names = result.get("names_today")
    if names is None:
        print(f"  names today: {result.get('names_note')}")
    elif names:
        print("  names today: " + ", ".join(f"{n['name']} ({n['count']})" for n in names))
    if result.get("usage"):
        print(f"  today: {result['usage']['today']['words']}; this week: {result['usage']['week']['words']}")


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
    story = sub.add_parser("story", help="a device's story: first seen, who let it in, where, names today, usage, "
                                         "alerts")
    story.add_argument("mac")
    story.add_argument("--csv", action="store_true", help="as the board's CSV download")


def run(args, call, sock: str):
    """(result, printer) for the commands above."""
    if args.cmd == "identify-correct":
        result = call(sock, "identify-correct", mac=args.mac, type=args.type, os=args.os, label=args.label)
        return result, print_identity
    if args.cmd == "identify-join":
        return call(sock, "identify-join", mac=args.mac, as_mac=args.as_mac), print_identity
    if args.cmd == "story":
        return call(sock, "device-story", mac=args.mac, format="csv" if args.csv else "json"), print_story
    if args.cmd == "identify-clear":
        return call(sock, "identify-clear", mac=args.mac), print_identity
    return call(sock, "identity", mac=args.mac), print_identity
