"""The pipeline plan: every OpenFlow table, priority band and cookie owner of the
controller, in one place (as Faucet's faucet_pipeline.py). Components import their
numbers from here; tests/unit/test_pipeline.py fails if two bands overlap or a priority
falls outside its owner's band.

Table 0 (CLASSIFY): first match wins, from the top

    65000-63000  eapol    blacklisted MACs dropped; EAPOL steered to/from hostapd
    60001        dhcp     fast path: a DHCP reply from the router's stack (LOCAL) carrying
                          its out port in eth_src: to that port, eth_src = the router's MAC
    60000        dhcp     every DHCP request (udp/67) to the controller: with the fast path
                          to LOCAL, its in_port in eth_dst (components/dhcp/fastpath.py)
    59000        dhcp     a forgotten device whose lease has not ended: the rest of what
                          it sends to the controller (metered); it is pending again
    50001        dns      DNS over TLS (tcp 853) to any of the router's gateway addresses:
                          to its stack (dnsd), above the drops below
    50000        dns      port 53 of every device to the router (dnsd); DoT/DoQ dropped
    40000        dns      reverse check: a device to an address of a name it may not use
    36999-36000  schedules a paused device (one-shot or a bedtime window): only its
                          gateway services (table 5, as a pending device) and neighbour
                          discovery with the router, as a usage block, above it: neither
                          undoes the other
    35999-35000  usage    a device over its usage limit: through its meter (slow), then
                          table 0 again; or only its gateway services (block)
    30999-0      routing  IGMP to us, IPv6 neighbour discovery with the router (RS to us),
                          gateway access (ARP; pending: to and from .1 and ::1, via table 5),
                          a permitted device's anti-spoofed entry (port + MAC + address),
                          default drop at 0

A cut-off device's packets to its own gateway address (pending or denied: routing's one
flow per device and family in table 0; paused or blocked: the schedules' or usage's),
and what the router's stack sends it, go on to one shared table:

    table 5 GATEWAY   the gateway services every such device keeps: ICMP, DNS (udp/tcp
                      53) and the page saying why it is cut off (tcp 80 and 443) to the
                      router's stack, and the stack's answers from those back to the
                      device's port (which its table-0 flow put in reg7); what the stack
                      sends it from another address (marked in reg7's top bit) only if
                      it is a DNS answer (dnsd answered a query the device sent to an
                      outside resolver); the rest dropped. Shared, so a new device costs
                      5 flows (ARP 2, gateway 3) instead of 10.

Permitted traffic visits routing's two other tables:

    table 10 ACCOUNT  per-flow counters: exact 5-tuple entries the switch learns itself
                      (idle timeout, flow-removed to us), or one per-host entry each way;
                      with [routing] flow_records = "conntrack" only flows within the
                      pool are learned, NATed ones are counted per host here and read
                      per flow from the kernel's conntrack (routing/conntrack.py)
    table 20 FORWARD  by destination: another device (MAC rewrite, TTL decrement),
                      broadcast and multicast fan-out, the router's own stack (LOCAL)

A satellite switch (satellites.py) has a table of its own on its own datapath: per
device port, up to the router tagged with that port's VLAN, and back; nothing else.

Cookies (64 bits): owner (8 bits) | kind (8) | 16 spare | device (32), where device is
the /30 block index + 1 (0 = shared). An owner's flows are removed with one FlowDelete
masked on the owner byte; routing also masks on kind and device, so one message removes
exactly one sort of flow of one device.
"""
from __future__ import annotations

from dataclasses import dataclass

# -- tables ---------------------------------------------------------------------------------------
TABLE_CLASSIFY = 0
TABLE_GATEWAY = 5
TABLE_ACCOUNT = 10
TABLE_FORWARD = 20

# -- cookie owners ----------------------------------------------------------------------------------
COOKIE_MASK_OWNER = 0xFF00_0000_0000_0000
COOKIE_DHCP = 0x0200_0000_0000_0000
COOKIE_ROUTING = 0x0300_0000_0000_0000
COOKIE_DNS = 0x0400_0000_0000_0000
COOKIE_EAPOL = 0x0500_0000_0000_0000
COOKIE_USAGE = 0x0600_0000_0000_0000
COOKIE_SCHEDULE = 0x0700_0000_0000_0000
# On a satellite's own datapath (satellites.py), never on the router's bridge.
COOKIE_SATELLITE = 0x0900_0000_0000_0000
COOKIE_MASK_ALL = 0xFFFF_FFFF_FFFF_FFFF

# -- priority bands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Band:
    owner: str
    table: int
    low: int
    high: int

    def __contains__(self, priority: int) -> bool:
        return self.low <= priority <= self.high


BANDS = (
    Band("eapol", TABLE_CLASSIFY, 63000, 65000),
    Band("dhcp", TABLE_CLASSIFY, 59000, 60001),
    Band("dns-intercept", TABLE_CLASSIFY, 50000, 50001),
    Band("dns-reverse", TABLE_CLASSIFY, 40000, 40000),
    Band("schedules", TABLE_CLASSIFY, 36000, 36999),
    Band("usage", TABLE_CLASSIFY, 35000, 35999),
    Band("routing", TABLE_CLASSIFY, 0, 30999),
    Band("routing-gateway", TABLE_GATEWAY, 0, 65535),
    Band("routing-account", TABLE_ACCOUNT, 0, 65535),
    Band("routing-forward", TABLE_FORWARD, 0, 65535),
)

# eapol (table 0)
PRIO_EAPOL_BLACKLIST = 65000       # a blacklisted MAC: everything dropped
PRIO_EAPOL_TO_DEVICE = 64500       # hostapd's EAPOL answer to one device's port
PRIO_EAPOL_FROM_HOSTAPD = 64000    # EAPOL from hostapd's port: to us, to find the device
PRIO_EAPOL_TO_HOSTAPD = 63000      # EAPOL from devices: to hostapd
COOKIE_EAPOL_BLACKLIST = COOKIE_EAPOL | 0x10_0000
COOKIE_EAPOL_FORWARD = COOKIE_EAPOL | 0x20_0000

# dhcp (table 0)
PRIO_DHCP = 60000
PRIO_DHCP_REPLY = 60001    # above PRIO_DHCP: a relayed reply (udp 67 -> 67) matches both
# A forgotten device that may still believe it holds its lease: everything else it sends
# (not DHCP) to the controller, metered, until that lease would have ended: its first
# packet makes it a pending device again (components/dhcp/returning.py)
PRIO_DHCP_RETURNING = 59000
COOKIE_DHCP_RETURNING = COOKIE_DHCP | (0x01 << 48)

# dns (table 0)
PRIO_DNS_INTERCEPT = 50000
PRIO_DNS_ENCRYPTED = 50001   # the router's own DNS over TLS, above a restricted device's DoT drop
PRIO_DNS_REVERSE = 40000
COOKIE_DNS_INTERCEPT = COOKIE_DNS | 0x10_0000
COOKIE_DNS_DOT = COOKIE_DNS | 0x20_0000
COOKIE_DNS_REVERSE = COOKIE_DNS | 0x40_0000
COOKIE_DNS_ENCRYPTED = COOKIE_DNS | 0x80_0000

# usage (table 0): a device over its limit keeps its gateway's services (table 5) and
# neighbour discovery with the router (ND, above: a solicitation may be unicast to the
# router), loses the rest
PRIO_USAGE_ND = 35501
PRIO_USAGE_GATEWAY = 35500
PRIO_USAGE_ELSEWHERE = 35400       # the router's stack from another source (table 5: DNS answers only)
PRIO_USAGE_BLOCK = 35000
# schedules (table 0): a paused device likewise
PRIO_SCHEDULE_ND = 36501
PRIO_SCHEDULE_GATEWAY = 36500
PRIO_SCHEDULE_ELSEWHERE = 36400
PRIO_SCHEDULE_BLOCK = 36000
# usage, slow: the device's traffic goes through its meter, marks a register and runs
# through table 0 again, where the mark keeps it from matching the same flow twice. Two
# priorities (and two registers), so traffic between two slowed devices meets both meters.
PRIO_USAGE_SLOW_FROM = 35900       # from the device's port
PRIO_USAGE_SLOW_TO = 35800         # to the device's address
REG_USAGE_SLOW_FROM = "reg5"
REG_USAGE_SLOW_TO = "reg6"

# routing, table 0
PRIO_IGMP = 30500          # above gateway access
PRIO_ND = 30200            # IPv6 neighbour discovery with the router (the v6 ARP), above
                           # gateway access, whose ICMPv6 to the router's ::1 it overlaps
PRIO_GATEWAY = 30000       # ARP with the gateway; pending/denied: DNS, HTTP, ICMP to .1
PRIO_GATEWAY_ELSEWHERE = 29000  # pending/denied: the router's stack from another source: marked
PRIO_DEVICE = 20000        # a permitted device's traffic (and traffic to it from LOCAL)
PRIO_ANNOUNCEMENT = 15000  # below a permitted device's own flows: any other device's mDNS or SSDP
                           # announcement to the router's stack (ctx.announcement_groups: identify)
PRIO_DROP = 0
# routing, table 5 (shared by every pending/denied device)
PRIO_GATEWAY_ANSWER = 110   # the router's answer from a service: to the port in reg7
PRIO_GATEWAY_FROM_ROUTER = 105  # anything else the router's stack sends: dropped
PRIO_GATEWAY_SERVICE = 100  # a device's packet to a service: to the router's stack
REG_GATEWAY_PORT = "reg7"   # the device's port, for the answers
# reg7's top bit: the router's stack sent it from another address than the device's gateway
# (an answer "from" an outside resolver, which dnsd gave): table 5 lets only DNS answers pass
GATEWAY_ELSEWHERE = 1 << 31
# routing, table 10
PRIO_LEARNED = 100         # the learned per-flow entries
PRIO_ACCOUNT_SYN = 11      # per device: learn a TCP flow from its SYN
PRIO_ACCOUNT = 10          # per device: learn a flow entry (or, collapsed, count per host)
PRIO_ACCOUNT_OTHER = 9     # protocols without ports
PRIO_ACCOUNT_HOST = 8      # per device: NATed traffic counted per host (flows from conntrack)
# routing, table 20
PRIO_MCAST_GROUP = 300
PRIO_BROADCAST = 300

# A satellite switch's one table (satellites.py; it has no other flows): a port's frames
# to the uplink tagged, the uplink's tagged frames to their port; the management link's
# VLAN above a port's untagged frames.
PRIO_SATELLITE_PORT = 100
PRIO_SATELLITE_MANAGEMENT = 110
PRIO_MCAST_OTHER = 250     # multicast group nobody joined: dropped
PRIO_TO_ROUTER6 = 220      # the router's ::1 inside a permitted device's /64 (above the /64)
PRIO_TTL_EXPIRED = 210     # routed to another device with TTL 1: ICMP time exceeded from us
PRIO_TO_DEVICE = 200       # another permitted device, own subnet broadcast, a gateway
PRIO_POOL_DROP = 150       # anything else inside the pool (unleased, not permitted)
PRIO_UPSTREAM = 100        # everything else: the router's stack (NAT to the WAN)

# Which band each table-0 priority above belongs to (checked by the unit test).
PRIORITIES = {
    "eapol": (PRIO_EAPOL_BLACKLIST, PRIO_EAPOL_TO_DEVICE, PRIO_EAPOL_FROM_HOSTAPD, PRIO_EAPOL_TO_HOSTAPD),
    "dhcp": (PRIO_DHCP, PRIO_DHCP_REPLY, PRIO_DHCP_RETURNING),
    "dns-intercept": (PRIO_DNS_INTERCEPT, PRIO_DNS_ENCRYPTED),
    "dns-reverse": (PRIO_DNS_REVERSE,),
    "schedules": (PRIO_SCHEDULE_ND, PRIO_SCHEDULE_GATEWAY, PRIO_SCHEDULE_ELSEWHERE, PRIO_SCHEDULE_BLOCK),
    "usage": (PRIO_USAGE_SLOW_FROM, PRIO_USAGE_SLOW_TO, PRIO_USAGE_ND, PRIO_USAGE_GATEWAY, PRIO_USAGE_ELSEWHERE,
              PRIO_USAGE_BLOCK),
    "routing": (PRIO_IGMP, PRIO_ND, PRIO_GATEWAY, PRIO_GATEWAY_ELSEWHERE, PRIO_DEVICE, PRIO_ANNOUNCEMENT,
                PRIO_DROP),
    "routing-gateway": (PRIO_GATEWAY_ANSWER, PRIO_GATEWAY_FROM_ROUTER, PRIO_GATEWAY_SERVICE, PRIO_DROP),
    "routing-account": (PRIO_LEARNED, PRIO_ACCOUNT_SYN, PRIO_ACCOUNT, PRIO_ACCOUNT_OTHER, PRIO_ACCOUNT_HOST),
    "routing-forward": (PRIO_MCAST_GROUP, PRIO_BROADCAST, PRIO_MCAST_OTHER, PRIO_TO_ROUTER6, PRIO_TTL_EXPIRED,
                        PRIO_TO_DEVICE, PRIO_POOL_DROP, PRIO_UPSTREAM),
}

# -- routing's cookie kinds --------------------------------------------------------------------------
KIND_SHARED = 0x00         # base flows, broadcast
KIND_ARP = 0x01            # ARP with the gateway (every leased, not blacklisted device)
KIND_GATEWAY = 0x02        # pending/denied: to and from the own .1 only (table 5 says what)
KIND_FORWARD = 0x03        # permitted: table 0 entry points and table 20 destination
KIND_ACCOUNT = 0x04        # permitted: table 10 learn (or per-host) entries
KIND_LEARNED = 0x05        # the switch-learned per-flow entries
KIND_MCAST = 0x06          # multicast group fan-out
KIND_TTL = 0x08            # the TTL-expired punt

MASK_KIND = 0x00FF_0000_0000_0000
MASK_DEVICE = 0x0000_0000_FFFF_FFFF
MASK_ONE_KIND_ONE_DEVICE = COOKIE_MASK_OWNER | MASK_KIND | MASK_DEVICE
MASK_ALL_KINDS_ONE_DEVICE = COOKIE_MASK_OWNER | MASK_DEVICE
MASK_ONE_KIND = COOKIE_MASK_OWNER | MASK_KIND


def routing_cookie(kind: int, block_index: int | None = None) -> int:
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


# -- meters ---------------------------------------------------------------------------------------
def meter_id(block_index: int) -> int:
    """The OpenFlow meter of one device (its /30 block index + 1: meter 0 is not valid)."""
    return block_index + 1


PUNT_METER_BASE = 1 << 24    # above every meter_id (a /8 pool has 4M blocks; OpenFlow allows ids to 0xffff0000)
RETURNING_METER_BASE = 2 << 24   # above every punt_meter_id


def punt_meter_id(block_index: int) -> int:
    """The meter on what one device sends to the controller over IPv6 (Router
    Solicitations, DHCPv6, MLD): a device flooding them cannot swamp the controller."""
    return PUNT_METER_BASE + block_index + 1


def returning_meter_id(block_index: int) -> int:
    """The meter on what a forgotten device that still believes it holds its lease sends to
    the controller (components/dhcp/returning.py)."""
    return RETURNING_METER_BASE + block_index + 1
