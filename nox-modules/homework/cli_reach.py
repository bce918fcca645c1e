"""The CLI's commands for reaching in from the internet (components/reach):

    homework forward add MAC PORTS [--to PORT] [--protocol tcp|udp|both] [--description TEXT]
    homework forward list [--mac MAC]
    homework forward remove ID
    homework open-ports [MAC]                 every device's forwards and UPnP/NAT-PMP/PCP mappings
    homework may-open-ports MAC on|off        the panel's "may open ports" tick
    homework upnp                             miniupnpd's state and every mapping
    homework upnp close KEY                   close one mapping
"""
from __future__ import annotations

import time

COMMANDS = ("forward", "open-ports", "may-open-ports", "upnp")


def _until(expires: float) -> str:
    return "until closed" if not expires else f"until {time.strftime('%H:%M', time.localtime(expires))}"


def _forward_line(f: dict) -> str:
    to = f" -> port {f['to_port']}" if f["to_port"] != f["first"] else ""
    state = "open" if f["open"] else f"closed: {f['why_closed']}"
    desc = f"  ({f['description']})" if f.get("description") else ""
    return f"{f['id']:>4}  {f['protocol']:4} {f['ports']:>11}{to}  to {f['device']}  [{state}]{desc}"


def _mapping_line(m: dict) -> str:
    if m["family"] == 4:
        what = f"{m['protocol']} {m['port']} -> {m['address']} port {m['to_port']}"
    else:
        what = f"{m['protocol']} pinhole to [{m['address']}]:{m['port']}"
    return f"      {what}  {m['description'] or ''}  {_until(m['expires'])}  (key {m['key']})"


def print_forwards(rows: list[dict]) -> None:
    if not rows:
        print("no port forwards")
    for f in rows:
        print(_forward_line(f))


def print_open_ports(rows: list[dict]) -> None:
    if not rows:
        print("no device has open ports or may open them")
    for d in rows:
        print(f"{d['device']} ({d['mac']}): {'may' if d['may_open_ports'] else 'may not'} open ports itself")
        for f in d["forwards"]:
            print("  forward" + _forward_line(f))
        for m in d["mappings"]:
            print(_mapping_line(m))


def print_upnp(result: dict) -> None:
    state = "running" if result.get("running") else ("off" if not result.get("enabled") else "not running")
    print(f"miniupnpd {state}; WAN {', '.join(result.get('wan_addresses') or []) or 'no address'}")
    if result.get("note"):
        print(result["note"])
    for m in result.get("mappings") or []:
        print(f"{m['device']}:" + _mapping_line(m)[5:])


def add_parsers(sub) -> None:
    fwd = sub.add_parser("forward", help="port forwards: an external port or range to a device's port")
    fsub = fwd.add_subparsers(dest="forward_cmd", required=True)
    add = fsub.add_parser("add", help="forward PORTS (8080 or 27015-27030) of the WAN to the device")
    add.add_argument("mac")
    add.add_argument("ports")
    add.add_argument("--to", dest="to_port", help="the device's port (a single port only; default: the same)")
    add.add_argument("--protocol", choices=("tcp", "udp", "both"), default="tcp")
    add.add_argument("--description")
    fsub.add_parser("list").add_argument("--mac")
    fsub.add_parser("remove").add_argument("id")
    sub.add_parser("open-ports", help="every device's forwards and UPnP/NAT-PMP/PCP mappings").add_argument(
        "mac", nargs="?")
    may = sub.add_parser("may-open-ports", help="let a device open ports itself (UPnP, NAT-PMP, PCP), or not")
    may.add_argument("mac")
    may.add_argument("allowed", choices=("on", "off"))
    upnp = sub.add_parser("upnp", help="miniupnpd's state and mappings; close one")
    usub = upnp.add_subparsers(dest="upnp_cmd")
    usub.add_parser("close").add_argument("key")


def run(args, call, sock: str):
    """(result, printer) for the commands above."""
    if args.cmd == "forward" and args.forward_cmd == "add":
        return call(sock, "forward-add", mac=args.mac, ports=args.ports, protocol=args.protocol,
                    to_port=args.to_port, description=args.description), print_forwards_one
    if args.cmd == "forward" and args.forward_cmd == "list":
        return call(sock, "forwards", mac=args.mac), print_forwards
    if args.cmd == "forward":
        return call(sock, "forward-remove", id=args.id), None
    if args.cmd == "open-ports":
        return call(sock, "open-ports", mac=args.mac), print_open_ports
    if args.cmd == "may-open-ports":
        return call(sock, "may-open-ports", mac=args.mac, allowed=args.allowed == "on"), None
    if getattr(args, "upnp_cmd", None) == "close":
        return call(sock, "upnp-close", key=args.key), None
    return call(sock, "upnp-status"), print_upnp


def print_forwards_one(forward: dict) -> None:
    print_forwards([forward])
