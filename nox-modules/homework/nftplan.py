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
                                                          services unless it answers us
      satellite_input   filter input        filter (0)    a satellite's management link: pairing,
                                                          OpenFlow over TLS and its agent only
      wan_forward       filter forward      filter (0)    the WAN reaches the home only with an
                                                          answer (or ICMPv6 RFC 4890 needs); IPv6
                                                          DNS is not routed past the rules; ULA
                                                          sources stay inside
    table netdev homework_lan    scripts/router-net.sh guard (netdev datapath only)
      in_<port>         filter ingress      0             per LAN port: the kernel's IP stack
                                                          never sees a LAN port's frames (OVS's
                                                          packet socket has its copy already)
    table inet homework_dns      components/dns/netfilter.py (the dns component)
      captive4          set of ipv4_addr: pending and denied devices
      prerouting        nat    prerouting   dstnat (-100) port 53 from the bridge to homework-dnsd;
                                                          port 80 of captive4 to the waiting page
    table inet homework_qos      components/qos/plan.py (the qos component, when shaping)
      postrouting       filter postrouting  mangle (-150) to up (WAN) / down (bridge) by oifname
      up, down          regular chains: ct mark set <application id>; meta priority set
                                          from the device's and the application's class maps

Order between hooks: homework_qos's postrouting (mangle, -150) runs before the masquerade
(srcnat, 100), so the classifier still sees a device's own address on the upload;
homework_dns's DNAT runs at dstnat, before routing decides the packet is for the router.
Chains at the same hook and priority (wan_input and satellite_input) match disjoint
interfaces, so their order does not matter.

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
    priority: str = ""      # a named priority (PRIORITY) or a number
    policy: str = "accept"

    @property
    def base(self) -> bool:
        return bool(self.hook)

    @property
    def number(self) -> int:
        return PRIORITY[self.priority] if self.priority in PRIORITY else int(self.priority)

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

    def chain(self, name: str) -> Chain:
        return next(c for c in self.chains if c.name == name)


ROUTER = Table("inet", "homework", "scripts/router-net.sh", (
    Chain("postrouting", "nat", "postrouting", "srcnat"),
    Chain("wan_input", "filter", "input", "filter"),
    Chain("satellite_input", "filter", "input", "filter"),
    Chain("wan_forward", "filter", "forward", "filter"),
))
# One ingress chain per LAN port (in_<port>); the port is named in the chain's hook.
LAN_GUARD = Table("netdev", "homework_lan", "scripts/router-net.sh", (
    Chain("in_<port>", "filter", "ingress", "0"),
))
DNS = Table("inet", "homework_dns", "components/dns/netfilter.py", (
    Chain("prerouting", "nat", "prerouting", "dstnat"),
), sets=("captive4",))
QOS = Table("inet", "homework_qos", "components/qos/plan.py", (
    Chain("postrouting", "filter", "postrouting", "mangle"),
    Chain("up"), Chain("down"),
))

TABLES: tuple[Table, ...] = (ROUTER, LAN_GUARD, DNS, QOS)

# Hooks whose order the plan relies on: (earlier, later), each (table, chain).
ORDER = (
    ((QOS, "postrouting"), (ROUTER, "postrouting")),    # classify before the masquerade
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

