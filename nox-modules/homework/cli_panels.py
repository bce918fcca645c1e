"""CLI for panels (components/api/panels.py): `homework panel pair [--screen] [--name N]`,
`homework panel list`, `homework panel revoke ID`. The router's kiosk pairs its screen with
`homework --json panel pair --screen` at each start."""
from __future__ import annotations

import time

COMMANDS = ("panel",)


def add_parsers(sub) -> None:
    panel = sub.add_parser("panel", help="panels (the router's screen, wall tablets): pair, list, revoke")
    psub = panel.add_subparsers(dest="panel_cmd", required=True)
    pair = psub.add_parser("pair", help="a one-time pairing code (a tablet opens https://<router>/#panel-code=CODE)")
    pair.add_argument("--screen", action="store_true", help="for the router's own screen (used from the router only)")
    pair.add_argument("--name", help="the panel's name on the settings page")
    psub.add_parser("list", help="the paired panels")
    psub.add_parser("revoke", help="unpair a panel").add_argument("id")
    night = psub.add_parser("night", help="when panels' screens dim (the household's clock)")
    night.add_argument("--from", dest="start", help="HH:MM, e.g. 22:00")
    night.add_argument("--to", dest="end", help="HH:MM, e.g. 07:00")
    night.add_argument("--brightness", help="percent at night, 5 to 100")
    night.add_argument("--off", action="store_true", help="never dim")
    psub.add_parser("display", help="whether panels' screens are dimmed now")


def print_panels(panels) -> None:
    if not panels:
        print("no panels paired")
    for p in panels:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(p["last_used"]))
        print(f"{p['id']}  {p['kind']:6}  {p['name']}{'  (' + p['device'] + ')' if p['device'] else ''}  "
              f"last used {used}")


def run(args, call, sock: str):
    if args.panel_cmd == "pair":
        return call(sock, "panel-pair", kind="screen" if args.screen else "tablet", name=args.name), None
    if args.panel_cmd == "list":
        return call(sock, "panels"), print_panels
    if args.panel_cmd == "night":
        if args.off:
            return call(sock, "panel-night", enabled=False), None
        window = {k: v for k, v in (("from", args.start), ("to", args.end), ("brightness", args.brightness)) if v}
        return call(sock, "panel-night", **window), None
    if args.panel_cmd == "display":
        return call(sock, "panel-display"), None
    return call(sock, "panel-revoke", id=args.id), None
