"""What the router runs: the components the image loads, in order, each with what it needs
from the box, and the settings every shipped router starts from.

One list for everyone: the image's bring-up (image/guest/homework-net reads the lines
`python3 -m homework.lineup --needs` printed at build time), the emulated home of `make run`
and of every test home that does not name its components (tests/homelab), and
conf/homework.toml (a unit test compares it). A component whose need the box does not meet
is left out: DNS interception without homework-dnsd, logging without hwdbd, the radio
monitor without a Wi-Fi interface. The emulated home has no radio; its link simulator
stands in for one.

    python3 -m homework.lineup                     # the whole list, as a TOML array
    python3 -m homework.lineup --have dnsd,wan     # what a box with only those gets
    python3 -m homework.lineup --needs             # "NAME NEED" lines for the image
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    name: str
    needs: str = ""        # "" (always), or one of NEEDS


# What a need means, checked on the box (image/guest/homework-net) or the emulated home.
NEEDS = {
    "dnsd": "homework-dnsd is installed (DNS interception, and the names and lists that go with it)",
    "hwdbd": "hwdbd is installed (the stream database)",
    "wan": "the box has a WAN interface",
    "mqtt-broker": "an MQTT broker (mosquitto) is installed",
    "radio": "a Wi-Fi interface and `iw`",
}

LINEUP: tuple[Part, ...] = (
    Part("dhcp"), Part("routing"),
    Part("dns", "dnsd"), Part("localnames", "dnsd"), Part("blocklists", "dnsd"),
    Part("eapol"), Part("hwdb_sync", "hwdbd"), Part("api"),
    Part("usage"), Part("schedules"), Part("notify"), Part("wanwatch", "wan"), Part("metrics"),
    Part("mqtt", "mqtt-broker"), Part("backup"), Part("radio", "radio"), Part("qos"),
    Part("satlink"),        # satellite agents' channel: idle without satellites
    Part("reach", "wan"),   # port forwards, and UPnP/NAT-PMP/PCP for devices let open ports
    Part("remote", "wan"),  # remote access over WireGuard: devices away from home
    Part("identify"),       # what each device is, from what it says about itself
)
assert all(p.needs in ("", *NEEDS) for p in LINEUP)

# The emulated home's stand-ins: no real radio there, a simulated link instead.
STAND_INS = {"radio": "linksim"}

# Settings every shipped router has (the image writes them, conf/homework.toml and the
# emulated home use them); each equals its key's default in config.KEYS, and a unit test
# keeps it so. Listed here because they are the ones a lighter test home turns off.
SHIPPED = {
    "ipv6": {"enabled": True},
}


def components(have=None, stand_ins: bool = False) -> list[str]:
    """The components for a box that meets the needs in `have` (None: every need);
    `stand_ins`: the emulated home's stand-ins for what it cannot have."""
    out = []
    for part in LINEUP:
        if have is None or not part.needs or part.needs in have:
            out.append(part.name)
        elif stand_ins and part.name in STAND_INS:
            out.append(STAND_INS[part.name])
    return out


def toml_list(names) -> str:
    return ", ".join(f'"{n}"' for n in names)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m homework.lineup", description=__doc__.split("\n\n")[0])
    ap.add_argument("--have", help=f"comma-separated needs the box meets ({', '.join(NEEDS)}); default: all")
    ap.add_argument("--needs", action="store_true", help="print NAME NEED lines (NEED '-' for none)")
    args = ap.parse_args(argv)
    if args.needs:
        for part in LINEUP:
            print(part.name, part.needs or "-")
        return 0
    have = None
    if args.have is not None:
        have = {h for h in args.have.split(",") if h}
        unknown = have - set(NEEDS)
        if unknown:
            ap.error(f"unknown need(s): {', '.join(sorted(unknown))} (known: {', '.join(NEEDS)})")
    print(toml_list(components(have)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
