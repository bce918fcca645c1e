"""Routing component, first layer: every leased device may talk to its own gateway
(.1 of its /30, the router's stack on the LOCAL port) and nothing else. Permitted
devices get forwarding on top of this (see forwarding rules in this package).

Flows per device are tagged with a cookie carrying the device's block index, so a
device's flows can be removed in one message.
"""
from __future__ import annotations

from ...component import Component
from ...flows import (COOKIE_ROUTING, ETH_ARP, ETH_IP, LOCAL, Datapath, FlowDelete, FlowMod, Output)

PRIO_GATEWAY = 30000
COOKIE_DEVICE_MASK = 0xFFFF_FFFF_FFFF_FFFF


def device_cookie(block_index: int) -> int:
    return COOKIE_ROUTING | (block_index + 1)


class Routing(Component):
    name = "routing"

    def start(self) -> None:
        self.ctx.bus.subscribe("lease", self._on_lease)

    @property
    def dhcp(self):
        return self.ctx.component("dhcp")

    def datapath_up(self, dp: Datapath) -> list:
        decisions = [FlowDelete(cookie=COOKIE_ROUTING, cookie_mask=0xFF00_0000_0000_0000),
                     FlowMod(match={}, actions=(), priority=0, cookie=COOKIE_ROUTING)]
        if self.dhcp:
            for lease in self.dhcp.active_leases():
                decisions += self.gateway_flows(lease)
        return decisions

    def _on_lease(self, topic: str, ev: dict) -> None:
        lease = self.dhcp.lease_of(ev["mac"]) if self.dhcp else None
        if lease is None:
            return
        if ev["action"] in ("granted", "renewed"):
            self.ctx.send(self.gateway_flows(lease))
        else:
            self.ctx.send([self.remove_device_flows(lease)])

    def gateway_flows(self, lease: dict) -> list:
        port, mac, ip, router = lease["port"], lease["mac"], lease["ip"], lease["router"]
        block = self.dhcp.alloc.block_of_address(ip)
        cookie = device_cookie(block.index)
        return [
            FlowMod(match={"in_port": port, "eth_src": mac, "eth_type": ETH_ARP, "arp_spa": ip, "arp_tpa": router},
                    actions=(Output(LOCAL),), priority=PRIO_GATEWAY, cookie=cookie),
            FlowMod(match={"in_port": LOCAL, "eth_type": ETH_ARP, "arp_tpa": ip},
                    actions=(Output(port),), priority=PRIO_GATEWAY, cookie=cookie),
            FlowMod(match={"in_port": port, "eth_src": mac, "eth_type": ETH_IP, "ipv4_src": ip, "ipv4_dst": router},
                    actions=(Output(LOCAL),), priority=PRIO_GATEWAY, cookie=cookie),
            FlowMod(match={"in_port": LOCAL, "eth_type": ETH_IP, "ipv4_dst": ip},
                    actions=(Output(port),), priority=PRIO_GATEWAY, cookie=cookie),
        ]

    def remove_device_flows(self, lease: dict) -> FlowDelete:
        block = self.dhcp.alloc.block_of_address(lease["ip"])
        return FlowDelete(cookie=device_cookie(block.index), cookie_mask=COOKIE_DEVICE_MASK)
