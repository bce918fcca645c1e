"""The CLI's priority commands (components/qos):

    homework qos                                             the link, the classes, every rule
    homework qos link --down KBIT --up KBIT [--on|--off] [--high-share PCT]
    homework qos device MAC CLASS [--days mon-fri --from 09:00 --to 17:00]
    homework qos app NAME CLASS --ports udp/3478-3481,tcp/443 --domains zoom.us [--days ... --from ... --to ...]
    homework qos app-delete NAME
    homework qos stats
    homework qos edge                                        the priorities at the ISP's edge ([isp] edge)
"""
from __future__ import annotations

CLASSES = ("high", "medium", "default")


def _window(args) -> dict | None:
    if not (args.days or args.start or args.end):
        return None
    return {"days": args.days, "start": args.start, "end": args.end}


def _window_text(window: dict | None) -> str:
    return f"  ({','.join(window['days'])} {window['start']}-{window['end']})" if window else ""


def print_qos(result: dict) -> None:
    state = "on" if result.get("enabled") else "off"
    print(f"shaping {state} ({'active' if result.get('active') else 'not active'}, leaves {result.get('leaf')}): "
          f"down {result.get('down_kbit') or 'unset'} kbit/s, up {result.get('up_kbit') or 'unset'} kbit/s, "
          f"high sure of {result.get('high_share')}% when the line is busy, all of it when idle")
    for mac, rule in sorted((result.get("devices") or {}).items()):
        print(f"device {mac}  {rule['class']}{_window_text(rule.get('window'))}")
    for app in result.get("apps") or []:
        what = " ".join(app["ports"] + app["domains"])
        print(f"app {app['name']!r}  {app['class']}  {what}{_window_text(app.get('window'))}")


def print_stats(result: dict) -> None:
    for row in result.get("classes") or []:
        print(f"{row['direction']:4}  {row['class']:7}  {row['rate_bps'] / 1000:10.1f} kbit/s  "
              f"{row['bytes']:>12} bytes  {row['drops']:>6} drops")


def print_edge(result: dict) -> None:
    if not result.get("configured"):
        print("no ISP edge configured ([isp] edge)")
        return
    if result.get("error") or not result.get("reachable"):
        print(f"ISP edge {result.get('edge')}: {result.get('error') or 'not asked yet'}")
    else:
        print(f"ISP edge {result.get('edge')}: {result.get('placed')} of {result.get('wanted')} connections placed, "
              f"{result.get('honoured')} carrying traffic (budget {result.get('budget')})")
    for flow, queue in sorted((result.get("placed_at") or {}).items()):
        print(f"  {queue:7}  {flow}")
    for queue, q in (result.get("queues") or {}).items():
        print(f"  queue {queue:7}  {q['packets']:>10} packets  {q['drops']:>6} drops  ceil {q['ceil_kbit']} kbit/s")
    for why in result.get("refused") or []:
        print(f"  refused: {why}")


def _add_window(p) -> None:
    p.add_argument("--days", help="only on these days: mon-fri, sat,sun, daily, ...")
    p.add_argument("--from", dest="start", help="HH:MM local time")
    p.add_argument("--to", dest="end", help="HH:MM local time")


def add_parsers(sub) -> None:
    qos = sub.add_parser("qos", help="priorities and shaping: show, link, device, app, app-delete, stats, edge")
    qsub = qos.add_subparsers(dest="qos_cmd")
    link = qsub.add_parser("link", help="the line's rates (kbit/s) and shaping on or off")
    link.add_argument("--down", type=int, help="download kbit/s")
    link.add_argument("--up", type=int, help="upload kbit/s")
    link.add_argument("--high-share", type=int,
                      help="percent of the line the high class is sure of when the line is busy "
                           "(on an idle line every class may use all of it)")
    onoff = link.add_mutually_exclusive_group()
    onoff.add_argument("--on", dest="enabled", action="store_const", const=True)
    onoff.add_argument("--off", dest="enabled", action="store_const", const=False)
    device = qsub.add_parser("device", help="a device's whole traffic in a class (default: no rule)")
    device.add_argument("mac")
    device.add_argument("cls", metavar="CLASS", choices=CLASSES)
    _add_window(device)
    app = qsub.add_parser("app", help="an application (ports and/or domains) in a class; replaces one of that name")
    app.add_argument("name")
    app.add_argument("cls", metavar="CLASS", choices=CLASSES)
    app.add_argument("--ports", default="", help="e.g. udp/3478-3481,tcp/443")
    app.add_argument("--domains", default="", help="e.g. zoom.us,zoom.com")
    _add_window(app)
    qsub.add_parser("app-delete", help="remove an application").add_argument("name")
    qsub.add_parser("stats", help="the last second's rates and drops per class")
    qsub.add_parser("edge", help="the priorities placed at the ISP's edge: placed, honoured, drops")


def run(args, call, sock: str):
    """(result, printer) for `homework qos ...`."""
    sub = getattr(args, "qos_cmd", None)
    if sub == "link":
        values = {k: v for k, v in (("down_kbit", args.down), ("up_kbit", args.up), ("enabled", args.enabled),
                                    ("high_share", args.high_share)) if v is not None}
        return call(sock, "qos-link", **values), print_qos
    if sub == "device":
        return call(sock, "qos-device", mac=args.mac, cls=args.cls, window=_window(args)), print_qos
    if sub == "app":
        return call(sock, "qos-app", name=args.name, cls=args.cls, ports=args.ports, domains=args.domains,
                    window=_window(args)), print_qos
    if sub == "app-delete":
        return call(sock, "qos-app-delete", name=args.name), print_qos
    if sub == "stats":
        return call(sock, "qos-stats"), print_stats
    if sub == "edge":
        return call(sock, "qos-edge"), print_edge
    return call(sock, "qos"), print_qos
