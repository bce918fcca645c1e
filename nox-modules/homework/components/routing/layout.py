"""Where routing's flows live: tables, priorities and cookies.

Table 0 keeps the project's priority plan (65000 eapol ... 30000 gateway, 20000-29999
forwarding, 0 drop). Permitted traffic then visits two more tables of ours:

    table 10 ACCOUNT   per-flow counters: exact 5-tuple flows the switch *learns* itself
                       (30 s idle timeout, flow-removed to us), capped per device
    table 20 FORWARD   by destination: another device (MAC rewrite + TTL decrement),
                       broadcast/multicast fan-out, the router's own stack (LOCAL)

Cookie layout (64 bits):  owner (8, COOKIE_ROUTING) | kind (8) | 16 spare | device (32)
where device = /30 block index + 1, or 0 for shared flows. Kinds let one message remove
exactly one sort of flow of one device (for example its forwarding but not its ARP).
"""
from __future__ import annotations

from ...flows import COOKIE_MASK_OWNER, COOKIE_ROUTING

TABLE_CLASSIFY = 0
TABLE_ACCOUNT = 10
TABLE_FORWARD = 20

# table 0
PRIO_IGMP = 30500          # above gateway access, below DNS interception
PRIO_GATEWAY = 30000       # ARP with the gateway; pending/denied: DNS, HTTP, ICMP to .1
PRIO_DEVICE = 20000        # a permitted device's traffic (and traffic to it from LOCAL)
PRIO_DROP = 0
# table 10
PRIO_LEARNED = 100         # the learned per-flow entries
PRIO_ACCOUNT_SYN = 11     # per device: learn a TCP flow from its SYN
PRIO_ACCOUNT = 10          # per device: learn a flow entry (or, collapsed, count per host)
PRIO_ACCOUNT_OTHER = 9     # protocols without ports
# table 20
PRIO_TTL_EXPIRED = 210     # routed to another device with TTL 1: ICMP time exceeded from us
PRIO_MCAST_GROUP = 300
PRIO_BROADCAST = 300
PRIO_MCAST_OTHER = 250     # multicast group nobody joined: dropped
PRIO_TO_DEVICE = 200       # another permitted device, own subnet broadcast, a gateway
PRIO_POOL_DROP = 150       # anything else inside the pool (unleased, not permitted)
PRIO_UPSTREAM = 100        # everything else: the router's stack (NAT to the WAN)

KIND_SHARED = 0x00         # base flows, broadcast
KIND_ARP = 0x01            # ARP with the gateway (every leased, not blacklisted device)
KIND_GATEWAY = 0x02        # pending/denied: DNS, HTTP, ICMP to the own .1 only
KIND_FORWARD = 0x03        # permitted: table 0 entry points and table 20 destination
KIND_ACCOUNT = 0x04        # permitted: table 10 learn (or per-host) entries
KIND_LEARNED = 0x05        # the switch-learned per-flow entries
KIND_MCAST = 0x06          # multicast group fan-out
KIND_FLOW_LIMIT = 0x07     # (retired: the switch-side learn limit's punt)
KIND_TTL = 0x08            # the TTL-expired punt

MASK_KIND = 0x00FF_0000_0000_0000
MASK_DEVICE = 0x0000_0000_FFFF_FFFF


def cookie(kind: int, block_index: int | None = None) -> int:
    device = 0 if block_index is None else block_index + 1
    return COOKIE_ROUTING | (kind << 48) | device


def device_of(value: int) -> int | None:
    """Block index encoded in a routing cookie, None for shared flows."""
    device = value & MASK_DEVICE
    return device - 1 if device else None


def kind_of(value: int) -> int:
    return (value & MASK_KIND) >> 48


def is_routing(value: int) -> bool:
    return value & COOKIE_MASK_OWNER == COOKIE_ROUTING


MASK_ONE_KIND_ONE_DEVICE = COOKIE_MASK_OWNER | MASK_KIND | MASK_DEVICE
MASK_ALL_KINDS_ONE_DEVICE = COOKIE_MASK_OWNER | MASK_DEVICE
MASK_ONE_KIND = COOKIE_MASK_OWNER | MASK_KIND
