"""Is the WAN usable right now? One look, read from the kernel (sysfs and procfs), so a
check never blocks the controller: the interface exists, is up with a carrier, and a
default route (IPv4 or IPv6) leaves through it. A lost DHCP lease on the WAN removes
that route, so it counts as down too."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SYS_NET = Path("/sys/class/net")
ROUTE4 = Path("/proc/net/route")
ROUTE6 = Path("/proc/net/ipv6_route")
RTF_UP = 0x1


@dataclass(frozen=True)
class Look:
    ok: bool
    reason: str            # why it is (not) usable, in words for the notification


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:        # e.g. `carrier` raises EINVAL while the interface is down
        return ""


def has_default_route(ifname: str, route4: Path = ROUTE4, route6: Path = ROUTE6) -> bool:
    for line in _read(route4).splitlines()[1:]:
        f = line.split()
        # Iface Destination Gateway Flags RefCnt Use Metric Mask ...
        if len(f) >= 8 and f[0] == ifname and f[1] == "00000000" and f[7] == "00000000" \
                and int(f[3], 16) & RTF_UP:
            return True
    for line in _read(route6).splitlines():
        f = line.split()
        # dest prefixlen src srclen nexthop metric refcnt use flags iface
        if len(f) >= 10 and f[9] == ifname and f[1] == "00" and set(f[0]) == {"0"}:
            return True
    return False


def look(ifname: str, sys_net: Path = SYS_NET, route4: Path = ROUTE4, route6: Path = ROUTE6) -> Look:
    dev = sys_net / ifname
    if not dev.exists():
        return Look(False, f"the router's internet port ({ifname}) is not there")
    operstate = _read(dev / "operstate")
    if operstate not in ("up", "unknown"):      # "unknown": drivers that do not report it
        return Look(False, f"the router's internet port ({ifname}) is {operstate or 'down'}")
    if _read(dev / "carrier") != "1":
        return Look(False, f"the router's internet port ({ifname}) has no link: check the cable to the modem, "
                           "and the modem")
    if not has_default_route(ifname, route4, route6):
        return Look(False, f"the router has no way out through its internet port ({ifname}): the internet "
                           "provider gave it no address")
    return Look(True, f"the router's internet port ({ifname}) is connected")
