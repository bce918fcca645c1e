"""Table-0 flows that cut a device off the internet: it keeps DNS, HTTP and ICMP with its
own gateway (as a pending device does, routing/flowsets.gateway_flows) and loses
everything else, both ways. DHCP (60000) and DNS interception (50000) sit above and keep
working. Two owners use them, each with its own cookie and priorities (a `Cutoff`), so
one lifting its cut never removes the other's: usage (a device over its limit with
action block) and schedules (a paused device, components/schedules)."""
from __future__ import annotations

from dataclasses import dataclass

from ...flows import ETH_IP, ETH_IPV6, LOCAL, PROTO_ICMP, PROTO_TCP, PROTO_UDP, FlowDelete, FlowMod, Output
from ...pipeline import (COOKIE_MASK_ALL, COOKIE_MASK_OWNER, COOKIE_SCHEDULE, COOKIE_USAGE, PRIO_SCHEDULE_BLOCK,
                         PRIO_SCHEDULE_GATEWAY, PRIO_USAGE_BLOCK, PRIO_USAGE_GATEWAY)

MASK_KIND = 0x00FF_0000_0000_0000      # block flows have kind 0 (slowflows.py: kind 1)

SERVICES = ((PROTO_UDP, "udp", 53), (PROTO_TCP, "tcp", 53), (PROTO_TCP, "tcp", 80))


@dataclass(frozen=True)
class Cutoff:
    """Whose cut it is: the cookie owner and the two priorities of its band."""
    owner: int
    gateway: int         # the gateway services it keeps
    block: int           # everything else, dropped


USAGE = Cutoff(COOKIE_USAGE, PRIO_USAGE_GATEWAY, PRIO_USAGE_BLOCK)
SCHEDULE = Cutoff(COOKIE_SCHEDULE, PRIO_SCHEDULE_GATEWAY, PRIO_SCHEDULE_BLOCK)


def cookie(index: int, by: Cutoff = USAGE) -> int:
    return by.owner | (index + 1)


def block_flows(lease, prefix6=None, by: Cutoff = USAGE) -> list[FlowMod]:
    """`prefix6`: the device's IPv6 /64 (IPv6 on), which loses everything too."""
    c = cookie(lease.index, by)
    out = {"in_port": lease.port, "eth_src": lease.mac, "eth_type": ETH_IP, "ipv4_src": lease.ip,
           "ipv4_dst": lease.router}
    flows = [FlowMod(match={**out, "ip_proto": PROTO_ICMP}, actions=(Output(LOCAL),),
                     priority=by.gateway, cookie=c)]
    for proto, name, port in SERVICES:
        flows.append(FlowMod(match={**out, "ip_proto": proto, f"{name}_dst": port}, actions=(Output(LOCAL),),
                             priority=by.gateway, cookie=c))
    # the router's own answers (source = the device's gateway) still reach it
    flows.append(FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IP, "ipv4_src": lease.router,
                                "ipv4_dst": lease.ip}, actions=(Output(lease.port),),
                         priority=by.gateway, cookie=c))
    flows.append(FlowMod(match={"in_port": lease.port, "eth_src": lease.mac, "eth_type": ETH_IP},
                         priority=by.block, cookie=c))
    flows.append(FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IP, "ipv4_dst": lease.ip},
                         priority=by.block, cookie=c))
    if prefix6 is not None:
        flows.append(FlowMod(match={"in_port": lease.port, "eth_src": lease.mac, "eth_type": ETH_IPV6},
                             priority=by.block, cookie=c))
        flows.append(FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IPV6,
                                    "ipv6_dst": (str(prefix6.network_address), str(prefix6.netmask))},
                             priority=by.block, cookie=c))
    return flows


def unblock(index: int, by: Cutoff = USAGE) -> FlowDelete:
    return FlowDelete(cookie=cookie(index, by), cookie_mask=COOKIE_MASK_ALL)


def forget_all(by: Cutoff = USAGE) -> FlowDelete:
    """Every block flow an earlier run left on the switch (a restarted controller
    reinstalls the ones still due; a block that ended meanwhile must not stay)."""
    return FlowDelete(cookie=by.owner, cookie_mask=COOKIE_MASK_OWNER | MASK_KIND)
