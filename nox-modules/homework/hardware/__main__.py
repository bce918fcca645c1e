"""`python3 -m homework.hardware [--json] [--interfaces FILE] [--router-conf FILE]`

Prints the hardware report: the HOMEWORK-HW lines (the image's homework-hardware unit shows
them on the console at every boot), or the report as JSON (what GET /ws.v1/system carries).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import collect, report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m homework.hardware", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="the report as JSON")
    ap.add_argument("--interfaces", default="/run/homework/interfaces.env",
                    help="the bring-up's record of the ports (WAN and why, LAN, Wi-Fi)")
    ap.add_argument("--router-conf", default="/etc/homework/router.conf")
    args = ap.parse_args(argv)
    roles = report.roles_from_files(Path(args.interfaces), Path(args.router_conf)) or report.Roles()
    rep = report.build(collect.gather(), roles)
    if args.json:
        json.dump(rep, sys.stdout, indent=2)
        print()
    else:
        print("\n".join(report.lines(rep)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
