"""Table-0 flows and the meter of a device over its usage limit with action slow: all its
traffic, both ways, goes through an OpenFlow meter (one drop band at the limit's rate)
until the next period or a household member lifts it.

The flows do not forward anything themselves: after the meter they mark a register and
run the packet through table 0 again, where routing (or a block, or the gateway-only
flows of a device no longer permitted) decides as it would without them, and per-flow
accounting counts what passed the meter. The register keeps the packet from matching the
same flow twice. DHCP (60000) and DNS interception (50000) sit above and are not slowed."""
from __future__ import annotations

from ...flows import ETH_IP, ETH_IPV6, FlowDelete, FlowMod, MeterMod, Resubmit, SetField
from ...pipeline import (COOKIE_MASK_ALL, COOKIE_MASK_OWNER, COOKIE_USAGE, PRIO_USAGE_SLOW_FROM,
                         PRIO_USAGE_SLOW_TO, REG_USAGE_SLOW_FROM, REG_USAGE_SLOW_TO, TABLE_CLASSIFY, meter_id)

KIND_SLOW = 0x01 << 48      # cookie kind of the slow flows (the block flows have kind 0)
MASK_KIND = 0x00FF_0000_0000_0000


def cookie(index: int) -> int:
    return COOKIE_USAGE | KIND_SLOW | (index + 1)


def slow_flows(lease, rate_kbps: int, prefix6=None) -> list:
    """The meter (re)created at `rate_kbps`, then the flows that send the device's traffic
    through it. A meter left by an earlier run is deleted first: adding an existing
    meter is an error, and deleting it takes its old flows with it."""
    c, meter = cookie(lease.index), meter_id(lease.index)
    to_v6 = [] if prefix6 is None else [
        FlowMod(match={"eth_type": ETH_IPV6, "ipv6_dst": (str(prefix6.network_address), str(prefix6.netmask)),
                       REG_USAGE_SLOW_TO: 0},
                actions=(SetField(REG_USAGE_SLOW_TO, 1), Resubmit(TABLE_CLASSIFY)),
                priority=PRIO_USAGE_SLOW_TO, cookie=c, meter=meter)]
    return [
        MeterMod(meter, "delete"),
        MeterMod(meter, "add", rate_kbps=rate_kbps),
        FlowMod(match={"in_port": lease.port, "eth_src": lease.mac, REG_USAGE_SLOW_FROM: 0},
                actions=(SetField(REG_USAGE_SLOW_FROM, 1), Resubmit(TABLE_CLASSIFY)),
                priority=PRIO_USAGE_SLOW_FROM, cookie=c, meter=meter),
        FlowMod(match={"eth_type": ETH_IP, "ipv4_dst": lease.ip, REG_USAGE_SLOW_TO: 0},
                actions=(SetField(REG_USAGE_SLOW_TO, 1), Resubmit(TABLE_CLASSIFY)),
                priority=PRIO_USAGE_SLOW_TO, cookie=c, meter=meter),
    ] + to_v6


def unslow(index: int) -> list:
    return [FlowDelete(cookie=cookie(index), cookie_mask=COOKIE_MASK_ALL), MeterMod(meter_id(index), "delete")]


def forget_all() -> FlowDelete:
    """Every slow flow an earlier run left on the switch (a restarted controller
    reinstalls the ones still due)."""
    return FlowDelete(cookie=COOKIE_USAGE | KIND_SLOW, cookie_mask=COOKIE_MASK_OWNER | MASK_KIND)
