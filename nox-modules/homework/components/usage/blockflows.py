"""Table-0 flows that cut a device off the internet: it keeps the services of its own
gateway, as a pending device does (routing's shared table 5: ICMP, DNS, the page saying
why on ports 80 and 443), over IPv4 and IPv6, and the answers to them (DNS answers from
any address: dnsd answers queries to an outside resolver too, for the router); it loses
everything else, both ways. DHCP (60000) and DNS interception (50000) sit above and keep
working. Two owners use them, each with its own cookie and priorities (a `Cutoff`), so
one lifting its cut never removes the other's: usage (a device over its limit with
action block) and schedules (a paused device, components/schedules)."""
from __future__ import annotations

from dataclasses import dataclass

from ...flows import ETH_IP, ETH_IPV6, LOCAL, PROTO_ICMPV6, FlowDelete, FlowMod, Output, Resubmit, SetField
from ...pipeline import (COOKIE_MASK_ALL, COOKIE_MASK_OWNER, COOKIE_SCHEDULE, COOKIE_USAGE, PRIO_SCHEDULE_BLOCK,
                         PRIO_SCHEDULE_GATEWAY, PRIO_SCHEDULE_ND, PRIO_USAGE_BLOCK, PRIO_USAGE_GATEWAY,
                         PRIO_USAGE_ND, REG_GATEWAY_PORT, TABLE_GATEWAY, GATEWAY_ELSEWHERE,
                         PRIO_SCHEDULE_ELSEWHERE, PRIO_USAGE_ELSEWHERE)

MASK_KIND = 0x00FF_0000_0000_0000      # block flows have kind 0 (slowflows.py: kind 1)
ND_TYPES = (135, 136)                  # neighbour solicitation and advertisement


@dataclass(frozen=True)
class Cutoff:
    """Whose cut it is: the cookie owner and the two priorities of its band."""
    owner: int
    gateway: int         # the gateway services it keeps
    block: int           # everything else, dropped
    nd: int              # IPv6 neighbour discovery with the router
    elsewhere: int       # what the router's stack sends it from another address (table 5: DNS answers)


USAGE = Cutoff(COOKIE_USAGE, PRIO_USAGE_GATEWAY, PRIO_USAGE_BLOCK, PRIO_USAGE_ND, PRIO_USAGE_ELSEWHERE)
SCHEDULE = Cutoff(COOKIE_SCHEDULE, PRIO_SCHEDULE_GATEWAY, PRIO_SCHEDULE_BLOCK, PRIO_SCHEDULE_ND,
                  PRIO_SCHEDULE_ELSEWHERE)


def cookie(index: int, by: Cutoff = USAGE) -> int:
    return by.owner | (index + 1)


def block_flows(lease, prefix6=None, by: Cutoff = USAGE) -> list[FlowMod]:
    """`prefix6`: the device's IPv6 /64 (IPv6 on), which keeps its gateway services and
    neighbour discovery with the router and loses the rest too."""
    c = cookie(lease.index, by)

    def to_gateway_table(match: dict) -> FlowMod:       # its packets to its router address
        return FlowMod(match=match, actions=(Resubmit(TABLE_GATEWAY),), priority=by.gateway, cookie=c)

    def from_router(match: dict, source: dict) -> list[FlowMod]:     # what the router's stack sends it
        return [FlowMod(match={"in_port": LOCAL, **match, **source},
                        actions=(SetField(REG_GATEWAY_PORT, lease.port), Resubmit(TABLE_GATEWAY)),
                        priority=by.gateway, cookie=c),
                FlowMod(match={"in_port": LOCAL, **match},
                        actions=(SetField(REG_GATEWAY_PORT, lease.port | GATEWAY_ELSEWHERE), Resubmit(TABLE_GATEWAY)),
                        priority=by.elsewhere, cookie=c)]

    me = {"in_port": lease.port, "eth_src": lease.mac}
    flows = [to_gateway_table({**me, "eth_type": ETH_IP, "ipv4_src": lease.ip, "ipv4_dst": lease.router}),
             *from_router({"eth_type": ETH_IP, "ipv4_dst": lease.ip}, {"ipv4_src": lease.router}),
             FlowMod(match={**me, "eth_type": ETH_IP}, priority=by.block, cookie=c),
             FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IP, "ipv4_dst": lease.ip}, priority=by.block, cookie=c)]
    if prefix6 is not None:
        net = (str(prefix6.network_address), str(prefix6.netmask))
        router6 = str(prefix6.network_address + 1)
        flows += [to_gateway_table({**me, "eth_type": ETH_IPV6, "ipv6_src": net, "ipv6_dst": router6}),
                  *from_router({"eth_type": ETH_IPV6, "ipv6_dst": net}, {"ipv6_src": router6})]
        # neighbour discovery with the router (its solicitations go to multicast addresses)
        flows += [FlowMod(match={**me, "eth_type": ETH_IPV6, "ip_proto": PROTO_ICMPV6, "icmpv6_type": t},
                          actions=(Output(LOCAL),), priority=by.nd, cookie=c) for t in ND_TYPES]
        flows += [FlowMod(match={**me, "eth_type": ETH_IPV6}, priority=by.block, cookie=c),
                  FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IPV6, "ipv6_dst": net}, priority=by.block,
                          cookie=c)]
    return flows


def unblock(index: int, by: Cutoff = USAGE) -> FlowDelete:
    return FlowDelete(cookie=cookie(index, by), cookie_mask=COOKIE_MASK_ALL)


def forget_all(by: Cutoff = USAGE) -> FlowDelete:
    """Every block flow an earlier run left on the switch (a restarted controller
    reinstalls the ones still due; a block that ended meanwhile must not stay)."""
    return FlowDelete(cookie=by.owner, cookie_mask=COOKIE_MASK_OWNER | MASK_KIND)
