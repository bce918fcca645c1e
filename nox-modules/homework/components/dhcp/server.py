"""DHCP component (seed §4.4.1): a DHCPv4 server on packet-in/packet-out.

Each MAC gets its own /30; leases are short (30 s) while a device is pending or denied
and long (3600 s) once permitted, so an undecided device keeps coming back and a decision
reaches it at its next renewal. The router's .1 of each live lease sits on the bridge's
LOCAL interface.
"""
from __future__ import annotations

import time

from ...component import Component
from ...flows import (COOKIE_DHCP, CONTROLLER, ETH_IP, PROTO_UDP, Datapath, FlowMod, Output,
                      PacketIn, PacketOut)
from ...packets import (BROADCAST_MAC, PacketError, build_ethernet, build_ipv4, build_udp,
                        parse_ipv4, parse_udp)
from ...state import LeaseRow
from . import message as m
from .allocator import Allocator, Block, PoolExhausted

SERVER_PORT, CLIENT_PORT = 67, 68
EXPIRY_CHECK_SECONDS = 2.0


class DhcpServer(Component):
    name = "dhcp"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.alloc = Allocator(ctx.config.pool)
        self.ports: dict[str, int] = {}          # mac -> OpenFlow port last seen on
        self.hostnames: dict[str, str] = {}
        self.live: set[str] = set()              # macs with a live lease
        self.addressed: set[str] = set()         # macs whose router .1 is on the bridge
        # Clients behind a relay agent (giaddr set) are not on one of our ports: they get a
        # lease but no router address and no per-device flows (mac -> relay's address).
        self.relays: dict[str, str] = {}
        self.stats = {"malformed": 0, "offers": 0, "acks": 0, "naks": 0, "exhausted": 0,
                      "releases": 0, "declines": 0, "informs": 0, "ignored": 0}

    # -- life cycle ------------------------------------------------------------------
    def start(self) -> None:
        now = self.ctx.now()
        for row in self.ctx.state.leases():
            try:
                self.alloc.restore(row.mac, row.block, row.expires)
            except ValueError:
                self.log.warning("lease of %s outside the pool, dropped", row.mac)
                self.ctx.state.delete_lease(row.mac)
                continue
            self.ports[row.mac] = row.port
            self.hostnames[row.mac] = row.hostname
            if row.relay:
                self.relays[row.mac] = row.relay
            if row.expires > now:
                self._install_router_address(row.mac)
        # Remove router addresses of leases that expired while we were down.
        installed = self.ctx.host.router_addresses()
        wanted = {f"{self.alloc.block_for(mac).router}/30" for mac in self.addressed}
        for cidr in installed - wanted:
            address, _, prefix = cidr.partition("/")
            if prefix == "30" and self.alloc.block_of_address(address):
                self.ctx.host.remove_router_address(address)
        self.ctx.every(EXPIRY_CHECK_SECONDS, self.expire_leases)
        self.log.info("DHCP serving %s (%d blocks), %d leases restored", self.ctx.config.pool,
                      self.alloc.size, len(self.live))

    def datapath_up(self, dp: Datapath) -> list:
        # Every DHCP request from any port comes to us.
        return [FlowMod(match={"eth_type": ETH_IP, "ip_proto": PROTO_UDP, "udp_dst": SERVER_PORT},
                        actions=(Output(CONTROLLER),), priority=60000, cookie=COOKIE_DHCP)]

    # -- queries used by other components, the CLI and the API -----------------------------
    def lease_of(self, mac: str) -> dict | None:
        block = self.alloc.block_for(mac)
        if block is None:
            return None
        expires = self.alloc.expiry(mac)
        return {"mac": mac, "ip": block.device, "router": block.router, "network": block.cidr,
                "broadcast": block.broadcast, "expires": expires, "port": self.ports.get(mac, 0),
                "active": mac in self.live, "hostname": self.hostnames.get(mac, ""),
                "relay": self.relays.get(mac, "")}

    def leases(self) -> list[dict]:
        return [self.lease_of(mac) for mac in self.alloc.assignments()]

    def active_leases(self) -> list[dict]:
        return [self.lease_of(mac) for mac in list(self.live)]

    def mac_for_ip(self, address: str) -> str | None:
        block = self.alloc.block_of_address(address)
        if block is None or address != block.device:
            return None
        return self.alloc.owner(block.index)

    def lease_time_for(self, mac: str) -> int:
        if self.ctx.state.device_state(mac) == "permitted":
            return self.ctx.config.permitted_lease
        return self.ctx.config.pending_lease

    # -- packets -----------------------------------------------------------------------
    def packet_in(self, pkt: PacketIn, frame) -> list | None:
        if frame.ethertype != ETH_IP:
            return None
        ip = parse_ipv4(frame.payload)
        if ip.proto != PROTO_UDP:
            return None
        udp = parse_udp(ip.payload)
        if udp.dport != SERVER_PORT:
            return None
        try:
            msg = m.parse(udp.payload)
        except PacketError:
            self.stats["malformed"] += 1
            raise
        if msg.op != 1:
            self.stats["ignored"] += 1
            return []
        return self.handle(msg, pkt.in_port)

    def handle(self, msg: m.DhcpMessage, in_port: int) -> list:
        if self.ctx.state.device_state(msg.mac) == "blacklisted":
            self.stats["ignored"] += 1
            return []
        kind = msg.msg_type
        if kind == m.DISCOVER:
            return self._discover(msg, in_port)
        if kind == m.REQUEST:
            return self._request(msg, in_port)
        if kind == m.RELEASE:
            return self._release(msg)
        if kind == m.DECLINE:
            return self._decline(msg)
        if kind == m.INFORM:
            return self._inform(msg, in_port)
        self.stats["ignored"] += 1
        return []

    def _discover(self, msg: m.DhcpMessage, in_port: int) -> list:
        now = self.ctx.now()
        preferred = None
        requested = msg.requested_ip
        if requested:
            wanted = self.alloc.block_of_address(requested)
            preferred = wanted.index if wanted and requested == wanted.device else None
        try:
            block = self.alloc.allocate(msg.mac, now, preferred)
        except PoolExhausted as exc:
            self.stats["exhausted"] += 1
            self.log.error("no offer for %s: %s", msg.mac, exc)
            return []
        self.ports[msg.mac] = in_port
        if msg.hostname:
            self.hostnames[msg.mac] = msg.hostname
        self.ctx.devices.seen(msg.mac, msg.hostname)
        self.stats["offers"] += 1
        return [self._reply(m.OFFER, msg, block, in_port)]

    def _request(self, msg: m.DhcpMessage, in_port: int) -> list:
        now = self.ctx.now()
        block = self.alloc.block_for(msg.mac)
        server_id, requested = msg.server_id, msg.requested_ip
        if server_id is not None:
            # SELECTING: the client answers an OFFER; is it ours?
            if block is None or server_id != block.router:
                if block is not None and self.alloc.expiry(msg.mac) <= now and msg.mac not in self.live:
                    self.alloc.forget(msg.mac)  # it chose another server
                return []
            if requested != block.device:
                return [self._nak(msg, in_port, "requested address is not the one offered")]
        elif requested is not None:
            # INIT-REBOOT: the client remembers an address.
            wanted = self.alloc.block_of_address(requested)
            if wanted is None or requested != wanted.device:
                return [self._nak(msg, in_port, f"{requested} is not a valid address here")]
            if block is None:
                owner = self.alloc.owner(wanted.index)
                if owner is not None and owner != msg.mac:
                    return [self._nak(msg, in_port, f"{requested} belongs to another device")]
                try:
                    block = self.alloc.allocate(msg.mac, now, wanted.index)
                except PoolExhausted:
                    return []
            if block.index != wanted.index:
                return [self._nak(msg, in_port, f"{requested} is not your address")]
        elif msg.ciaddr != "0.0.0.0":
            # RENEWING / REBINDING
            if block is None or msg.ciaddr != block.device:
                return [self._nak(msg, in_port, f"{msg.ciaddr} is not your address")]
        else:
            self.stats["ignored"] += 1
            return []
        return self._ack(msg, block, in_port)

    def _ack(self, msg: m.DhcpMessage, block: Block, in_port: int) -> list:
        mac = msg.mac
        now = self.ctx.now()
        device = self.ctx.devices.seen(mac, msg.hostname)
        lease_time = self.lease_time_for(mac)
        expires = now + lease_time
        renewal = mac in self.live
        self.alloc.set_expiry(mac, expires)
        self.ports[mac] = in_port
        if msg.hostname:
            self.hostnames[mac] = msg.hostname
        relay = msg.giaddr if msg.giaddr != "0.0.0.0" else ""
        if relay:
            self.relays[mac] = relay
        else:
            self.relays.pop(mac, None)
        self.ctx.state.save_lease(LeaseRow(mac, block.index, expires, in_port, self.hostnames.get(mac, ""), relay))
        self._install_router_address(mac)
        self.stats["acks"] += 1
        # The ACK goes to the switch ahead of the flows the lease event brings (routing):
        # in a burst of new devices it no longer queues behind everyone's flow-mods.
        self.ctx.send([self._reply(m.ACK, msg, block, in_port, lease_time)])
        self.ctx.bus.publish("lease", action="renewed" if renewal else "granted", mac=mac, ip=block.device,
                             router=block.router, port=in_port, lease_time=lease_time, expires=expires,
                             hostname=self.hostnames.get(mac, ""), state=device.state, relay=relay)
        if not renewal:
            self.log.info("lease %s -> %s/30 for %ds (%s)", mac, block.device, lease_time, device.state)
        return []

    def _release(self, msg: m.DhcpMessage) -> list:
        block = self.alloc.block_for(msg.mac)
        if block is not None and msg.ciaddr == block.device:
            self.stats["releases"] += 1
            self._end_lease(msg.mac, "released")
        return []

    def _decline(self, msg: m.DhcpMessage) -> list:
        block = self.alloc.block_for(msg.mac)
        if block is not None and msg.requested_ip == block.device:
            self.stats["declines"] += 1
            self.log.warning("%s declined %s: quarantining the block", msg.mac, block.device)
            self._end_lease(msg.mac, "declined")
            self.alloc.decline(msg.mac, self.ctx.now())
            self.ctx.state.delete_lease(msg.mac)
        return []

    def _inform(self, msg: m.DhcpMessage, in_port: int) -> list:
        block = self.alloc.block_for(msg.mac)
        if block is None or msg.ciaddr != block.device:
            return []
        self.stats["informs"] += 1
        return [self._reply(m.ACK, msg, block, in_port, lease_time=None, yiaddr="0.0.0.0")]

    def _nak(self, msg: m.DhcpMessage, in_port: int, why: str) -> PacketOut:
        self.stats["naks"] += 1
        self.log.info("NAK to %s: %s", msg.mac, why)
        block = self.alloc.block_for(msg.mac)
        server_id = block.router if block else str(self.ctx.config.pool.network_address + 1)
        payload = m.build(msg_type=m.NAK, request=msg, yiaddr="0.0.0.0", server_id=server_id,
                          options=[(m.OPT_MESSAGE, why.encode()[:200])])
        return self._packet_out(payload, server_id, "255.255.255.255", BROADCAST_MAC, in_port)

    # -- replies -----------------------------------------------------------------------
    def _reply(self, msg_type: int, msg: m.DhcpMessage, block: Block, in_port: int,
               lease_time: int | None = None, yiaddr: str | None = None) -> PacketOut:
        if lease_time is None and msg_type == m.OFFER:
            lease_time = self.lease_time_for(msg.mac)
        options = [(m.OPT_SUBNET_MASK, m.ip4("255.255.255.252")), (m.OPT_ROUTER, m.ip4(block.router)),
                   (m.OPT_DNS, m.ip4(block.router)), (m.OPT_BROADCAST, m.ip4(block.broadcast))]
        if lease_time is not None:
            options += [(m.OPT_LEASE_TIME, m.u32(lease_time)), (m.OPT_T1, m.u32(lease_time // 2)),
                        (m.OPT_T2, m.u32(lease_time * 7 // 8))]
        hostname = msg.hostname or self.hostnames.get(msg.mac, "")
        if hostname:
            options.append((m.OPT_HOSTNAME, hostname.encode()))
        payload = m.build(msg_type=msg_type, request=msg, yiaddr=yiaddr or block.device,
                          server_id=block.router, options=options)
        if msg.giaddr != "0.0.0.0":
            # RFC 2131 4.1: relayed request: answer the relay agent on the server port.
            return self._packet_out(payload, block.router, msg.giaddr, BROADCAST_MAC, in_port,
                                    dport=SERVER_PORT)
        if msg.ciaddr != "0.0.0.0":
            dst_ip, dst_mac = msg.ciaddr, msg.chaddr
        elif msg.broadcast:
            dst_ip, dst_mac = "255.255.255.255", BROADCAST_MAC
        else:
            dst_ip, dst_mac = block.device, msg.chaddr
        return self._packet_out(payload, block.router, dst_ip, dst_mac, in_port)

    def _packet_out(self, payload: bytes, src_ip: str, dst_ip: str, dst_mac: bytes, port: int,
                    dport: int = CLIENT_PORT) -> PacketOut:
        src_mac = bytes.fromhex((self.ctx.host.local_mac() or "02:00:00:00:00:01").replace(":", ""))
        src, dst = m.ip4(src_ip), m.ip4(dst_ip)
        udp = build_udp(src, dst, SERVER_PORT, dport, payload)
        frame = build_ethernet(dst_mac, src_mac, ETH_IP, build_ipv4(src, dst, PROTO_UDP, udp))
        return PacketOut(data=frame, actions=(Output(port),))

    # -- leases ending -------------------------------------------------------------------
    def _install_router_address(self, mac: str) -> None:
        """Mark the lease live; its router .1 goes on the bridge unless the client is relayed
        (its gateway is the relay agent, not us)."""
        self.live.add(mac)
        relayed = mac in self.relays
        if not relayed and mac not in self.addressed:
            self.addressed.add(mac)
            self.ctx.host.add_router_address(self.alloc.block_for(mac).router)
        elif relayed and mac in self.addressed:   # moved behind a relay
            self.addressed.discard(mac)
            self.ctx.host.remove_router_address(self.alloc.block_for(mac).router)

    def _end_lease(self, mac: str, action: str) -> None:
        block = self.alloc.block_for(mac)
        if block is None:
            return
        self.alloc.set_expiry(mac, 0.0)
        row_port = self.ports.get(mac, 0)
        relay = self.relays.get(mac, "")
        self.ctx.state.save_lease(LeaseRow(mac, block.index, 0.0, row_port, self.hostnames.get(mac, ""), relay))
        self.live.discard(mac)
        if mac in self.addressed:
            self.addressed.discard(mac)
            self.ctx.host.remove_router_address(block.router)
        self.log.info("lease of %s (%s) %s", mac, block.device, action)
        self.ctx.bus.publish("lease", action=action, mac=mac, ip=block.device, router=block.router,
                             port=row_port, lease_time=0, expires=0.0, hostname=self.hostnames.get(mac, ""),
                             state=None, relay=relay)

    def expire_leases(self) -> None:
        now = self.ctx.now()
        for mac in [mac for mac in self.live if self.alloc.expiry(mac) <= now]:
            self._end_lease(mac, "expired")
