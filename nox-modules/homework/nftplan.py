"""The nftables plan: every table, chain, hook priority and mark of the router's Linux
side, and who owns it, in one place (as pipeline.py is for OpenFlow). The owners build
their rulesets from these names and priorities; tests/unit/test_nftplan.py checks
scripts/router-net.sh's tables against the plan and fails if two owners claim a table,
or if the order the plan relies on between hooks does not follow from the priorities.

Every table is the owner's alone: an owner replaces its whole table atomically
(`table X` / `delete table X` / `table X {...}` in one `nft -f`), never touches another's,
and nobody else's rules (a distribution's own nftables.service) are changed.

    table inet homework          scripts/router-net.sh (bring-up; `down` deletes it)
      postrouting       nat    postrouting  srcnat (100)  IPv4 out of the WAN masqueraded
      wan_input         filter input        filter (0)    the WAN reaches none of the router's
                                                          services unless it answers us, or
                                                          remote_input lets it
      satellite_input   filter input        filter (0)    a satellite's management link: pairing,
                                                          OpenFlow over TLS and its agent only
      web_input         filter input        filter (0)    at most WEB_CONNS connections per LAN device
                                                          (per /64 over IPv6) to the router's web
                                                          servers; sets web_clients4, web_clients6
      wan_forward       filter forward      filter (0)    the WAN reaches the home only with an
                                                          answer, a DNAT of homework_reach, or
                                                          what reach_forward and upnp_forward let
                                                          through (and ICMPv6 RFC 4890 needs); IPv6
                                                          DNS is not routed past the rules; ULA
                                                          sources stay inside
      reach_forward     regular, filled by components/reach/plan.py: the port forwards'
                        IPv6 pinholes (a device's /64 and port)
      upnp_forward      regular, filled by miniupnpd (components/reach/upnp.py): its
                        mappings and IPv6 pinholes
      remote_input      regular, filled by components/remote/component.py: remote access's
                        WireGuard port
    table netdev homework_lan    scripts/router-net.sh guard (netdev datapath only)
      in_<port>         filter ingress      0             per LAN port: the kernel's IP stack
                                                          never sees a LAN port's frames (OVS's
                                                          packet socket has its copy already)
    table inet homework_dns      components/dns/netfilter.py (the dns component)
      captive4, captive6  sets: the cut-off devices (pending, denied, paused, bedtime, over
                        their allowance): their IPv4 addresses, their /64s
      prerouting        nat    prerouting   dstnat (-100) port 53 from the bridge to homework-dnsd;
                                                          ports 80 and 443 of the cut-off devices
                                                          to the page saying why
    table inet homework_reach    components/reach/plan.py (the reach component)
      wan4, upnp4, upnp6  sets: the router's WAN addresses; the devices that may open ports
      prerouting        nat    prerouting   dstnat (-100) from the WAN into forwards and
                                                          upnp_prerouting; from the LAN to a WAN
                                                          address into hairpin; NAT-PMP/PCP to
                                                          miniupnpd
      postrouting       nat    postrouting  srcnat (100)  a hairpinned connection leaves from the
                                                          router; upnp_postrouting
      gate              filter input        filter - 5    UPnP, NAT-PMP and PCP reach the router
                                                          only from devices allowed to open ports
      forwards, hairpin regular: the open forwards' DNAT (filled on every change)
      upnp_prerouting, upnp_postrouting  regular, miniupnpd's own (never flushed here)
    table inet homework_away     components/remote/away.py, in remote access's own network
                                 namespace (not the router's)
      forward           filter forward      mangle (-150) TCP's MSS clamped to the tunnel's MTU
    table inet homework_qos      components/qos/plan.py (the qos component, when shaping)
      postrouting       filter postrouting  mangle (-150) to up (WAN) / down (bridge) by oifname
      up, down          regular chains: ct mark set <application id>; meta priority set
                                          from the device's and the application's class maps

Order between hooks: homework_qos's postrouting (mangle, -150) runs before the masquerade
(srcnat, 100), so the classifier still sees a device's own address on the upload;
homework_reach's gate (filter - 5) runs before homework's input chains, so a refusal there
is final; homework_dns's and homework_reach's DNATs run at dstnat, before routing decides
whether the packet is for the router. Chains at the same hook and priority match disjoint
traffic, so their order does not matter: wan_input, satellite_input and web_input (other
interfaces, or only new connections to the web servers, which the others let pass);
the two prerouting DNATs (port 53 from the bridge, against the WAN and the WAN addresses);
the two srcnat chains (out of the WAN, against back into the bridge).

Marks: the connection mark (`ct mark`) belongs to qos, whose rules set it to an
application rule's id (qos_apps.id, never reused); 0 means no application. The packet
mark (`meta mark`) is unused. A new owner of marks takes its bits here first (MARKS).

Adding a table: give it a name starting with `homework_`, add it to TABLES with its
owner and chains (and to this docstring), build the ruleset from the plan's names and
`Chain.header()`, and let the owner replace it whole; a chain jumped to from the router's
table is added to ROUTER as a regular chain. `nft list ruleset` on the router shows them.
"""
from __future__ import annotations

from dataclasses import dataclass

# nftables' named priorities (nft(8), "CHAIN PRIORITIES")
PRIORITY = {"raw": -300, "mangle": -150, "dstnat": -100, "filter": 0, "security": 50, "srcnat": 100}


@dataclass(frozen=True)
class Chain:
    name: str
    type: str = ""          # filter | nat | route; "" for a regular chain (jumped to)
    hook: str = ""          # prerouting | input | forward | output | postrouting | ingress
    priority: str = ""      # a named priority (PRIORITY), "name - n", or a number
    policy: str = "accept"
    filler: str = ""        # a regular chain another owner fills (its file, or miniupnpd)

    @property
    def base(self) -> bool:
        return bool(self.hook)

    @property
    def number(self) -> int:
        name, sign, offset = self.priority.partition(" ")
        base = PRIORITY[name] if name in PRIORITY else int(name)
        if not sign:
            return base
        op, _, amount = offset.partition(" ")
        return base + int(amount) if op == "+" else base - int(amount)

    def header(self, device: str = "") -> str:
        """The base chain's declaration, as the owner's ruleset writes it."""
        where = f' device "{device}"' if device else ""
        return f"type {self.type} hook {self.hook}{where} priority {self.priority}; policy {self.policy};"


@dataclass(frozen=True)
class Table:
    family: str
    name: str
    owner: str              # the file that writes it
    chains: tuple[Chain, ...]
    sets: tuple[str, ...] = ()
    namespace: str = "the router's"     # the network namespace it lives in

    def chain(self, name: str) -> Chain:
        return next(c for c in self.chains if c.name == name)


ROUTER = Table("inet", "homework", "scripts/router-net.sh", (
    Chain("postrouting", "nat", "postrouting", "srcnat"),
    Chain("reach_forward", filler="components/reach/plan.py"),
    Chain("upnp_forward", filler="miniupnpd (components/reach/upnp.py)"),
    Chain("remote_input", filler="components/remote/component.py"),
    Chain("wan_input", "filter", "input", "filter"),
    Chain("satellite_input", "filter", "input", "filter"),
    Chain("web_input", "filter", "input", "filter"),
    Chain("wan_forward", "filter", "forward", "filter"),
), sets=("web_clients4", "web_clients6"))
# One ingress chain per LAN port (in_<port>); the port is named in the chain's hook.
LAN_GUARD = Table("netdev", "homework_lan", "scripts/router-net.sh", (
    Chain("in_<port>", "filter", "ingress", "0"),
))
DNS = Table("inet", "homework_dns", "components/dns/netfilter.py", (
    Chain("prerouting", "nat", "prerouting", "dstnat"),
), sets=("captive4", "captive6"))
QOS = Table("inet", "homework_qos", "components/qos/plan.py", (
    Chain("postrouting", "filter", "postrouting", "mangle"),
    Chain("up"), Chain("down"),
))
REACH = Table("inet", "homework_reach", "components/reach/plan.py", (
    Chain("prerouting", "nat", "prerouting", "dstnat"),
    Chain("postrouting", "nat", "postrouting", "srcnat"),
    Chain("gate", "filter", "input", "filter - 5"),
    Chain("forwards"), Chain("hairpin"),
    Chain("upnp_prerouting", filler="miniupnpd (components/reach/upnp.py)"),
    Chain("upnp_postrouting", filler="miniupnpd (components/reach/upnp.py)"),
), sets=("wan4", "upnp4", "upnp6"))
AWAY = Table("inet", "homework_away", "components/remote/away.py", (
    Chain("forward", "filter", "forward", "mangle"),
), namespace="remote access's (away)")

TABLES: tuple[Table, ...] = (ROUTER, LAN_GUARD, DNS, QOS, REACH, AWAY)

# Hooks whose order the plan relies on: (earlier, later), each (table, chain).
ORDER = (
    ((QOS, "postrouting"), (ROUTER, "postrouting")),        # classify before the masquerade
    ((REACH, "gate"), (ROUTER, "wan_input")),                # the gate's refusal is final
    ((REACH, "gate"), (ROUTER, "satellite_input")),
    ((REACH, "gate"), (ROUTER, "web_input")),
)

@dataclass(frozen=True)
class Mark:
    what: str           # "ct mark" | "meta mark"
    mask: int           # the bits the owner uses
    owner: str
    meaning: str


MARKS: tuple[Mark, ...] = (
    Mark("ct mark", 0xFFFF_FFFF, "components/qos/plan.py", "the application rule (qos_apps.id) a connection matched"),
)

