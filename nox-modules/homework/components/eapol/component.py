"""EAPOL component.

Blacklist (seed §4.4.2): a blacklisted MAC gets two drop flows at priority 65000 (frames
from it and frames to it: EAPOL included, so its key handshake cannot complete and it has
no traffic at all) and goes on hostapd's deny list. Whitelisting removes both.

Forwarding: the switch has no NORMAL action, and 802.1X frames go to the PAE group address
01:80:c2:00:00:03, which a learning switch would not forward anyway. So EAPOL from any
device port goes to hostapd's port (plus a truncated copy to us, to learn which port the
device is on); EAPOL from hostapd to a device goes out of the port it was learned on, by a
per-device flow once learned (by packet-out until then). With hostapd on the router's own
stack (`[eapol] hostapd_port = ""`) its port is LOCAL.

Priorities: 65000 blacklist drops; 64500 learned hostapd -> device; 64000 hostapd -> us;
63000 device -> hostapd (+ copy to us). All above DHCP (60000), so a blacklisted device
cannot even get a lease, and all below the blacklist, so its EAPOL is never forwarded.
"""
from __future__ import annotations

import threading

from ...component import Component
from ...flows import CONTROLLER, ETH_EAPOL, LOCAL, Datapath, FlowDelete, FlowMod, Output, PacketOut
from ...pipeline import (COOKIE_EAPOL, COOKIE_EAPOL_BLACKLIST as COOKIE_BLACKLIST,
                         COOKIE_EAPOL_FORWARD as COOKIE_FORWARD, COOKIE_MASK_ALL, COOKIE_MASK_OWNER,
                         PRIO_EAPOL_BLACKLIST as PRIO_BLACKLIST, PRIO_EAPOL_FROM_HOSTAPD as PRIO_FROM_HOSTAPD,
                         PRIO_EAPOL_TO_DEVICE as PRIO_TO_DEVICE, PRIO_EAPOL_TO_HOSTAPD as PRIO_TO_HOSTAPD)
from .hostapd import HostapdDenyList

LEARN_COPY_BYTES = 64


def blacklist_matches(mac: str) -> list[dict]:
    return [{"eth_src": mac}, {"eth_dst": mac}]


class Eapol(Component):
    name = "eapol"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._lock = threading.RLock()
        self.blacklisted: set[str] = set()
        self.ports: dict[str, int] = {}           # device MAC -> port its EAPOL came from
        self.hostapd_port: int | None = None
        self.deny = HostapdDenyList(ctx.config.hostapd_deny_file, ctx.config.hostapd_ctrl)

    def start(self) -> None:
        self.blacklisted = {d.mac for d in self.ctx.state.devices() if d.state == "blacklisted"}
        self.ctx.bus.subscribe("device", self._on_device)
        # The deny file must say what the state says even if we were down during a change.
        self.deny.update(sorted(self.blacklisted))

    # -- switch ------------------------------------------------------------------------------
    def _find_hostapd_port(self, ports: dict) -> int | None:
        name = self.ctx.config.hostapd_port
        if not name:
            return LOCAL
        return ports.get(name)

    def datapath_up(self, dp: Datapath) -> list:
        decisions: list = [FlowDelete(cookie=COOKIE_EAPOL, cookie_mask=COOKIE_MASK_OWNER)]
        with self._lock:
            for mac in sorted(self.blacklisted):
                decisions += self._blacklist_flows(mac)
            self.hostapd_port = self._find_hostapd_port(dp.ports)
            decisions += self._forwarding_flows()
        return decisions

    def port_status(self, name: str, port_no: int, up: bool) -> list:
        if name != self.ctx.config.hostapd_port or not name:
            return []
        with self._lock:
            if up and self.hostapd_port != port_no:
                self.hostapd_port = port_no
                self.log.info("hostapd's port %s is %d", name, port_no)
                return [FlowDelete(cookie=COOKIE_FORWARD, cookie_mask=COOKIE_MASK_ALL),
                        *self._forwarding_flows()]
            if not up and self.hostapd_port == port_no:
                self.hostapd_port = None
                return [FlowDelete(cookie=COOKIE_FORWARD, cookie_mask=COOKIE_MASK_ALL)]
        return []

    def _forwarding_flows(self) -> list:
        hp = self.hostapd_port
        if hp is None:
            return []
        flows = [
            FlowMod(match={"eth_type": ETH_EAPOL}, priority=PRIO_TO_HOSTAPD, cookie=COOKIE_FORWARD,
                    actions=(Output(hp), Output(CONTROLLER, LEARN_COPY_BYTES))),
            FlowMod(match={"in_port": hp, "eth_type": ETH_EAPOL}, priority=PRIO_FROM_HOSTAPD,
                    cookie=COOKIE_FORWARD, actions=(Output(CONTROLLER),)),
        ]
        for mac, port in sorted(self.ports.items()):
            flows.append(self._to_device_flow(mac, port))
        return flows

    def _to_device_flow(self, mac: str, port: int) -> FlowMod:
        return FlowMod(match={"in_port": self.hostapd_port, "eth_type": ETH_EAPOL, "eth_dst": mac},
                       priority=PRIO_TO_DEVICE, cookie=COOKIE_FORWARD, actions=(Output(port),))

    @staticmethod
    def _blacklist_flows(mac: str) -> list:
        return [FlowMod(match=m, actions=(), priority=PRIO_BLACKLIST, cookie=COOKIE_BLACKLIST)
                for m in blacklist_matches(mac)]

    # -- packets -----------------------------------------------------------------------------
    def packet_in(self, pkt, frame) -> list | None:
        if frame.ethertype != ETH_EAPOL:
            return None
        with self._lock:
            if self.hostapd_port is None:
                return []
            if pkt.in_port == self.hostapd_port:
                return self._from_hostapd(pkt, frame)
            return self._from_device(pkt, frame)

    def _from_device(self, pkt, frame) -> list:
        mac = frame.src_mac
        if mac in self.blacklisted:             # the 65000 drop should have caught it
            self.ctx.count("eapol.dropped")
            return []
        self.ctx.count("eapol.to_hostapd")
        if self.ports.get(mac) == pkt.in_port:
            return []
        self.ports[mac] = pkt.in_port
        return [self._to_device_flow(mac, pkt.in_port)]

    def _from_hostapd(self, pkt, frame) -> list:
        mac = frame.dst_mac
        port = self.ports.get(mac)
        if port is None or mac in self.blacklisted:
            self.ctx.count("eapol.dropped")
            return []
        self.ctx.count("eapol.to_device")
        return [PacketOut(data=pkt.data, actions=(Output(port),), in_port=CONTROLLER)]

    # -- decisions -------------------------------------------------------------------------
    def _on_device(self, topic: str, ev) -> list:
        mac, state = ev.mac, ev.state
        with self._lock:
            if state == "blacklisted" and mac not in self.blacklisted:
                self.blacklisted.add(mac)
                decisions = self._blacklist_flows(mac)
                added, removed = [mac], []
            elif state != "blacklisted" and mac in self.blacklisted:
                self.blacklisted.discard(mac)
                decisions = [FlowDelete(match=m, cookie=COOKIE_BLACKLIST, cookie_mask=COOKIE_MASK_OWNER,
                                        table_id=0, strict=True, priority=PRIO_BLACKLIST)
                             for m in blacklist_matches(mac)]
                added, removed = [], [mac]
            else:
                return []
            blacklisted = sorted(self.blacklisted)
        self.log.info("%s %s: EAPOL and all traffic %s", "blacklisted" if added else "whitelisted", mac,
                      "dropped" if added else "allowed again")
        self.deny.update(blacklisted, added, removed)
        return decisions

