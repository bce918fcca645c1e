"""The IPv6 flows of a device: the same decisions as flowsets.py, for its own /64.

Each function returns the v6 counterpart of the v4 function of the same name and uses
the same cookie kind, so one FlowDelete removes both families of a device at once. The
device is alone in its /64 (Router Advertisements say "not on-link"), so everything it
sends goes to the router, and the switch routes it like IPv4: MAC rewrite, hop limit
decrement, never bridged.
"""
from __future__ import annotations

import ipaddress

from ...flows import (CONTROLLER, ETH_IPV6, LOCAL, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP, DecTTL, FlowMod, Learn,
                      MeterMod, Output, Resubmit, SetField)
from ...ipv6plan import ROUTER_LINK_LOCAL
from ...leases import Lease
from ... import pipeline as L
from .flowsets import gateway_service_flows, gateway_table_flows, pair_learn

ICMPV6_RS, ICMPV6_RA, ICMPV6_NS, ICMPV6_NA = 133, 134, 135, 136
IPV6_MULTICAST_MAC = ("33:33:00:00:00:00", "ff:ff:00:00:00:00")     # 33:33:xx:xx:xx:xx
FULL = "ffff:ffff:ffff:ffff::"                 # a /64 mask
LINK_LOCAL = ("fe80::", "ffc0::")              # fe80::/10
MULTICAST6 = ("ff00::", "ff00::")              # ff00::/8
MLD_REPORTS = (131, 132, 143)                  # MLDv1 report and done, MLDv2 report
ROUTER_LL = str(ROUTER_LINK_LOCAL)


def _net(prefix: ipaddress.IPv6Network) -> tuple[str, str]:
    return (str(prefix.network_address), FULL)


def nd_flows(d: Lease, prefix: ipaddress.IPv6Network) -> list[FlowMod]:
    """Neighbour discovery with the router only, as arp_flows: Router Solicitations to the
    controller (it answers with the device's own prefix), Neighbour Solicitations and
    Advertisements for the router's two addresses to the router's stack, and the router's
    link-local answers back. A device's own RAs (rogue router) and NS/NA for anyone else
    meet the table miss."""
    c = L.routing_cookie(L.KIND_ARP, d.index)
    me = {"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_IPV6, "ip_proto": PROTO_ICMPV6}
    router = str(prefix.network_address + 1)
    # What comes to the controller passes the device's punt meter (punt_meter).
    punt = L.punt_meter_id(d.index)
    flows = [FlowMod(match={**me, "icmpv6_type": ICMPV6_RS}, actions=(Output(CONTROLLER, 256),),
                     priority=L.PRIO_ND, cookie=c, meter=punt),
             # stateless DHCPv6 (INFORMATION-REQUEST): the controller answers the DNS server
             FlowMod(match={"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_IPV6, "ip_proto": PROTO_UDP,
                            "udp_dst": 547}, actions=(Output(CONTROLLER, 512),), priority=L.PRIO_ND, cookie=c,
                     meter=punt)]
    for target in (ROUTER_LL, router):
        flows.append(FlowMod(match={**me, "icmpv6_type": ICMPV6_NS, "ipv6_nd_target": target},
                             actions=(Output(LOCAL),), priority=L.PRIO_ND, cookie=c))
    # Its answers to the router's reachability probes.
    flows.append(FlowMod(match={**me, "icmpv6_type": ICMPV6_NA, "ipv6_dst": ROUTER_LL},
                         actions=(Output(LOCAL),), priority=L.PRIO_ND, cookie=c))
    # What the router's stack sends from its link-local address (NA, probes) to this device.
    flows.append(FlowMod(match={"in_port": LOCAL, "eth_dst": d.mac, "eth_type": ETH_IPV6, "ipv6_src": ROUTER_LL},
                         actions=(Output(d.port),), priority=L.PRIO_ND, cookie=c))
    return flows


def mld_flows(d: Lease) -> list[FlowMod]:
    """A permitted device's MLD reports to the controller (multicast.py keeps the
    memberships of permitted devices only), above ND, through its punt meter. With the
    forward flows' cookie kind, so a deny takes them with those: a pending device's
    reports are no one's business, and a crowd of pending devices costs three flows less
    each."""
    me = {"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_IPV6, "ip_proto": PROTO_ICMPV6}
    return [FlowMod(match={**me, "icmpv6_type": t}, actions=(Output(CONTROLLER),), priority=L.PRIO_IGMP,
                    cookie=L.routing_cookie(L.KIND_FORWARD, d.index), meter=L.punt_meter_id(d.index))
            for t in MLD_REPORTS]


def gateway_flows(d: Lease, prefix: ipaddress.IPv6Network) -> list[FlowMod]:
    """Pending or denied: DNS, the page (80, 443) and ICMPv6 with the router's ::1 of its
    own /64."""
    router = str(prefix.network_address + 1)
    out = {"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_IPV6, "ipv6_src": _net(prefix),
           "ipv6_dst": router}
    back = {"in_port": LOCAL, "eth_type": ETH_IPV6, "ipv6_src": router, "ipv6_dst": _net(prefix)}
    return gateway_service_flows(d, out, back, ("ipv6_src",))


def forward_flows(d: Lease, prefix: ipaddress.IPv6Network, router_mac: str) -> list[FlowMod]:
    """Permitted: the anti-spoofed entry (port + MAC + a source inside its own /64: its
    privacy addresses too), the way back from the router's stack, and this /64 as a
    destination of other devices (routed), its ::1 being the router."""
    c = L.routing_cookie(L.KIND_FORWARD, d.index)
    net = _net(prefix)
    return [
        FlowMod(match={"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_IPV6, "ipv6_src": net},
                actions=(Resubmit(L.TABLE_ACCOUNT), Resubmit(L.TABLE_FORWARD)),
                priority=L.PRIO_DEVICE, cookie=c),
        FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IPV6, "ipv6_dst": net},
                actions=(Resubmit(L.TABLE_ACCOUNT), Output(d.port)), priority=L.PRIO_DEVICE, cookie=c),
        FlowMod(match={"eth_type": ETH_IPV6, "ipv6_dst": net},
                actions=(SetField("eth_src", router_mac), SetField("eth_dst", d.mac), DecTTL(), Output(d.port)),
                priority=L.PRIO_TO_DEVICE, table_id=L.TABLE_FORWARD, cookie=c),
        FlowMod(match={"eth_type": ETH_IPV6, "ipv6_dst": str(prefix.network_address + 1)},
                actions=(Output(LOCAL),), priority=L.PRIO_TO_ROUTER6, table_id=L.TABLE_FORWARD, cookie=c),
        # Multicast from its link-local address (mDNS over IPv6 is sent so): to the groups'
        # members in table 20, never upstream.
        FlowMod(match={"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_IPV6, "ipv6_src": LINK_LOCAL,
                       "ipv6_dst": MULTICAST6},
                actions=(Resubmit(L.TABLE_FORWARD),), priority=L.PRIO_DEVICE, cookie=c),
    ]


def _learn(d: Lease, proto: int | None, ports: str | None, idle: int) -> Learn:
    # The protocol is a literal when ports are copied: OVS refuses a learned TCP port
    # match whose protocol it cannot see (OFPBAC_MATCH_INCONSISTENT).
    fields = [("eth_type", ETH_IPV6), ("ip_proto", proto), ("ipv6_src", None), ("ipv6_dst", None)]
    if ports:
        fields += [(f"{ports}_src", None), (f"{ports}_dst", None)]
    return Learn(table_id=L.TABLE_ACCOUNT, fields=tuple(fields), priority=L.PRIO_LEARNED,
                 idle_timeout=idle, fin_idle_timeout=2 if ports == "tcp" else 0,
                 cookie=L.routing_cookie(L.KIND_LEARNED, d.index), send_flow_removed=True)


def account_flows(d: Lease, prefix: ipaddress.IPv6Network, idle: int,
                  site: ipaddress.IPv6Network | None = None) -> list[FlowMod]:
    """Per-flow accounting as for IPv4 (flowsets.account_flows says why TCP learns from
    SYN, and why with `site` the internet's flows are counted per host and read per flow
    from conntrack while the household's own are learned per pair)."""
    c = L.routing_cookie(L.KIND_ACCOUNT, d.index)
    net = _net(prefix)
    flows = []
    for outbound in (True, False):
        side = {"in_port": d.port, "ipv6_src": net} if outbound else {"in_port": LOCAL, "ipv6_dst": net}
        if site is not None:
            inside = {**side, ("ipv6_dst" if outbound else "ipv6_src"): (str(site.network_address), str(site.netmask))}
            flows += [FlowMod(match={"eth_type": ETH_IPV6, **side}, actions=(),
                              priority=L.PRIO_ACCOUNT_HOST, table_id=L.TABLE_ACCOUNT, cookie=c),
                      FlowMod(match={"eth_type": ETH_IPV6, **inside}, actions=(pair_learn(d, ETH_IPV6, idle),),
                              priority=L.PRIO_ACCOUNT, table_id=L.TABLE_ACCOUNT, cookie=c)]
            continue
        flows.append(FlowMod(match={"eth_type": ETH_IPV6, "ip_proto": PROTO_TCP, "tcp_flags_nxm": (0x002, 0x002),
                                    **side},
                             actions=(_learn(d, PROTO_TCP, "tcp", idle),),
                             priority=L.PRIO_ACCOUNT_SYN, table_id=L.TABLE_ACCOUNT, cookie=c))
        for proto, ports in ((PROTO_TCP, "tcp"), (PROTO_UDP, "udp")):
            flows.append(FlowMod(match={"eth_type": ETH_IPV6, "ip_proto": proto, **side},
                                 actions=(_learn(d, proto, ports, idle),),
                                 priority=L.PRIO_ACCOUNT, table_id=L.TABLE_ACCOUNT, cookie=c))
        flows.append(FlowMod(match={"eth_type": ETH_IPV6, **side}, actions=(_learn(d, None, None, idle),),
                             priority=L.PRIO_ACCOUNT_OTHER, table_id=L.TABLE_ACCOUNT, cookie=c))
    return flows


def per_host_flows(d: Lease, prefix: ipaddress.IPv6Network) -> list[FlowMod]:
    c = L.routing_cookie(L.KIND_ACCOUNT, d.index)
    net = _net(prefix)
    return [FlowMod(match={"eth_type": ETH_IPV6, "in_port": d.port, "ipv6_src": net}, actions=(),
                    priority=L.PRIO_ACCOUNT, table_id=L.TABLE_ACCOUNT, cookie=c),
            FlowMod(match={"eth_type": ETH_IPV6, "in_port": LOCAL, "ipv6_dst": net}, actions=(),
                    priority=L.PRIO_ACCOUNT, table_id=L.TABLE_ACCOUNT, cookie=c)]


def solicitation_flow(ports: list[int]) -> FlowMod:
    """The router's own Neighbour Solicitations (from fe80::1, to a solicited-node group)
    reach every permitted device: the one whose address it is answers (its NA to fe80::1
    is nd_flows'). The router needs it to answer a device's link-local address, e.g.
    SSDP discovery over IPv6 (UPnP IGDv2), which is sent from one."""
    return FlowMod(match={"in_port": LOCAL, "eth_dst": IPV6_MULTICAST_MAC, "eth_type": ETH_IPV6,
                          "ip_proto": PROTO_ICMPV6, "icmpv6_type": ICMPV6_NS, "ipv6_src": ROUTER_LL},
                   actions=tuple(Output(p) for p in sorted(set(ports))), priority=L.PRIO_ND,
                   cookie=L.routing_cookie(L.KIND_SHARED))


def base_flows(site: ipaddress.IPv6Network, https: bool = False) -> list[FlowMod]:
    """Shared: the gateway services of pending devices over IPv6 (table 5); the household's
    site prefix is closed except for the /64s of permitted devices (their own entries are
    above), the rest of IPv6 goes to the router's stack."""
    shared = L.routing_cookie(L.KIND_SHARED)
    site_match = (str(site.network_address), str(site.netmask))
    return [
        *gateway_table_flows(ETH_IPV6, PROTO_ICMPV6, https),
        # Hop limit 1 towards a device dies here: the controller answers time exceeded
        # (the router's ::1 addresses, above, take theirs).
        FlowMod(match={"eth_type": ETH_IPV6, "nw_ttl": 1, "ipv6_dst": site_match},
                actions=(Output(CONTROLLER, 256),), priority=L.PRIO_TTL_EXPIRED, table_id=L.TABLE_FORWARD,
                cookie=L.routing_cookie(L.KIND_TTL)),
        FlowMod(match={"eth_type": ETH_IPV6, "ipv6_dst": site_match},
                actions=(), priority=L.PRIO_POOL_DROP, table_id=L.TABLE_FORWARD, cookie=shared),
        # multicast groups nobody joined: dropped (joined ones: flowsets.multicast_flow)
        FlowMod(match={"eth_type": ETH_IPV6, "ipv6_dst": MULTICAST6}, actions=(),
                priority=L.PRIO_MCAST_OTHER, table_id=L.TABLE_FORWARD, cookie=shared),
        FlowMod(match={"eth_type": ETH_IPV6}, actions=(Output(LOCAL),), priority=L.PRIO_UPSTREAM,
                table_id=L.TABLE_FORWARD, cookie=shared),
    ]


PUNT_RATE_PPS = 20      # a device's RS, DHCPv6 and MLD together: far above what a host sends
PUNT_BURST = 40


def punt_meter(d: Lease) -> list:
    """The device's punt meter, made anew (an earlier run's is deleted first: adding an
    existing meter is an error, and the delete takes that run's flows with it)."""
    m = L.punt_meter_id(d.index)
    return [MeterMod(m, "delete"), MeterMod(m, "add", rate_pps=PUNT_RATE_PPS, burst_kbits=PUNT_BURST)]


def no_punt_meter(d: Lease) -> MeterMod:
    return MeterMod(L.punt_meter_id(d.index), "delete")
