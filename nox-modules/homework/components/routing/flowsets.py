"""The flows routing installs, as pure functions of a device's lease and decision.

Nothing here talks to the switch or keeps state: the component decides *when*, these
say *what*, and unit tests check them against a fake flow table.
"""
from __future__ import annotations

import ipaddress

from ...flows import (CONTROLLER, ETH_ARP, ETH_IP, ETH_IPV6, LOCAL, PROTO_ICMP, PROTO_IGMP, PROTO_TCP,
                      PROTO_UDP, DecTTL, FlowMod, Learn, Output, OutputReg, Resubmit, SetField)
from ...leases import Lease
from ... import pipeline as L

BROADCAST_MAC = "ff:ff:ff:ff:ff:ff"
ALL_ONES = "255.255.255.255"
MULTICAST = ("224.0.0.0", "240.0.0.0")
# What a cut-off device may still send to its own gateway: DNS (the DNS component steers
# it; over TLS too, port 853), the page saying why it is cut off on port 80, and ping; and
# port 443 (HTTPS: the captive portal API of RFC 8908 and any https:// address it tries)
# where the DNS component sends it to the captive pages' server (CAPTIVE_HTTPS), never to
# the board.
GATEWAY_SERVICES = ((PROTO_UDP, "udp", 53), (PROTO_TCP, "tcp", 53), (PROTO_TCP, "tcp", 853), (PROTO_TCP, "tcp", 80))
CAPTIVE_HTTPS = (PROTO_TCP, "tcp", 443)


# -- table 0: ARP and gateway access --------------------------------------------------------
def arp_flows(d: Lease) -> list[FlowMod]:
    """The device may ask for (and answer to) its gateway only, with its own address:
    no ARP between devices, gratuitous or spoofed ARP is dropped by the table miss."""
    c = L.routing_cookie(L.KIND_ARP, d.index)
    return [
        FlowMod(match={"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_ARP, "arp_spa": d.ip,
                       "arp_tpa": d.router},
                actions=(Output(LOCAL),), priority=L.PRIO_GATEWAY, cookie=c),
        FlowMod(match={"in_port": LOCAL, "eth_type": ETH_ARP, "arp_tpa": d.ip},
                actions=(Output(d.port),), priority=L.PRIO_GATEWAY, cookie=c),
    ]


def gateway_flows(d: Lease) -> list[FlowMod]:
    """Pending or denied: DNS, the page saying why (ports 80 and 443, which the router
    steers to its captive server: the Guest Board and the API stay out of reach) and ICMP
    with the own .1 and nothing else; and DNS answers from any address (a query the
    device sent to an outside resolver is answered by dnsd, "from" that resolver)."""
    out = {"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_IP, "ipv4_src": d.ip, "ipv4_dst": d.router}
    back = {"in_port": LOCAL, "eth_type": ETH_IP, "ipv4_src": d.router, "ipv4_dst": d.ip}
    return gateway_service_flows(d, out, back, ("ipv4_src",))


def gateway_service_flows(d: Lease, out: dict, back: dict, source: tuple[str, ...]) -> list[FlowMod]:
    """A device and its router address, for either family: `out` (the device's packets
    to it) and `back` (the router's stack's packets from it, with the device's port in
    a register) go on to the shared gateway table, which lets through only the services
    and their answers; what the stack sends it from elsewhere (`back` without its
    `source` fields) goes there marked, where only a DNS answer passes. Three flows a
    device instead of one per service and direction: fewer flows for a home full of
    pending devices, and the list of services in one place (flowsets6.gateway_flows gives
    the IPv6 matches)."""
    c = L.routing_cookie(L.KIND_GATEWAY, d.index)
    elsewhere = {k: v for k, v in back.items() if k not in source}
    return [FlowMod(match=out, actions=(Resubmit(L.TABLE_GATEWAY),), priority=L.PRIO_GATEWAY, cookie=c),
            FlowMod(match=back, actions=(SetField(L.REG_GATEWAY_PORT, d.port), Resubmit(L.TABLE_GATEWAY)),
                    priority=L.PRIO_GATEWAY, cookie=c),
            FlowMod(match=elsewhere,
                    actions=(SetField(L.REG_GATEWAY_PORT, d.port | L.GATEWAY_ELSEWHERE), Resubmit(L.TABLE_GATEWAY)),
                    priority=L.PRIO_GATEWAY_ELSEWHERE, cookie=c)]


def gateway_table_flows(eth_type: int = ETH_IP, icmp: int = PROTO_ICMP, https: bool = False) -> list[FlowMod]:
    """Table 5, shared, for one family: a device's ICMP (ICMPv6: the router's neighbour
    discovery sits above, in table 0) or GATEWAY_SERVICES packet to its gateway address
    reaches the router's stack, and the stack's answers from them reach the device's
    port; a DNS answer from any address too (dnsd answered a query to an outside
    resolver). The rest meets table 5's drops (gateway_table_drops)."""
    shared = L.routing_cookie(L.KIND_SHARED)
    answer = (OutputReg(L.REG_GATEWAY_PORT, 16),)

    def flow(match: dict, actions: tuple, priority: int) -> FlowMod:
        return FlowMod(match={"eth_type": eth_type, **match}, actions=actions, priority=priority,
                       table_id=L.TABLE_GATEWAY, cookie=shared)
    from_gateway = {L.REG_GATEWAY_PORT: (0, L.GATEWAY_ELSEWHERE)}     # not marked: from its gateway address
    flows = [flow({"ip_proto": icmp}, (Output(LOCAL),), L.PRIO_GATEWAY_SERVICE),
             flow({"in_port": LOCAL, "ip_proto": icmp, **from_gateway}, answer, L.PRIO_GATEWAY_ANSWER)]
    for proto, name, port in GATEWAY_SERVICES + ((CAPTIVE_HTTPS,) if https else ()):
        flows.append(flow({"ip_proto": proto, f"{name}_dst": port}, (Output(LOCAL),), L.PRIO_GATEWAY_SERVICE))
        flows.append(flow({"in_port": LOCAL, "ip_proto": proto, f"{name}_src": port,
                           **({} if port == 53 else from_gateway)}, answer, L.PRIO_GATEWAY_ANSWER))
    return flows


def gateway_table_drops() -> list[FlowMod]:
    """Table 5's floor: whatever else the router's stack sends from a pending device's
    gateway address (so a device's service port never lets it through by its
    destination port), and whatever else a device sends to it."""
    shared = L.routing_cookie(L.KIND_SHARED)
    return [FlowMod(match={"in_port": LOCAL}, actions=(), priority=L.PRIO_GATEWAY_FROM_ROUTER,
                    table_id=L.TABLE_GATEWAY, cookie=shared),
            FlowMod(match={}, actions=(), priority=0, table_id=L.TABLE_GATEWAY, cookie=shared)]


# -- permitted: entry points, accounting, destination ------------------------------------------
def forward_flows(d: Lease, router_mac: str) -> list[FlowMod]:
    """Anti-spoofing entry (port + MAC + leased IP must all match) that counts the packet
    in the accounting table and forwards it by destination; the way back from the
    router's stack; and this device as a destination of other devices (routed: source
    MAC = router, TTL decremented, never bridged)."""
    c = L.routing_cookie(L.KIND_FORWARD, d.index)
    return [
        FlowMod(match={"in_port": d.port, "eth_src": d.mac, "eth_type": ETH_IP, "ipv4_src": d.ip},
                actions=(Resubmit(L.TABLE_ACCOUNT), Resubmit(L.TABLE_FORWARD)),
                priority=L.PRIO_DEVICE, cookie=c),
        FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IP, "ipv4_dst": d.ip},
                actions=(Resubmit(L.TABLE_ACCOUNT), Output(d.port)), priority=L.PRIO_DEVICE, cookie=c),
        FlowMod(match={"eth_type": ETH_IP, "ipv4_dst": d.ip},
                actions=(SetField("eth_src", router_mac), SetField("eth_dst", d.mac), DecTTL(),
                         Output(d.port)),
                priority=L.PRIO_TO_DEVICE, table_id=L.TABLE_FORWARD, cookie=c),
        # Its own gateway (any port: a permitted device may use every router service).
        FlowMod(match={"eth_type": ETH_IP, "ipv4_dst": d.router}, actions=(Output(LOCAL),),
                priority=L.PRIO_TO_DEVICE, table_id=L.TABLE_FORWARD, cookie=c),
        # Its subnet-directed broadcast goes to every permitted device as 255.255.255.255
        # (hosts drop broadcasts of other subnets, seed §4.4.3).
        FlowMod(match={"eth_type": ETH_IP, "ipv4_src": d.ip, "ipv4_dst": d.broadcast},
                actions=(SetField("ipv4_dst", ALL_ONES), SetField("eth_dst", BROADCAST_MAC),
                         Resubmit(L.TABLE_FORWARD)),
                priority=L.PRIO_TO_DEVICE, table_id=L.TABLE_FORWARD, cookie=c),
    ]


def _learn(d: Lease, proto: int | None, ports: str | None, idle: int) -> Learn:
    fields: list[tuple[str, int | None]] = [("eth_type", ETH_IP)]
    fields.append(("ip_proto", proto) if proto is not None else ("ip_proto", None))
    fields += [("ipv4_src", None), ("ipv4_dst", None)]
    if ports:
        fields += [(f"{ports}_src", None), (f"{ports}_dst", None)]
    return Learn(table_id=L.TABLE_ACCOUNT, fields=tuple(fields), priority=L.PRIO_LEARNED,
                 idle_timeout=idle, fin_idle_timeout=2 if ports == "tcp" else 0,
                 cookie=L.routing_cookie(L.KIND_LEARNED, d.index), send_flow_removed=True)


def pair_learn(d: Lease, eth_type: int, idle: int) -> Learn:
    """The learned entry of a pair within the household: protocol, source and destination
    address, no ports (so the switch's flow cache covers every connection of the pair);
    idle timeout and flow-removed as for a flow."""
    src, dst = ("ipv4_src", "ipv4_dst") if eth_type == ETH_IP else ("ipv6_src", "ipv6_dst")
    return Learn(table_id=L.TABLE_ACCOUNT, fields=(("eth_type", eth_type), ("ip_proto", None), (src, None),
                                                   (dst, None)),
                 priority=L.PRIO_LEARNED, idle_timeout=idle, cookie=L.routing_cookie(L.KIND_LEARNED, d.index),
                 send_flow_removed=True)


def account_flows(d: Lease, idle: int, lan: ipaddress.IPv4Network | None = None) -> list[FlowMod]:
    """Per-flow accounting: the first packet of each flow, either way, makes the switch
    learn an exact-match entry (idle timeout, flow-removed to us) with the device's
    cookie. (No learn `limit`: Open vSwitch counts a cookie's flows by scanning the whole
    table on every learn, which cost 40 % of the new-connection rate; the component
    polls each device's count instead.)

    With `lan` (the pool), the internet's flows, NATed, are counted by one per-host entry
    each way and recorded per flow from conntrack (conntrack.py says why), so a new
    connection to the internet changes no table. Flows whose other end is in the pool
    (another device, the router's own addresses) are counted per pair: the switch learns
    one entry per protocol, source and destination (pair_learn), so a new connection
    between two devices that talked before changes no table either and costs what it
    costs under NORMAL (a learned entry per connection held device-to-device connections
    at a quarter of NORMAL's rate: each one changed the table, and the switch revalidated
    its whole flow cache)."""
    c = L.routing_cookie(L.KIND_ACCOUNT, d.index)
    flows = []
    for outbound in (True, False):
        # Each side names its in_port, so the two never overlap (a packet the router's own
        # stack sends with a device's source address is not counted as that device's upload).
        side = {"in_port": d.port, "ipv4_src": d.ip} if outbound else {"in_port": LOCAL, "ipv4_dst": d.ip}
        if lan is not None:
            inside = {**side, ("ipv4_dst" if outbound else "ipv4_src"): (str(lan.network_address), str(lan.netmask))}
            flows += [FlowMod(match={"eth_type": ETH_IP, **side}, actions=(),
                              priority=L.PRIO_ACCOUNT_HOST, table_id=L.TABLE_ACCOUNT, cookie=c),
                      FlowMod(match={"eth_type": ETH_IP, **inside}, actions=(pair_learn(d, ETH_IP, idle),),
                              priority=L.PRIO_ACCOUNT, table_id=L.TABLE_ACCOUNT, cookie=c)]
            continue
        # A TCP flow is learned from its SYN (or SYN-ACK) in an entry of its own: the
        # switch caches the first translation per packet header, and packets that share
        # it keep being counted on the learning entry, not on the learned one, until the
        # switch revalidates. Matching the SYN flag keeps that cache entry to the SYN.
        flows.append(FlowMod(match={"eth_type": ETH_IP, "ip_proto": PROTO_TCP, "tcp_flags_nxm": (0x002, 0x002),
                                    **side},
                             actions=(_learn(d, PROTO_TCP, "tcp", idle),),
                             priority=L.PRIO_ACCOUNT_SYN, table_id=L.TABLE_ACCOUNT, cookie=c))
        for proto, ports in ((PROTO_TCP, "tcp"), (PROTO_UDP, "udp")):
            flows.append(FlowMod(match={"eth_type": ETH_IP, "ip_proto": proto, **side},
                                 actions=(_learn(d, proto, ports, idle),),
                                 priority=L.PRIO_ACCOUNT, table_id=L.TABLE_ACCOUNT, cookie=c))
        flows.append(FlowMod(match={"eth_type": ETH_IP, **side},
                             actions=(_learn(d, None, None, idle),),
                             priority=L.PRIO_ACCOUNT_OTHER, table_id=L.TABLE_ACCOUNT, cookie=c))
    return flows


def per_host_flows(d: Lease) -> list[FlowMod]:
    """Flow protection (seed §4.4.4): one counting entry per direction instead of one per
    flow. Same cookie kind as account_flows, so it replaces them."""
    c = L.routing_cookie(L.KIND_ACCOUNT, d.index)
    return [FlowMod(match={"eth_type": ETH_IP, "in_port": d.port, "ipv4_src": d.ip}, actions=(),
                    priority=L.PRIO_ACCOUNT, table_id=L.TABLE_ACCOUNT, cookie=c),
            FlowMod(match={"eth_type": ETH_IP, "in_port": LOCAL, "ipv4_dst": d.ip}, actions=(),
                    priority=L.PRIO_ACCOUNT, table_id=L.TABLE_ACCOUNT, cookie=c)]


# -- shared ------------------------------------------------------------------------------------
def base_flows(pool: ipaddress.IPv4Network, https: bool = False) -> list[FlowMod]:
    """Installed when the switch connects: default drop everywhere, the gateway
    services of pending devices (table 5), IGMP to us, TTL-1
    towards devices to us, unjoined multicast dropped, the pool closed, the rest upstream."""
    shared = L.routing_cookie(L.KIND_SHARED)
    return [
        FlowMod(match={}, actions=(), priority=L.PRIO_DROP, cookie=shared),
        FlowMod(match={}, actions=(), priority=0, table_id=L.TABLE_ACCOUNT, cookie=shared),
        FlowMod(match={}, actions=(), priority=0, table_id=L.TABLE_FORWARD, cookie=shared),
        *gateway_table_drops(),
        *gateway_table_flows(https=https),
        FlowMod(match={"eth_type": ETH_IP, "ip_proto": PROTO_IGMP}, actions=(Output(CONTROLLER),),
                priority=L.PRIO_IGMP, cookie=shared),
        # Open vSwitch does not send dec_ttl's invalid-TTL packet-ins to an OpenFlow 1.3
        # controller, so TTL 1 towards a device (x.x.x.2 of any /30) is matched here.
        FlowMod(match={"eth_type": ETH_IP, "nw_ttl": 1,
                       "ipv4_dst": (str(pool.network_address + 2), str(ipaddress.IPv4Address(int(pool.netmask) | 3)))},
                actions=(Output(CONTROLLER, 128),), priority=L.PRIO_TTL_EXPIRED, table_id=L.TABLE_FORWARD,
                cookie=L.routing_cookie(L.KIND_TTL)),
        FlowMod(match={"eth_type": ETH_IP, "ipv4_dst": MULTICAST}, actions=(),
                priority=L.PRIO_MCAST_OTHER, table_id=L.TABLE_FORWARD, cookie=shared),
        FlowMod(match={"eth_type": ETH_IP, "ipv4_dst": (str(pool.network_address), str(pool.netmask))},
                actions=(), priority=L.PRIO_POOL_DROP, table_id=L.TABLE_FORWARD, cookie=shared),
        FlowMod(match={"eth_type": ETH_IP}, actions=(Output(LOCAL),), priority=L.PRIO_UPSTREAM,
                table_id=L.TABLE_FORWARD, cookie=shared),
    ]


def broadcast_flow(ports: list[int]) -> FlowMod:
    """255.255.255.255 from a permitted device reaches every permitted device (OpenFlow
    never sends a packet back out of the port it came in on)."""
    return FlowMod(match={"eth_type": ETH_IP, "ipv4_dst": ALL_ONES},
                   actions=tuple(Output(p) for p in sorted(set(ports))), priority=L.PRIO_BROADCAST,
                   table_id=L.TABLE_FORWARD, cookie=L.routing_cookie(L.KIND_SHARED))


def announcement_flow(group: str) -> FlowMod:
    """Any device's UDP to `group` (mDNS, SSDP) that no flow of its own takes (a pending,
    denied or unknown device's) reaches the router's stack and nothing else: what the
    device announces says what it is (components/identify). A permitted device's own
    flows, above, send its multicast on to the group's members as before. An IPv6 group
    (mDNS's ff02::fb) likewise."""
    match = ({"eth_type": ETH_IPV6, "ip_proto": PROTO_UDP, "ipv6_dst": group} if ":" in group
             else {"eth_type": ETH_IP, "ip_proto": PROTO_UDP, "ipv4_dst": group})
    return FlowMod(match=match, actions=(Output(LOCAL),),
                   priority=L.PRIO_ANNOUNCEMENT, cookie=L.routing_cookie(L.KIND_SHARED))


def multicast_flow(group: str, ports: list[int]) -> FlowMod:
    """A joined group's members (an IPv4 group, or an IPv6 one learned by MLD)."""
    match = {"eth_type": ETH_IPV6, "ipv6_dst": group} if ":" in group else {"eth_type": ETH_IP, "ipv4_dst": group}
    return FlowMod(match=match,
                   actions=tuple(Output(p) for p in sorted(set(ports))), priority=L.PRIO_MCAST_GROUP,
                   table_id=L.TABLE_FORWARD, cookie=L.routing_cookie(L.KIND_MCAST))
