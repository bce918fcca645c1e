"""Forgotten devices that may still believe they hold their lease.

Forgetting a device ends its lease on our side, but the device keeps its address until the
lease it was given runs out (an hour for a permitted one): it would sit there with no
internet, no DNS and no page, its renewals only at half its lease. So until that lease
would have ended, the router watches for it:

- at once, a DHCPFORCERENEW (RFC 3203) asks it to renew now; a client that honours it
  (few do without authentication) sends its REQUEST, which is NAKed, and it starts over as
  a new device;
- whatever else it sends (ARP for its gateway, DNS, the web) comes to the controller
  (one metered flow, `PRIO_DHCP_RETURNING`), and its first packet makes it a pending device
  again on its old address (`DhcpServer.came_back`): its DNS then answers with the router
  and its web shows the "waiting for approval" page, within seconds;
- its renewal is NAKed (the next DISCOVER gets its old block back);
- a household member who permits it again by its MAC lets it back in at once, as it is.

The watch ends when the device comes back or its lease would have ended. It is kept in
memory only: after a controller restart the device comes back at its next renewal (NAK).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...flows import CONTROLLER, FlowDelete, FlowMod, MeterMod, Output, PacketOut
from ...packets import build_ethernet, build_ipv4, build_udp
from ...pipeline import COOKIE_DHCP_RETURNING, COOKIE_MASK_ALL, PRIO_DHCP_RETURNING, returning_meter_id
from . import message as m

RATE_PPS, BURST = 10, 20          # what a returning device may send to the controller
FORCERENEW = m.FORCERENEW


@dataclass(frozen=True)
class Returning:
    mac: str
    index: int          # its block
    port: int           # the port it was on
    ip: str
    router: str
    until: float        # when the lease it may believe in would have ended


def cookie(index: int) -> int:
    return COOKIE_DHCP_RETURNING | (index + 1)


def watch(r: Returning) -> list:
    """The meter and the flow that bring its packets (but DHCP, above) to the controller."""
    meter = returning_meter_id(r.index)
    return [MeterMod(meter, "delete"), MeterMod(meter, "add", rate_pps=RATE_PPS, burst_kbits=BURST),
            FlowMod(match={"in_port": r.port, "eth_src": r.mac}, actions=(Output(CONTROLLER, 128),),
                    priority=PRIO_DHCP_RETURNING, cookie=cookie(r.index), meter=meter)]


def unwatch(r: Returning) -> list:
    return [FlowDelete(cookie=cookie(r.index), cookie_mask=COOKIE_MASK_ALL),
            MeterMod(returning_meter_id(r.index), "delete")]


def forcerenew(r: Returning, router_mac: str, xid: int) -> PacketOut:
    """A DHCPFORCERENEW from its (former) gateway to its address: renew now."""
    chaddr = bytes.fromhex(r.mac.replace(":", ""))
    request = m.DhcpMessage(op=1, xid=xid, secs=0, flags=0, ciaddr="0.0.0.0", yiaddr="0.0.0.0",
                            siaddr="0.0.0.0", giaddr="0.0.0.0", chaddr=chaddr)
    payload = m.build(msg_type=FORCERENEW, request=request, yiaddr="0.0.0.0", server_id=r.router,
                      options=[])
    src, dst = m.ip4(r.router), m.ip4(r.ip)
    frame = build_ethernet(chaddr, bytes.fromhex(router_mac.replace(":", "")), 0x0800,
                           build_ipv4(src, dst, 17, build_udp(src, dst, 67, 68, payload)))
    return PacketOut(data=frame, actions=(Output(r.port),))
