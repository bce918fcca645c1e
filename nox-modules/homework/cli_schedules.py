"""The CLI's schedule and pause commands (components/schedules):

    homework schedule add --mac M|--owner O --days mon-fri --from 21:30 --to 07:00 [--action pause|dns-strict]
    homework schedule list [--mac M]
    homework schedule remove ID
    homework pause MAC [--minutes 60]
    homework resume MAC
    homework deny-dns MAC DOMAIN --schedule "sun-thu 21:30-07:00"   (also permit-dns, household-*-dns)
"""
from __future__ import annotations

import time

SCHEDULED_RULES = ("permit-dns", "deny-dns", "household-permit-dns", "household-deny-dns")


def print_schedules(rows: list[dict]) -> None:
    if not rows:
        print("no schedules")
    for r in rows:
        who = r.get("mac") or f"owner {r.get('owner')}"
        print(f"{r['id']:>4}  {who:23}  {r['action']:10}  {r['window']}")


def print_pause(result: dict) -> None:
    if result.get("paused"):
        until = time.strftime("%H:%M", time.localtime(result["paused_until"])) if result.get("paused_until") else "?"
        print(f"{result['mac']} is paused until {until}" +
              (" (its schedule)" if result.get("paused_by") == "schedule" else ""))
    else:
        print(f"{result['mac']} is not paused")


def add_parsers(sub) -> None:
    sched = sub.add_parser("schedule", help="bedtime windows per device or owner: add, list, remove")
    ssub = sched.add_subparsers(dest="schedule_cmd", required=True)
    add = ssub.add_parser("add", help="a weekly window; to before from: it ends the next morning")
    add.add_argument("--mac")
    add.add_argument("--owner")
    add.add_argument("--days", required=True, help="mon-fri, sun-thu, sat,sun, daily, weekdays, weekends")
    add.add_argument("--from", dest="start", required=True, help="HH:MM local time")
    add.add_argument("--to", dest="end", required=True, help="HH:MM local time")
    add.add_argument("--action", choices=("pause", "dns-strict"), default="pause")
    ssub.add_parser("list").add_argument("--mac")
    ssub.add_parser("remove").add_argument("id")
    pause = sub.add_parser("pause", help="cut a device off the internet for some minutes")
    pause.add_argument("mac")
    pause.add_argument("--minutes", type=int, default=60)
    sub.add_parser("resume", help="end a device's pause now").add_argument("mac")
    for name in SCHEDULED_RULES:
        sub.choices[name].add_argument("--schedule", help="only count in these windows, e.g. 'sun-thu 21:30-07:00'")


def run(args, call, sock: str):
    """(result, printer) for the commands above; None for any other command."""
    if args.cmd == "schedule" and args.schedule_cmd == "add":
        return call(sock, "schedule-add", mac=args.mac, owner=args.owner, days=args.days, start=args.start,
                    end=args.end, action=args.action), None
    if args.cmd == "schedule" and args.schedule_cmd == "list":
        return call(sock, "schedules", mac=args.mac), print_schedules
    if args.cmd == "schedule":
        return call(sock, "schedule-remove", id=args.id), None
    if args.cmd == "pause":
        return call(sock, "pause", mac=args.mac, minutes=args.minutes), print_pause
    if args.cmd == "resume":
        return call(sock, "resume", mac=args.mac), print_pause
    if args.cmd in SCHEDULED_RULES and getattr(args, "schedule", None):
        params = {"permit-dns": ("mac", "domain"), "deny-dns": ("mac", "domain")}.get(args.cmd, ("domain",))
        return call(sock, args.cmd, schedule=args.schedule, **{p: getattr(args, p) for p in params}), None
    return None
