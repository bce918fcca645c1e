"""Table-0 flows of a device over its usage limit with action block: it keeps DNS, HTTP
and ICMP with its own gateway (as a pending device does, routing/flowsets.gateway_flows)
and loses everything else, both ways, until the next period or a household member lifts
it. DHCP (60000) and DNS interception (50000) sit above this band and keep working."""
from __future__ import annotations

from ...flows import ETH_IP, ETH_IPV6, LOCAL, PROTO_ICMP, PROTO_TCP, PROTO_UDP, FlowDelete, FlowMod, Output
from ...pipeline import (COOKIE_MASK_ALL, COOKIE_MASK_OWNER, COOKIE_USAGE, PRIO_USAGE_BLOCK, PRIO_USAGE_GATEWAY)

MASK_KIND = 0x00FF_0000_0000_0000      # block flows have kind 0 (slowflows.py: kind 1)

SERVICES = ((PROTO_UDP, "udp", 53), (PROTO_TCP, "tcp", 53), (PROTO_TCP, "tcp", 80))


def cookie(index: int) -> int:
    return COOKIE_USAGE | (index + 1)


def block_flows(lease, prefix6=None) -> list[FlowMod]:
    """`prefix6`: the device's IPv6 /64 (IPv6 on), which loses everything too."""
    c = cookie(lease.index)
    out = {"in_port": lease.port, "eth_src": lease.mac, "eth_type": ETH_IP, "ipv4_src": lease.ip,
           "ipv4_dst": lease.router}
    flows = [FlowMod(match={**out, "ip_proto": PROTO_ICMP}, actions=(Output(LOCAL),),
                     priority=PRIO_USAGE_GATEWAY, cookie=c)]
    for proto, name, port in SERVICES:
        flows.append(FlowMod(match={**out, "ip_proto": proto, f"{name}_dst": port}, actions=(Output(LOCAL),),
                             priority=PRIO_USAGE_GATEWAY, cookie=c))
    # the router's own answers (source = the device's gateway) still reach it
    flows.append(FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IP, "ipv4_src": lease.router,
                                "ipv4_dst": lease.ip}, actions=(Output(lease.port),),
                         priority=PRIO_USAGE_GATEWAY, cookie=c))
    flows.append(FlowMod(match={"in_port": lease.port, "eth_src": lease.mac, "eth_type": ETH_IP},
                         priority=PRIO_USAGE_BLOCK, cookie=c))
    flows.append(FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IP, "ipv4_dst": lease.ip},
                         priority=PRIO_USAGE_BLOCK, cookie=c))
    if prefix6 is not None:
        flows.append(FlowMod(match={"in_port": lease.port, "eth_src": lease.mac, "eth_type": ETH_IPV6},
                             priority=PRIO_USAGE_BLOCK, cookie=c))
        flows.append(FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IPV6,
                                    "ipv6_dst": (str(prefix6.network_address), str(prefix6.netmask))},
                             priority=PRIO_USAGE_BLOCK, cookie=c))
    return flows


def unblock(index: int) -> FlowDelete:
    return FlowDelete(cookie=cookie(index), cookie_mask=COOKIE_MASK_ALL)


def forget_all() -> FlowDelete:
    """Every block flow an earlier run left on the switch (a restarted controller
    reinstalls the ones still due; a block that ended meanwhile must not stay)."""
    return FlowDelete(cookie=COOKIE_USAGE, cookie_mask=COOKIE_MASK_OWNER | MASK_KIND)
