"""Satellite switches: the plan for carrying a satellite's ports to the router.

A satellite is an Open vSwitch bridge elsewhere in the home (an access point, a switch in
another room) whose uplink is cabled to a port of the router. It makes no decision of its
own: the controller gives it flows that carry each of its ports, alone, to the router:

    satellite port P  --push VLAN V(index, P)-->  uplink  ==cable==>  router port (trunk)
        --> demux bridge hwsat<index> (VLAN V is an access port there: a patch port)
        --> patch port hws<index>p<P> on the router's bridge

The satellite itself is managed in band, over the same cable, untagged: its LOCAL port
(its own stack) reaches the router's management port hwsat<index>m on the demux bridge
(the trunk's native VLAN), where the router answers at fe80::1. That link-local link
carries only the satellite's own traffic (pairing on 443, OpenFlow over TLS, its agent):
it never reaches the router's bridge, and nothing is routed off a link-local address.

So every satellite port is a port of its own on the router's bridge, and the router's
pipeline treats it exactly like a port of the router: one device's /30, pending
isolation, anti-spoofing by port + MAC + address, DNS interception, accounting, routing
between devices (two ports of one satellite never talk except through the router). The
satellite forwards nothing between its own ports and nothing that is not tagged for one
of them, and with fail_mode=secure it never becomes an open bridge.

Which satellites are admitted comes from the [satellites] config table until pairing
(certificates made on the Guest Board) replaces it. Framework-free: unit tested without
os-ken or Open vSwitch."""
from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from . import flows as F
from .pipeline import COOKIE_SATELLITE, PRIO_SATELLITE_MANAGEMENT, PRIO_SATELLITE_PORT

MAX_SATELLITES = 15          # VLAN ids 256..4094: index (1..15) x 256 + port (1..254)
MAX_PORT = 254
VLAN_PRESENT = 0x1000        # OpenFlow 1.3 OFPVID_PRESENT: the match/set value of a tagged frame
ETH_VLAN = 0x8100
VLAN_NONE = 0x0000           # OFPVID_NONE: the match of an untagged frame
VLAN_RANGE_MASK = 0x1F00     # tagged, and one satellite's 256 VLAN ids (index x 256 + 0..255)
MANAGEMENT_ADDRESS = "fe80::1"   # the router on every satellite's management link
COOKIE_MANAGEMENT = COOKIE_SATELLITE | 0x0001_0000_0000_0000   # kind 1: the management link's flows
IFNAME = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
_PATCH = re.compile(r"^hws(\d+)p(\d+)$")     # a satellite port's patch port on the router


class SatelliteError(ValueError):
    pass


@dataclass(frozen=True)
class Satellite:
    """One admitted satellite: its datapath id, the name of its uplink port (on the
    satellite) and the router port its cable plugs into."""
    index: int               # 1..MAX_SATELLITES, its place in the config list
    dpid: int
    uplink: str
    router_port: str
    root: int = 0            # behind other satellites: the one cabled to the router (0: itself)
    found: bool = False      # its cable was found (it asked from a LAN port), not listed in the config

    @property
    def parent(self) -> tuple[int, int] | None:
        """(index, port) of the satellite whose port this one's cable plugs into (a tree:
        ROUTER_PORT names that port as the router does, hws<index>p<port>); None when it
        plugs into the router itself."""
        m = _PATCH.match(self.router_port)
        return (int(m.group(1)), int(m.group(2))) if m else None

    @property
    def demux_bridge(self) -> str:
        """The router's bridge for the cable it is behind (a tree shares its root's: every
        satellite's VLANs are its own, so one demux bridge sorts all of them)."""
        return f"hwsat{self.root or self.index}"

    def vlan(self, port_no: int) -> int:
        if not 1 <= port_no <= MAX_PORT:
            raise SatelliteError(f"satellite {self.dpid:016x}: port number {port_no} is outside 1..{MAX_PORT}")
        return self.index * 256 + port_no

    def router_ofport(self, port_no: int) -> int:
        """The patch port's OpenFlow number on the router's bridge: fixed (4096 + VLAN id),
        so it is the same after every restart and never one a router port was given
        (those count up from 1)."""
        return 4096 + self.vlan(port_no)

    @property
    def management_vlan(self) -> int:
        """The demux bridge's VLAN for the satellite's own untagged traffic (port 0: no
        device port has that number)."""
        return self.index * 256

    @property
    def management_port(self) -> str:
        """The router's internal port on the management link (its address: fe80::1)."""
        return f"hwsat{self.index}m"

    @property
    def patch_prefix(self) -> str:
        """What every patch port name of this satellite starts with (hws<index>p)."""
        return f"hws{self.index}p"

    def patch_peers(self, existing: AbstractSet[str]) -> list[str]:
        """Of a demux bridge's ports, this satellite's patch peers (hws<index>p<port>d)."""
        return sorted(p for p in existing if p.startswith(self.patch_prefix) and p.endswith("d"))

    def patch_names(self, port_no: int) -> tuple[str, str]:
        """(the port on the router's bridge, its peer on the demux bridge)."""
        return f"{self.patch_prefix}{port_no}", f"{self.patch_prefix}{port_no}d"


def parse(specs: list[str]) -> tuple[Satellite, ...]:
    """'DPID:UPLINK:ROUTER_PORT' strings (dpid in hex, 16 digits at most) to Satellites;
    SatelliteError names what is wrong."""
    out: list[Satellite] = []
    if len(specs) > MAX_SATELLITES:
        raise SatelliteError(f"at most {MAX_SATELLITES} satellites, got {len(specs)}")
    for index, spec in enumerate(specs, start=1):
        parts = spec.split(":")
        if len(parts) != 3:
            raise SatelliteError(f"{spec!r}: expected DPID:UPLINK:ROUTER_PORT")
        dpid_text, uplink, router_port = parts
        try:
            dpid = int(dpid_text, 16)
        except ValueError:
            raise SatelliteError(f"{spec!r}: the datapath id {dpid_text!r} is not hexadecimal") from None
        if not 0 < dpid < 1 << 64 or len(dpid_text) > 16:
            raise SatelliteError(f"{spec!r}: the datapath id must be 1 to 16 hex digits, not zero")
        for name in (uplink, router_port):
            if not IFNAME.match(name):
                raise SatelliteError(f"{spec!r}: {name!r} is not an interface name")
        if any(s.dpid == dpid for s in out):
            raise SatelliteError(f"{spec!r}: datapath {dpid:016x} is listed twice")
        if any(s.router_port == router_port for s in out):
            raise SatelliteError(f"{spec!r}: router port {router_port!r} already carries another satellite")
        sat = Satellite(index, dpid, uplink, router_port)
        if sat.parent is not None:
            parent_index, port_no = sat.parent
            if not 1 <= parent_index < index:
                raise SatelliteError(f"{spec!r}: {router_port!r} is a port of satellite {parent_index}, which "
                                     "must be listed before it (a tree: each satellite after its parent)")
            if not 1 <= port_no <= MAX_PORT:
                raise SatelliteError(f"{spec!r}: port number {port_no} is outside 1..{MAX_PORT}")
            parent = out[parent_index - 1]
            sat = Satellite(index, dpid, uplink, router_port, root=parent.root or parent.index)
        out.append(sat)
    return tuple(out)


def with_found(listed: tuple[Satellite, ...], found: list[tuple[int, int, str, str]]
               ) -> tuple[tuple[Satellite, ...], list[str]]:
    """The listed satellites plus those whose cable was found, each (index, dpid, uplink,
    router port) as the pairing table keeps it (pairing.py). Returns (all of them, what
    was left out and why): a found cable never takes a listed satellite's index, port or
    datapath (the config file may have changed since), and one behind another satellite
    needs that one. Found satellites are taken in index order, so a parent comes first
    whichever way they were found."""
    out, skipped = list(listed), []
    for index, dpid, uplink, router_port in sorted(found):
        sat = Satellite(index, dpid, uplink, router_port, found=True)
        problem = _found_problem(sat, out)
        if problem:
            skipped.append(f"satellite {dpid:016x} found on {router_port}: {problem}")
            continue
        parent = by_index(tuple(out), sat.parent[0]) if sat.parent else None
        out.append(Satellite(index, dpid, uplink, router_port, root=parent.root or parent.index, found=True)
                   if parent else sat)
    return tuple(out), skipped


def _found_problem(sat: Satellite, taken: list[Satellite]) -> str:
    """Why a found cable cannot join these satellites ('' if it can)."""
    if not 1 <= sat.index <= MAX_SATELLITES:
        return f"index {sat.index} is outside 1..{MAX_SATELLITES}"
    if not (IFNAME.match(sat.uplink) and IFNAME.match(sat.router_port)):
        return f"{sat.uplink!r} or {sat.router_port!r} is not an interface name"
    for s in taken:
        if sat.index == s.index or sat.dpid == s.dpid or sat.router_port == s.router_port:
            return f"it clashes with satellite {s.index} ({s.dpid:016x} on {s.router_port})"
    if sat.parent and (by_index(tuple(taken), sat.parent[0]) is None or not 1 <= sat.parent[1] <= MAX_PORT):
        return f"{sat.router_port!r} is a port of no satellite the router has"
    return ""


def free_index(sats: tuple[Satellite, ...], taken: AbstractSet[int] = frozenset()) -> int | None:
    """The lowest index no satellite (nor `taken`) has: a newly found cable's."""
    used = {s.index for s in sats} | set(taken)
    return next((i for i in range(1, MAX_SATELLITES + 1) if i not in used), None)


def device_ports(sat: Satellite, ports: dict[str, int]) -> dict[str, int]:
    """The satellite's ports that devices plug into: all but its uplink and LOCAL, and
    only numbers a VLAN id can name."""
    return {name: no for name, no in ports.items()
            if name != sat.uplink and 1 <= no <= MAX_PORT}


def flows(sat: Satellite, ports: dict[str, int],
          behind: dict[int, tuple[int, tuple[int, ...]]] | None = None,
          locked: frozenset[int] | set[int] = frozenset()) -> list:
    """The satellite's whole flow table: a FlowDelete of everything first (a reconnecting
    satellite may hold flows of an older plan), its management link (LOCAL to and from
    the uplink, untagged: the same pair it sets itself before it is paired, so its
    connection to us survives the delete), then per device port one flow up and one
    down. Anything else (frames between two of its ports, foreign tags from the uplink)
    matches nothing and is dropped by the switch. `locked`: satellites behind it whose
    cable (a port of this one) lost its link since they last connected: only their
    management link passes (cable_guard.py explains why)."""
    uplink = ports.get(sat.uplink)
    if uplink is None:
        raise SatelliteError(f"satellite {sat.dpid:016x} has no port {sat.uplink!r} (its uplink)")
    out: list = [F.FlowDelete(cookie=0, cookie_mask=0)]
    out += management_flows(uplink)
    behind = behind or {}
    for _name, port_no in sorted(device_ports(sat, ports).items(), key=lambda kv: kv[1]):
        if port_no in behind:
            child, satellites = behind[port_no]
            out += _tree_flows(port_no, uplink, child, () if child in locked else satellites)
            continue
        vid = VLAN_PRESENT | sat.vlan(port_no)
        cookie = COOKIE_SATELLITE | port_no
        out.append(F.FlowMod(match={"in_port": port_no}, priority=PRIO_SATELLITE_PORT, cookie=cookie,
                             actions=(F.PushVlan(ETH_VLAN), F.SetField("vlan_vid", vid), F.Output(uplink))))
        out.append(F.FlowMod(match={"in_port": uplink, "vlan_vid": vid}, priority=PRIO_SATELLITE_PORT, cookie=cookie,
                             actions=(F.PopVlan(), F.Output(port_no))))
    out.append(F.FlowMod(match={}, priority=0, cookie=COOKIE_SATELLITE, actions=()))
    return out


def _tree_flows(port_no: int, uplink: int, child: int, satellites: tuple[int, ...]) -> list:
    """A port that another satellite (`child`) plugs into: the VLANs of it and of every
    satellite behind it pass as they are, up and down (each satellite's VLANs are its
    own: index x 256 + port), and the child's untagged frames (its own stack) are its
    management VLAN."""
    cookie = COOKIE_SATELLITE | port_no
    mgmt = VLAN_PRESENT | child * 256
    out = [F.FlowMod(match={"in_port": port_no, "vlan_vid": VLAN_NONE}, priority=PRIO_SATELLITE_PORT, cookie=cookie,
                     actions=(F.PushVlan(ETH_VLAN), F.SetField("vlan_vid", mgmt), F.Output(uplink))),
           F.FlowMod(match={"in_port": uplink, "vlan_vid": mgmt}, priority=PRIO_SATELLITE_MANAGEMENT, cookie=cookie,
                     actions=(F.PopVlan(), F.Output(port_no)))]
    for index in satellites:
        vids = (VLAN_PRESENT | index * 256, VLAN_RANGE_MASK)
        out.append(F.FlowMod(match={"in_port": port_no, "vlan_vid": vids}, priority=PRIO_SATELLITE_PORT, cookie=cookie,
                             actions=(F.Output(uplink),)))
        out.append(F.FlowMod(match={"in_port": uplink, "vlan_vid": vids}, priority=PRIO_SATELLITE_PORT, cookie=cookie,
                             actions=(F.Output(port_no),)))
    return out


def management_flows(uplink: int) -> list:
    """The satellite's own stack (LOCAL) to the router over its uplink and back, untagged."""
    return [F.FlowMod(match={"in_port": F.LOCAL}, priority=PRIO_SATELLITE_PORT, cookie=COOKIE_MANAGEMENT,
                      actions=(F.Output(uplink),)),
            F.FlowMod(match={"in_port": uplink, "vlan_vid": VLAN_NONE}, priority=PRIO_SATELLITE_PORT,
                      cookie=COOKIE_MANAGEMENT, actions=(F.Output(F.LOCAL),))]


def management_commands(sat: Satellite, datapath_type: str) -> list[str]:
    """ovs-vsctl arguments for the satellite's demux bridge with its cable (a trunk whose
    untagged frames are the management VLAN) and the router's management port on it.
    Made at start for every listed satellite, so an unpaired one can ask to pair; the
    cable's port is picked up by Open vSwitch whenever its interface appears."""
    demux, mgmt, vlan = sat.demux_bridge, sat.management_port, sat.management_vlan
    args = _demux_bridge(demux, datapath_type)
    if sat.parent is None:      # its own cable: a trunk, whose untagged frames are its management VLAN
        args += ["--", "--may-exist", "add-port", demux, sat.router_port,
                 "--", "set", "port", sat.router_port, "vlan_mode=native-untagged", f"tag={vlan}"]
    # (behind another satellite its management VLAN arrives tagged on its root's cable: the
    # parent tags its untagged frames)
    return args + ["--", "--may-exist", "add-port", demux, mgmt,
                   "--", "set", "port", mgmt, f"tag={vlan}", "--", "set", "interface", mgmt, "type=internal"]


def cable_lock_commands(sat: Satellite) -> list[str]:
    """ovs-vsctl arguments that leave the satellite's cable its management VLAN alone (its
    carrier dropped: what is plugged in now has not shown the satellite's certificate)."""
    return ["set", "port", sat.router_port, f"trunks={sat.management_vlan}"]


def cable_unlock_commands(sat: Satellite) -> list[str]:
    """Every VLAN of the satellite on its cable again (it connected with its certificate)."""
    return ["clear", "port", sat.router_port, "trunks"] if sat.parent is None else []


def _demux_bridge(demux: str, datapath_type: str) -> list[str]:
    return ["--may-exist", "add-br", demux, "--", "set", "bridge", demux, f"datapath_type={datapath_type}",
            "fail_mode=standalone", "other-config:forward-bpdu=false"]


def by_index(sats: tuple[Satellite, ...], index: int) -> Satellite | None:
    """The listed satellite with that index (its place in the config list)."""
    return next((s for s in sats if s.index == index), None)


def subtree(sat: Satellite, sats: tuple[Satellite, ...]) -> dict[int, tuple[int, tuple[int, ...]]]:
    """The ports of `sat` that other satellites' cables plug into (a tree): port ->
    (the satellite plugged in there, it and every satellite behind it). Such a port
    carries their VLANs as they are, not a device: no patch port on the router's bridge."""
    def behind(index: int) -> tuple[int, ...]:
        out = [index]
        for s in sats:
            if s.parent is not None and s.parent[0] == index:
                out += behind(s.index)
        return tuple(out)
    return {s.parent[1]: (s.index, behind(s.index)) for s in sats if s.parent is not None and s.parent[0] == sat.index}


def management_address_commands(sat: Satellite, datapath_type: str) -> list[list[str]]:
    """The router's end of the management link, once its port exists: up, fe80::1, no
    router advertisements believed from it, no offloaded checksums on a userspace
    datapath (its tap would pass them on unfilled)."""
    dev = sat.management_port
    cmds = [["sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.accept_ra=0"],
            ["ip", "link", "set", dev, "up"],
            ["ip", "-6", "addr", "replace", f"{MANAGEMENT_ADDRESS}/64", "dev", dev, "nodad"]]
    if datapath_type == "netdev":
        cmds.append(["ethtool", "-K", dev, "tx", "off"])
    return cmds


def cable_up_command(sat: Satellite) -> list[str] | None:
    """The cable's router end held up: a port taken off the LAN bridge for a satellite has
    no one else to bring its link up (the image's LAN ports are brought up by its network
    script, the cable no longer is). None behind another satellite: its cable is a port
    of its parent."""
    return ["ip", "link", "set", sat.router_port, "up"] if sat.parent is None else None


def router_commands(sat: Satellite, ports: dict[str, int], bridge: str, datapath_type: str,
                    existing: AbstractSet[str] = frozenset(), children: frozenset[int] = frozenset()) -> list[str]:
    """One ovs-vsctl transaction (its arguments) that gives every device port of the
    satellite its patch port on the router's bridge, through the satellite's demux
    bridge: the cable's router end is a trunk there, each patch peer an access port of
    the port's VLAN. `existing`: the demux bridge's ports now; a patch pair whose
    satellite port has gone is removed (one whose port lost its link stays: PatchLinks).
    --may-exist everywhere: run again on every (re)connection and port change."""
    demux = sat.demux_bridge
    args = management_commands(sat, datapath_type)
    wanted = set()
    for _name, port_no in sorted(device_ports(sat, ports).items(), key=lambda kv: kv[1]):
        if port_no in children:
            continue
        on_router, on_demux = sat.patch_names(port_no)
        wanted.add(on_demux)
        args += ["--", "--may-exist", "add-port", bridge, on_router,
                 "--", "set", "interface", on_router, "type=patch", f"options:peer={on_demux}",
                 f"ofport_request={sat.router_ofport(port_no)}",
                 "--", "--may-exist", "add-port", demux, on_demux, f"tag={sat.vlan(port_no)}",
                 "--", "set", "interface", on_demux, "type=patch", f"options:peer={on_router}"]
    for gone in (p for p in sat.patch_peers(existing) if p not in wanted):
        args += ["--", "--if-exists", "del-port", bridge, gone[:-1], "--", "--if-exists", "del-port", demux, gone]
    return args


def unplug_commands(sat: Satellite, bridge: str, existing: set[str]) -> list[str]:
    """ovs-vsctl arguments that take a satellite's ports off the router: every patch pair
    it has (`existing`: its demux bridge's ports now). The demux bridge and its
    management link stay: a denied satellite may still ask to pair again, as a denied
    device may still ask for an address."""
    args: list[str] = []
    for peer in sat.patch_peers(existing):
        args += ["--if-exists", "del-port", bridge, peer[:-1], "--", "--if-exists", "del-port",
                 sat.demux_bridge, peer, "--"]
    return args[:-1]


def give_back_commands(sat: Satellite, bridge: str, existing: set[str]) -> list[str]:
    """ovs-vsctl arguments that give a found satellite's port back to the router's bridge
    (denied or forgotten): its patch pairs, management port and demux bridge go, and the
    cable becomes a LAN port again. Behind another satellite there is nothing to give
    back: that port is the parent's, whose next plan makes it a patch port again."""
    if sat.parent is not None:
        return unplug_commands(sat, bridge, existing)
    return ["--if-exists", "del-br", sat.demux_bridge, "--", "--may-exist", "add-port", bridge, sat.router_port]


def attachment(port_name: str) -> dict:
    """Where a device is plugged in, for its view: a router port, or a port of a satellite
    (whose patch port on the router is named hws<index>p<port>)."""
    m = _PATCH.match(port_name)
    if m:
        return {"switch": f"satellite {m.group(1)}", "satellite": int(m.group(1)), "port": m.group(2)}
    return {"switch": "router", "satellite": None, "port": port_name}


def radio_label(index: int, radio: str) -> str:
    """A satellite radio's name on the board, in hwdb and in the radio monitor: "wlan0@sat1"."""
    return f"{radio}@sat{index}"


def parse_radio_label(label: str) -> tuple[int, str] | None:
    """(satellite index, radio port name) of a radio_label(); None for the router's own radios."""
    radio, sep, sat = label.rpartition("@sat")
    return (int(sat), radio) if sep and radio and sat.isdigit() else None


class PatchLinks:
    """What the router's pipeline should believe about each satellite port's link.

    A patch port has no carrier: it is up for as long as it exists. The satellite port
    behind it does have one, and a device unplugged there (or gone from that Wi-Fi port)
    must look unplugged to the router, so that its lease may follow it to another port.
    This joins the two: the router sees a patch port up only while both the patch port
    exists and its satellite port has link. Patch ports stay in place while their link
    is down, so a cable plugged in costs no ovs-vsctl before its first frame passes."""

    def __init__(self, radio_names: tuple[str, ...] = ()):
        self.link: dict[str, bool] = {}       # patch name on the router -> satellite port has link
        self.router: dict[str, int] = {}      # patch name -> its port number on the router's bridge
        self.radio_names = set(radio_names)   # satellite port names that are radios ([satellites] radio_ports)
        self.radios: set[str] = set()         # patch names whose satellite port is a radio
        self.radio_patch: dict[tuple[int, str], str] = {}   # (satellite index, radio name) -> patch name

    def satellite_ports(self, sat: Satellite, ports: dict[str, int], down: set[str]) -> list[tuple[str, int, bool]]:
        """A satellite reported all its ports (`down`: names without link). Returns the
        (patch name, router port number, up) changes the router's pipeline must hear."""
        changes = []
        seen = set()
        for name, port_no in device_ports(sat, ports).items():
            patch = sat.patch_names(port_no)[0]
            seen.add(patch)
            if name in self.radio_names:
                self.radios.add(patch)
                self.radio_patch[(sat.index, name)] = patch
            else:
                self.radios.discard(patch)
            up = name not in down
            if self.link.get(patch) != up:
                self.link[patch] = up
                if patch in self.router:
                    changes.append((patch, self.router[patch], up))
        for patch in [p for p in self.link if p.startswith(sat.patch_prefix) and p not in seen]:
            del self.link[patch]      # the satellite port is gone; its patch port goes too
            self.radios.discard(patch)
        return changes

    def is_radio_port(self, port_no: int) -> bool:
        """Is this router port the patch port of a satellite's radio?"""
        return any(self.router.get(patch) == port_no for patch in self.radios)

    def radio_router_port(self, label: str) -> int | None:
        """The router port of a satellite radio named by radio_label(), while it is up
        (its agent reports the stations it hears under that name); None otherwise."""
        where = parse_radio_label(label)
        patch = self.radio_patch.get(where) if where else None
        if patch is None or patch not in self.radios or not self.link.get(patch, False):
            return None
        return self.router.get(patch)

    def router_port(self, name: str, port_no: int, up: bool) -> bool:
        """A port of the router's bridge changed; whether the pipeline should see it up."""
        if up:
            self.router[name] = port_no
        else:
            self.router.pop(name, None)
        return up and self.link.get(name, True)

    def bridge_ports(self, ports: dict[str, int]) -> dict[str, int]:
        """The bridge (re)connected with these ports: all of them are recorded, and the
        ones whose satellite port has no link are left out of what the pipeline sees."""
        self.router.update(ports)
        return {name: no for name, no in ports.items() if self.link.get(name, True)}
