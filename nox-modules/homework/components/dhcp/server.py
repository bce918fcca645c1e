"""DHCP component (seed §4.4.1): a DHCPv4 server. Requests come from a raw socket on the
bridge's LOCAL interface (fastpath.py), or as OpenFlow packet-ins when that
socket cannot be had or `[dhcp] fast_path = false`; both go through `handle`.

Each MAC gets its own /30; leases are short (30 s) while a device is pending or denied
and long (3600 s) once permitted, so an undecided device keeps coming back and a decision
reaches it at its next renewal. The router's .1 of each live lease sits on the bridge's
LOCAL interface.
"""
from __future__ import annotations

import contextlib

from ... import dnr
from ...component import Component
from ...events import Alert, AlertKind, Lease as LeaseEvent
from ...interfaces import DeviceSays
from ...flows import CONTROLLER, ETH_IP, PROTO_UDP, Datapath, FlowMod, Output, PacketIn, PacketOut
from ...packets import (BROADCAST_MAC, PacketError, build_ethernet, build_ipv4, build_udp,
                        parse_ethernet, parse_ipv4, parse_udp)
from . import fastpath
from .dhcpd_link import DhcpdLink, find_binary
from .new_devices import NewDeviceOffers
from . import returning
from . import message as m
from .admission import NewMacGate
from .allocator import RESERVED, Allocator, Block, PoolExhausted
from ... import wording
from ...cutoff import captive_api_uri
from ...leases import Lease, LeaseReader
from ...pipeline import COOKIE_DHCP, PRIO_DHCP

SERVER_PORT, CLIENT_PORT = 67, 68
EXPIRY_CHECK_SECONDS = 2.0
SPARES_QUIET_SECONDS = 1.0    # spare router addresses are topped up once no new device came for this long
ALERT_EVERY = 60.0        # seconds: at most one alert of a kind per device (or port) this often


class DhcpServer(Component):
    name = "dhcp"

    def __init__(self, ctx, said=None):     # unannotated as before (mypy would then check every Block | None use)
        super().__init__(ctx)
        # identify's inbox: a request's options go there as they came, read on its timer
        # (None: identification off)
        self.said: DeviceSays | None = said
        self.alloc = Allocator(ctx.config.pool, on_reclaim=self._dhcpd_forget, on_hold=self._persist_hold)
        self.ports: dict[str, int] = {}          # mac -> OpenFlow port last seen on
        self.hostnames: dict[str, str] = {}
        self.live: set[str] = set()              # macs with a live lease
        # macs we offered an address and that have not taken it yet: homework-dhcpd holds
        # the offer and answers the REQUEST that takes it (and tells us at once)
        self.offers: set[str] = set()
        self.addressed: set[str] = set()         # macs whose router .1 is on the bridge
        # Clients behind a relay agent (giaddr set) are not on one of our ports: they get a
        # lease but no router address and no per-device flows (mac -> relay's address).
        self.relays: dict[str, str] = {}
        self.relay_agents = frozenset(ctx.config.dhcp_relays)
        self.gate = NewMacGate(ctx.config.new_macs_burst, ctx.config.new_macs_per_minute / 60.0)
        self._alerted: dict[tuple[str, str], float] = {}
        self.fast: fastpath.FastPath | None = None
        self._moved = False        # set while handling a request that moved a live lease to another port
        self.dhcpd: DhcpdLink | None = None      # [dhcp] answerer = "dhcpd"
        self._fast_mac = ""               # the router MAC the reply flow writes
        self._fast_failed = False         # logged once
        self._addressed_at = float("-inf")   # ctx.now() of the last router address a device took
        # forgotten devices that may still believe they hold their lease (returning.py)
        self.returning: dict[str, returning.Returning] = {}
        # mac -> when the lease we last told the device ends: the device believes in it, even
        # where our side ended it earlier (a lease cut short when it lost its permission)
        self.believed: dict[str, float] = {}
        self._ask_to_renew: set[str] = set()      # FORCERENEW once the switch is there
        # homework-dhcpd's offers to never-seen devices, from blocks reserved for it
        self.new_devices = NewDeviceOffers(ctx, self.alloc, self.gate, self.log,
                                           link=lambda: self.dhcpd, sync=self._dhcpd_sync)

    # -- life cycle ------------------------------------------------------------------
    def start(self) -> None:
        now = self.ctx.now()
        for row in self.ctx.state.leases():
            mac = row["mac"]
            try:
                self.alloc.restore(mac, row["block"], row["expires"])
            except ValueError:
                self.log.warning("lease of %s outside the pool, dropped", mac)
                self.ctx.state.delete_lease(mac)
                continue
            self.ports[mac] = row["port"]
            self.hostnames[mac] = row["hostname"]
            if row["relay"]:
                self.relays[mac] = row["relay"]
            self.believed[mac] = row["expires"]
            if row["expires"] > now:
                self._install_router_address(mac)
                self._cut_short(mac, now)
        self._restore_holds(now)
        self.ctx.bus.subscribe("device", self._on_device)
        self.ctx.bus.subscribe("ipv6_plan", self._on_ipv6_plan)
        self.ctx.bus.subscribe("station_at", self._on_station_at)
        self.ctx.commands.scopes.append(self._gathered)
        # Remove router addresses of leases that expired while we were down (the spares stay).
        installed = self.ctx.host.router_addresses()
        spares = self._upcoming_routers(now)
        wanted = {f"{self.alloc.block_for(mac).router}/30" for mac in self.addressed}
        wanted |= {f"{router}/30" for router in spares}
        for cidr in installed - wanted:
            address, _, prefix = cidr.partition("/")
            if prefix == "30" and self.alloc.block_of_address(address):
                self.ctx.host.remove_router_address(address)
        self.ctx.host.reserve_router_addresses(spares)
        self.ctx.every(EXPIRY_CHECK_SECONDS, self.expire_leases)
        self.log.info("DHCP serving %s (%d blocks), %d leases restored", self.ctx.config.pool,
                      self.alloc.size, len(self.live))

    def stop(self) -> None:
        if self.dhcpd is not None:
            self.dhcpd.close()
            self.dhcpd = None
        if self.fast is not None:
            self.fast.close()
            self.fast = None

    def datapath_up(self, dp: Datapath) -> list:
        watches = [d for r in self.returning.values() for d in returning.watch(r)]
        watches += [self._forcerenew(mac) for mac in sorted(self._ask_to_renew) if mac in self.live]
        self._ask_to_renew.clear()
        if self._fast_path_ready():
            self._fast_mac = self._router_mac()
            return fastpath.flows(self._fast_mac) + watches
        # Every DHCP request from any port comes to us.
        return [FlowMod(match={"eth_type": ETH_IP, "ip_proto": PROTO_UDP, "udp_dst": SERVER_PORT},
                        actions=(Output(CONTROLLER),), priority=PRIO_DHCP, cookie=COOKIE_DHCP)] + watches

    # -- the fast path -----------------------------------------------------------
    def _fast_path_ready(self) -> bool:
        """Is the raw socket open (opening it now if it may be)? Only with a real switch
        (the os-ken adapter says so): a unit test's fake switch has no bridge to read."""
        if self.fast is not None:
            return True
        if not (self.ctx.config.dhcp_fast_path and self.ctx.switch_is_real):
            return False
        binary = find_binary(self.ctx.config.dhcpd_binary) if self.ctx.config.dhcp_answerer == "dhcpd" else None
        if self.ctx.config.dhcp_answerer == "dhcpd" and binary is None and not self._fast_failed:
            self.log.warning("[dhcp] answerer = dhcpd, but %s is not there: the controller answers",
                             self.ctx.config.dhcpd_binary)
        try:
            sock = (fastpath.open_send_socket if binary else fastpath.open_socket)(self.ctx.config.bridge)
        except OSError as exc:
            if not self._fast_failed:
                self._fast_failed = True
                self.log.warning("DHCP fast path unavailable on %s (%s): DHCP goes through packet-in",
                                 self.ctx.config.bridge, exc)
            return False
        self.fast = fastpath.FastPath(sock, self.fast_request, self.ctx.count)
        if binary:
            endpoints = dnr.Endpoints.of(self.ctx.config)
            self.dhcpd = DhcpdLink(binary, self.ctx.config.bridge, self._punted, self._dhcpd_note,
                                   self._dhcpd_table, self.ctx.count, setup=self.new_devices.setup,
                                   extra_args=endpoints.dhcpd_args() if endpoints else ())
            self.dhcpd.start()
            self.log.info("DHCP fast path: requests read from %s by homework-dhcpd", self.ctx.config.bridge)
        else:
            self.fast.start()
            self.log.info("DHCP fast path: requests read from %s", self.ctx.config.bridge)
        return True

    # -- homework-dhcpd (dhcpd_link.py) -------------------------------------------------------
    def _dhcpd_entry(self, mac: str) -> dict | None:
        """What the daemon needs to answer for `mac` by itself, or None when the controller
        must decide: a live lease (or our offer, `offer`) of a device not blacklisted, on
        one of our ports or behind the configured relay agent it was granted through
        (`relay`: the giaddr its requests must carry, "" for none)."""
        block = self.alloc.block_for(mac)
        port = self.ports.get(mac, 0)
        relay = self.relays.get(mac, "")
        offer = mac not in self.live
        if block is None or (offer and mac not in self.offers) or not 0 < port <= fastpath.MAX_PORT \
                or (relay and relay not in self.relay_agents) \
                or self.ctx.state.device_state(mac) == "blacklisted":
            return None
        return {"mac": mac, "port": port, "ip": block.device, "router": block.router,
                "broadcast": block.broadcast, "lease_time": self.lease_time_for(mac),
                "hostname": self.hostnames.get(mac, ""), "relay": relay, "offer": offer}

    def _dhcpd_table(self) -> list[dict]:
        return [e for mac in list(self.live | self.offers) if (e := self._dhcpd_entry(mac)) is not None]

    def _dhcpd_sync(self, mac: str) -> None:
        if self.dhcpd is None:
            return
        entry = self._dhcpd_entry(mac)
        if entry is None:
            self.dhcpd.delete(mac)
        else:
            self.dhcpd.set(entry)

    def settle(self) -> None:
        """Every lease homework-dhcpd has ACKed is booked (LeaseReader.settle)."""
        if self.dhcpd is not None:
            self.dhcpd.settle()

    def _gathered(self) -> contextlib.AbstractContextManager:
        """A command's changes to homework-dhcpd's table go out together at its end."""
        return self.dhcpd.gathered() if self.dhcpd is not None else contextlib.nullcontext()

    def _dhcpd_forget(self, mac: str) -> None:
        """homework-dhcpd answers nothing more for `mac`, offer or lease: its lease ended,
        it was forgotten, it took another server's offer, or the allocator gave its lapsed
        block to another device (the pool had no fresh one)."""
        self.offers.discard(mac)
        if self.dhcpd is not None:
            self.dhcpd.delete(mac)

    def _punted(self, frame: bytes) -> None:
        port = fastpath.request_port(frame)
        if port is None:
            self.ctx.count("dhcp.fast_path_unmarked")
            return
        self.ctx.count("dhcp.fast_path_in")
        self.fast_request(port, frame)

    def _dhcpd_note(self, note: dict) -> None:
        """homework-dhcpd answered (its latest answer to this device in a batch, `counts` of
        each kind): the same bookkeeping as if we had. A lease forgotten or a device
        blacklisted meanwhile is left as it is (the daemon's entry is already gone)."""
        mac, port, hostname = note.get("mac", ""), int(note.get("port", 0)), note.get("hostname", "")
        reserved = note.get("reserved")
        if reserved is not None and not self.new_devices.claim(mac, port, reserved, note.get("op") == "acked"):
            return
        if self.alloc.block_for(mac) is None or self.ctx.state.device_state(mac) == "blacklisted":
            self.ctx.count("dhcp.dhcpd_late")
            return
        counts = note.get("counts") or {note.get("op"): 1}
        with self.ctx.bus.held():
            if note.get("fp") and self.said is not None:
                # the daemon answered a new device itself: what its DISCOVER said, read later
                self.said.dhcpd_note(mac, note["fp"])
            if note.get("op") == "acked":          # it answers a relayed lease only through its relay
                if note.get("first") is True:
                    self.ctx.count("dhcp.dhcpd_offers_taken")     # a new lease, ACKed by the daemon
                self._grant(mac, port, hostname, relay=self.relays.get(mac, ""))
            elif note.get("op") == "offered":
                self._offered(mac, port, hostname)
                if reserved is not None and mac not in self.live:
                    # the controller's own offer entry now: the REQUEST is answered as
                    # for one it made (its hostname, its lease time)
                    self.offers.add(mac)
                    self._dhcpd_sync(mac)
        # the answers folded into this one booking (dhcpd_link.BOOK_EVERY)
        self.ctx.count("dhcp.acks", max(0, counts.get("acked", 0) - (note.get("op") == "acked")))
        self.ctx.count("dhcp.offers", max(0, counts.get("offered", 0) - (note.get("op") == "offered")))

    def fast_request(self, in_port: int, data: bytes) -> None:
        """One request from the socket: handled as a packet-in would be; the reply goes out
        on the socket first, then the other decisions, then the events the handler held
        back (the new device's flows), so the ACK is ahead of them.

        Except for a device whose live lease moved to another port (unplugged and plugged
        in elsewhere, or roamed): it is configured already and asks for its gateway's MAC
        the moment the ACK arrives, so its ACK goes as a packet-out behind its new port's
        flows, on the same OpenFlow connection; the switch applies them in order (else the
        ARP could beat the flows and wait a second for its retry)."""
        self._moved = False
        later: list = []
        with self.ctx.bus.held():
            try:
                decisions = self.packet_in(PacketIn(in_port=in_port, data=data), parse_ethernet(data))
            except PacketError as exc:
                self.ctx.count("dhcp.malformed")
                self.log.info("malformed DHCP request from port %s (%s) dropped", in_port, exc)
                return
            except Exception:
                self.ctx.count("dhcp.errors")
                self.log.exception("error handling a DHCP request from port %s", in_port)
                return
            fast = self.fast
            if not decisions or fast is None:     # None: stopped meanwhile
                return
            mac = self._router_mac()
            if mac != self._fast_mac:     # the bridge's MAC changed: the reply flow follows
                self._fast_mac = mac
                self.ctx.send(fastpath.flows(mac)[1:])
            if self._moved:
                later = decisions
                self.ctx.count("dhcp.moved_acks")
            else:
                self.ctx.send([d for d in decisions if not (isinstance(d, PacketOut) and fast.send(d))])
        # A move's reply and decisions: after its flows, which went out as the held events ended.
        self.ctx.send(later)

    def _router_mac(self) -> str:
        return self.ctx.host.local_mac() or "02:00:00:00:00:01"

    # -- the lease reader (ctx.leases): how everyone else sees leases ------------------------
    def offer(self, interface: type) -> object:
        if interface is LeaseReader:
            return self
        return super().offer(interface)

    def get(self, mac: str) -> Lease | None:
        block = self.alloc.block_for(mac)
        if block is None:
            return None
        return Lease(mac=mac, index=block.index, network=block.cidr, router=block.router, ip=block.device,
                     broadcast=block.broadcast, expires=self.alloc.expiry(mac), port=self.ports.get(mac, 0),
                     hostname=self.hostnames.get(mac, ""), relay=self.relays.get(mac, ""),
                     active=mac in self.live)

    def all(self) -> list[Lease]:
        return [lease for mac in self.alloc.assignments() if (lease := self.get(mac)) is not None]

    def active(self) -> list[Lease]:
        return [lease for mac in list(self.live) if (lease := self.get(mac)) is not None]

    def _held(self, mac: str) -> Lease:
        """The lease of a MAC that holds a block (its caller has just given it one or ended it)."""
        lease = self.get(mac)
        assert lease is not None, mac
        return lease

    def is_active(self, mac: str) -> bool:
        return mac in self.live

    def by_address(self, address: str) -> Lease | None:
        block = self.alloc.block_of_address(address)
        if block is None or address != block.device:
            return None
        owner = self.alloc.owner(block.index)
        return self.get(owner) if owner else None

    def by_index(self, index: int) -> Lease | None:
        owner = self.alloc.owner(index)
        return self.get(owner) if owner else None

    def is_router_address(self, address: str) -> bool:
        block = self.alloc.block_of_address(address)
        return block is not None and address == block.router

    def lease_time_for(self, mac: str) -> int:
        if self.ctx.state.device_state(mac) == "permitted":
            return self.ctx.config.permitted_lease
        return self.ctx.config.pending_lease

    # -- packets -----------------------------------------------------------------------
    def packet_in(self, pkt: PacketIn, frame) -> list | None:
        if self.returning and frame.src_mac in self.returning and not _is_dhcp_request(frame):
            self.came_back(frame.src_mac, pkt.in_port)
            return []
        if frame.ethertype != ETH_IP:
            return None
        ip = parse_ipv4(frame.payload)
        if ip.proto != PROTO_UDP:
            return None
        udp = parse_udp(ip.payload)
        if udp.dport != SERVER_PORT:
            return None
        msg = m.parse(udp.payload)      # PacketError: the core counts it as dhcp.malformed
        if msg.op != 1:
            self.ctx.count("dhcp.ignored")
            return []
        return self.handle(msg, pkt.in_port, frame.src)

    def handle(self, msg: m.DhcpMessage, in_port: int, src_mac: bytes | None = None) -> list:
        state = self.ctx.state.device_state(msg.mac)
        if state == "blacklisted":
            self.ctx.count("dhcp.ignored")
            return []
        kind = msg.msg_type
        if not self._trusted_sender(msg, in_port, src_mac):
            return []
        if kind in (m.DISCOVER, m.REQUEST) and self._held_elsewhere(msg, in_port):
            return []
        if kind in (m.DISCOVER, m.REQUEST) and state == "permitted" and msg.giaddr == "0.0.0.0":
            self._preapproval_holds(msg.mac, in_port)
        if state is None and kind in (m.DISCOVER, m.REQUEST) \
                and not self.gate.admit(in_port, msg.mac, self.ctx.now()):
            self.ctx.count("dhcp.new_mac_limited")
            self._alert(f"port {in_port}", "dhcp-flood",
                        f"More new devices than allowed are asking to join on port {in_port} "
                        f"({self.ctx.config.new_macs_burst} at once, then {self.ctx.config.new_macs_per_minute} "
                        "a minute): the others wait their turn.", mac="",
                        data={"port": in_port, "burst": self.ctx.config.new_macs_burst,
                              "per_minute": self.ctx.config.new_macs_per_minute})
            return []
        if kind in (m.DISCOVER, m.REQUEST, m.INFORM) and self.said is not None:
            self.said.dhcp4(msg.mac, msg.raw_options)        # read on identify's timer, not here
        if kind == m.DISCOVER:
            return self._discover(msg, in_port)
        if kind == m.REQUEST:
            return self._request(msg, in_port)
        if kind == m.RELEASE:
            return self._release(msg, in_port)
        if kind == m.DECLINE:
            return self._decline(msg, in_port)
        if kind == m.INFORM:
            return self._inform(msg, in_port)
        self.ctx.count("dhcp.ignored")
        return []

    # -- who may speak for a lease -------------------------------------------------
    def _trusted_sender(self, msg: m.DhcpMessage, in_port: int, src_mac: bytes | None) -> bool:
        """A client speaks for itself (frame source = chaddr); a relay agent only if it is
        configured, and never for a lease that lives on one of our own ports."""
        if msg.giaddr == "0.0.0.0":
            if src_mac is not None and src_mac != msg.chaddr:
                self.ctx.count("dhcp.spoofed_source")
                return False
            return True
        if msg.giaddr not in self.relay_agents:
            self.ctx.count("dhcp.relay_refused")
            self._alert(f"relay {msg.giaddr}", "dhcp-relay",
                        f"A DHCP relay at {msg.giaddr} on port {in_port} is not one the router was told of: "
                        "its requests are ignored.", mac="", data={"relay": msg.giaddr, "port": in_port})
            return False
        if msg.mac in self.live and msg.mac not in self.relays:
            self.ctx.count("dhcp.relay_refused")
            who = wording.name_of(self.ctx.state, msg.mac)
            self._alert(msg.mac, "dhcp-relay",
                        wording.sentence(f"a DHCP relay at {msg.giaddr} spoke for {who}, which is plugged into "
                                         f"port {self.ports.get(msg.mac)} of the router: ignored"),
                        data={"relay": msg.giaddr, "port": self.ports.get(msg.mac)})
            return False
        return True

    def _held_elsewhere(self, msg: m.DhcpMessage, in_port: int) -> bool:
        """Is this MAC's live lease bound to another port that is still up? Then the
        message cannot move it: a device only moves once its old port has gone down (it
        was unplugged) or its lease has ended, or when it roams between two radios."""
        mac = msg.mac
        old = self.ports.get(mac, 0)
        if mac not in self.live or mac in self.relays or not old or old == in_port or not self._port_up(old):
            return False
        if self.ctx.is_radio_port(old) and self.ctx.is_radio_port(in_port):
            # Roamed from one satellite's radio to another's: a radio keeps its
            # link for its other stations, and a MAC is no stronger an identity on one
            # access point than across several, so the lease follows the station.
            self.ctx.count("dhcp.roamed")
            return False
        self.ctx.count("dhcp.wrong_port")
        who, address = wording.name_of(self.ctx.state, mac), self.alloc.block_for(mac).device
        self._alert(mac, "dhcp-port-mismatch",
                    wording.sentence(f"something on port {in_port} asked for the address of {who} ({address}), "
                                     f"but {who} is on port {old}: refused"),
                    data={"port": in_port, "lease_port": old, "ip": address})
        return True

    def _preapproval_holds(self, mac: str, in_port: int) -> bool:
        """A pre-approved device holds its pre-approval on the first port it is seen on
        (devices.check_preapproval); the radios a station roams between count as one."""
        dp = self.ctx.datapath
        name = dp.port_name(in_port) if dp is not None else ""

        def same_place(a: str, b: str) -> bool:
            if dp is None:
                return False
            na, nb = dp.ports.get(a), dp.ports.get(b)
            return na is not None and nb is not None and self.ctx.is_radio_port(na) and self.ctx.is_radio_port(nb)
        return self.ctx.devices.check_preapproval(mac, name or "", same_place)

    def _port_up(self, port: int) -> bool:
        dp = self.ctx.datapath
        return dp is None or port in dp.ports.values()

    def _alert(self, key: str, kind: str, detail: str, mac: str | None = None, data: dict | None = None) -> None:
        now = self.ctx.now()
        if now - self._alerted.get((key, kind), -ALERT_EVERY) < ALERT_EVERY:
            return
        if len(self._alerted) > 10000:
            self._alerted.clear()
        self._alerted[(key, kind)] = now
        self.log.warning("%s: %s", kind, detail)
        self.ctx.bus.publish(Alert(mac=key if mac is None else mac, kind=AlertKind(kind), detail=detail,
                                   data=data or {}))

    def _discover(self, msg: m.DhcpMessage, in_port: int) -> list:
        now = self.ctx.now()
        self._returned(msg.mac)        # a forgotten device starting over: its old block if it is free
        preferred = None
        requested = msg.requested_ip
        if requested:
            wanted = self.alloc.block_of_address(requested)
            preferred = wanted.index if wanted and requested == wanted.device else None
        try:
            block = self.alloc.allocate(msg.mac, now, preferred)
        except PoolExhausted as exc:
            self.ctx.count("dhcp.exhausted")
            self.log.error("no offer for %s: %s", msg.mac, exc)
            return []
        self._offered(msg.mac, in_port, msg.hostname)
        if self.dhcpd is not None and msg.giaddr == "0.0.0.0" and msg.mac not in self.live:
            # The REQUEST that takes this offer is decided already (the rules of _request
            # SELECTING): homework-dhcpd answers it and tells us at once, so a new device's
            # second exchange does not queue behind the controller. The entry is in the
            # daemon before the OFFER leaves (the caller sends it).
            self.offers.add(msg.mac)
            self._dhcpd_sync(msg.mac)
        return [self._reply(m.OFFER, msg, block, in_port)]

    def _offered(self, mac: str, in_port: int, hostname: str) -> None:
        self.ports[mac] = in_port
        if hostname:
            self.hostnames[mac] = hostname
        self.ctx.devices.seen(mac, hostname)
        self.ctx.count("dhcp.offers")

    def _request(self, msg: m.DhcpMessage, in_port: int) -> list:
        now = self.ctx.now()
        block = self.alloc.block_for(msg.mac)
        server_id, requested = msg.server_id, msg.requested_ip
        if server_id is not None:
            # SELECTING: the client answers an OFFER; is it ours?
            if block is not None and server_id != block.router and self.is_router_address(server_id):
                # Ours all the same (every /30's router is this server): homework-dhcpd's
                # offer of a reserved block that the controller did not keep, having offered
                # the device a block of its own meanwhile. Ignored, the client would ask for
                # it until it gave up; a NAK sends it back to DISCOVER, which gets its block.
                self.ctx.count("dhcp.withdrawn_offer_naks")
                return [self._nak(msg, in_port, "that offer was withdrawn: ask again", server_id)]
            if block is None or server_id != block.router:
                if block is not None and self.alloc.expiry(msg.mac) <= now and msg.mac not in self.live:
                    self.alloc.forget(msg.mac)  # it chose another server
                    self._dhcpd_forget(msg.mac)
                return []
            if requested != block.device:
                return [self._nak(msg, in_port, "requested address is not the one offered")]
        elif requested is not None:
            # INIT-REBOOT: the client remembers an address (a forgotten device: its old block).
            block = block or self._returned(msg.mac)
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
            # RENEWING / REBINDING (a forgotten device: NAKed, it starts over as a new one)
            if block is None and msg.mac in self.returning:
                self._returned(msg.mac)        # its old block kept for its DISCOVER
                self.ctx.count("dhcp.forgotten_renewal_naks")
                return [self._nak(msg, in_port, "this device was forgotten: start over")]
            if block is None or msg.ciaddr != block.device:
                return [self._nak(msg, in_port, f"{msg.ciaddr} is not your address")]
        else:
            self.ctx.count("dhcp.ignored")
            return []
        return self._ack(msg, block, in_port)

    def _ack(self, msg: m.DhcpMessage, block: Block, in_port: int) -> list:
        relay = msg.giaddr if msg.giaddr != "0.0.0.0" else ""
        lease_time = self._grant(msg.mac, in_port, msg.hostname, relay)
        return [self._reply(m.ACK, msg, block, in_port, lease_time)]

    def _grant(self, mac: str, in_port: int, hostname: str, relay: str, until: float = 0.0) -> int:
        """The lease runs from now (an ACK, ours or homework-dhcpd's), or to `until` if that
        is later (a forgotten device back, believing in its old lease); its lease time."""
        now = self.ctx.now()
        device = self.ctx.devices.seen(mac, hostname)
        lease_time = self.lease_time_for(mac)
        renewal = mac in self.live
        self.alloc.set_expiry(mac, max(now + lease_time, until))
        self.believed[mac] = max(now + lease_time, until)
        if mac in self.returning:             # a forgotten device leased anew (homework-dhcpd's offer)
            self.ctx.send(returning.unwatch(self.returning.pop(mac)))
        if renewal and self.ports.get(mac) not in (None, in_port):
            self._moved = True          # a live lease changed port: fast_request orders its ACK
        self.ports[mac] = in_port
        self.offers.discard(mac)
        if hostname:
            self.hostnames[mac] = hostname
        if relay:
            self.relays[mac] = relay
        else:
            self.relays.pop(mac, None)
        self.ctx.state.save_lease(self._held(mac))
        self._install_router_address(mac)
        self.ctx.count("dhcp.acks")
        # The core holds the lease event until this handler's decisions are sent, so the
        # ACK reaches the switch ahead of the flows the event brings (routing): in a burst
        # of new devices it does not queue behind everyone's flow-mods.
        self._publish_lease("renewed" if renewal else "granted", self._held(mac), device.state, lease_time)
        if not renewal:
            self.log.info("lease %s -> %s/30 for %ds (%s)", mac, self.alloc.block_for(mac).device, lease_time,
                          device.state)
        self._dhcpd_sync(mac)
        return lease_time

    def _publish_lease(self, action: str, lease: Lease, state: str | None, lease_time: int) -> None:
        # `mac` too: the API and hwdb sink route every event by it.
        self.ctx.bus.publish(LeaseEvent(action=action, lease=lease, state=state, mac=lease.mac, lease_time=lease_time))

    def _from_lease_port(self, msg: m.DhcpMessage, in_port: int, what: str) -> bool:
        """RELEASE and DECLINE end a lease at once: only from the port that holds it."""
        held = self.ports.get(msg.mac, 0)
        if held == in_port:
            return True
        self.ctx.count("dhcp.wrong_port")
        who = wording.name_of(self.ctx.state, msg.mac)
        verb = "give up" if what == "release" else "refuse"
        self._alert(msg.mac, f"dhcp-{what}-forged",
                    wording.sentence(f"something on port {in_port} tried to {verb} the address of {who}, "
                                     f"but {who} is on port {held}: ignored"),
                    data={"port": in_port, "lease_port": held, "message": what.upper()})
        return False

    def _release(self, msg: m.DhcpMessage, in_port: int) -> list:
        block = self.alloc.block_for(msg.mac)
        if block is not None and msg.ciaddr == block.device and self._from_lease_port(msg, in_port, "release"):
            self.ctx.count("dhcp.releases")
            self._end_lease(msg.mac, "released")
        return []

    def _decline(self, msg: m.DhcpMessage, in_port: int) -> list:
        block = self.alloc.block_for(msg.mac)
        if block is not None and msg.requested_ip == block.device and self._from_lease_port(msg, in_port, "decline"):
            self.ctx.count("dhcp.declines")
            self.log.warning("%s declined %s: quarantining the block", msg.mac, block.device)
            self._end_lease(msg.mac, "declined")
            self.alloc.decline(msg.mac, self.ctx.now())      # held back (persisted by _persist_hold)
            self.ctx.state.delete_lease(msg.mac)
        return []

    # -- blocks held back (allocator.py), persisted --------------------------------------------
    def _persist_hold(self, index: int, until: float | None) -> None:
        if until is None:
            self.ctx.state.drop_quarantine(index)
        else:
            self.ctx.state.save_quarantine(index, until)

    def _restore_holds(self, now: float) -> None:
        """The holds of the run before: a declined block, a forgotten device's (its lease
        may not have ended), a refused claim's. A block that was reserved for the daemon is
        held for a pending lease from now: the daemon, gone with the controller, may have
        ACKed it and not lived to tell."""
        for index, until in self.ctx.state.quarantine().items():
            if until == RESERVED:
                until = now + self.ctx.config.pending_lease
                self.ctx.state.save_quarantine(index, until)
            if until <= now or not self.alloc.restore_hold(index, until):
                self.ctx.state.drop_quarantine(index)

    # -- forgetting (devices.DeviceRegistry.forget) --------------------------------------------
    def _on_device(self, topic: str, ev) -> None:
        if ev.reason == "forgotten":
            self.forget(ev.mac)
            return
        self.new_devices.know(ev.mac)       # seen, or decided on (pre-approval too): ours to answer
        if ev.reason == "decision" and ev.mac in self.returning and ev.state != "blacklisted":
            self.came_back(ev.mac, self.returning[ev.mac].port, decided=True)   # let back in by its MAC
        if ev.reason == "decision" and ev.state == "permitted":
            self._uncut(ev.mac)
        if ev.reason == "decision":      # the lease time, or blacklisted: no answers
            self._dhcpd_sync(ev.mac)

    def _uncut(self, mac: str) -> None:
        """Let in while its lease was cut short to a pending device's (a restore or a factory
        reset made it a stranger: _cut_short): it still believes in the lease it was given
        before and will not ask again until half of that has passed, so ours runs to that end
        again (at most a permitted lease from now). Otherwise the household's laptop that set
        the router up again after a factory reset lost its address half a minute later."""
        believed, now = self.believed.get(mac, 0.0), self.ctx.now()
        if mac not in self.live or mac in self.relays or believed <= self.alloc.expiry(mac):
            return
        self.alloc.set_expiry(mac, min(believed, now + self.ctx.config.permitted_lease))
        self.ctx.state.save_lease(self._held(mac))
        self._ask_to_renew.discard(mac)

    def _on_station_at(self, topic: str, ev) -> None:
        """A satellite's agent hears a station on another radio than its lease's:
        it roamed there. Its lease follows it at once, without waiting for the station to
        ask for its address again (many clients only check their gateway after roaming, and
        that check cannot pass until the lease has moved): same rule as a roaming request,
        radio to radio only, so a wired device's lease is never taken this way."""
        mac, port = ev.mac, self.ctx.radio_port(ev.ifname)
        old = self.ports.get(mac)
        if port is None or old is None or mac not in self.live or mac in self.relays or old == port:
            return
        if not self.ctx.is_radio_port(old) or not self.ctx.is_radio_port(port):
            return
        self.ctx.count("dhcp.roamed_by_radio")
        self.log.info("%s roamed to %s (router port %d, was %d)", mac, ev.ifname, port, old)
        self.ports[mac] = port
        lease = self._held(mac)
        self.ctx.state.save_lease(lease)
        device = self.ctx.state.get_device(mac)
        # "renewed": for every listener it is the same lease, now on another port (routing
        # moves its flows, hwdb keeps its row)
        self._publish_lease("renewed", lease, device.state if device else None, self.lease_time_for(mac))
        self._dhcpd_sync(mac)

    def forget(self, mac: str) -> None:
        # the device may believe it holds its block till then
        lease_end = max(self.alloc.expiry(mac), self.believed.pop(mac, 0.0))
        block, port = self.alloc.block_for(mac), self.ports.get(mac, 0)
        watch = None
        if block is not None and mac in self.live and mac not in self.relays and port and \
                lease_end > self.ctx.now():
            watch = returning.Returning(mac, block.index, port, block.device, block.router, lease_end)
        if mac in self.live:
            self._end_lease(mac, "forgotten")
        self.alloc.forget(mac, hold_until=lease_end)
        for table in (self.ports, self.hostnames, self.relays):
            table.pop(mac, None)
        self.ctx.state.delete_lease(mac)
        self._dhcpd_forget(mac)
        if self.dhcpd is not None and self.ctx.config.daemon_new_offers:
            self.dhcpd.unknown(mac)         # new again: the daemon may offer it a block
        # Last: the FORCERENEW's answer may come while this command still waits on a socket
        # above (the control socket's command and the switch's packets share one loop). Sent
        # first, a quick client (dhcpcd) had its renewal ACKed mid-forget, and the rest of
        # forget then took the lease it had just been given: stranded until its next DISCOVER.
        if watch is not None:
            self._watch(watch)

    # -- forgotten devices that may still believe in their lease (returning.py) ---------------
    def _watch(self, r: returning.Returning) -> None:
        self.returning[r.mac] = r
        self.ctx.send(returning.watch(r) + [returning.forcerenew(r, self._router_mac(),
                                                                 int(self.ctx.now() * 1000) & 0xFFFFFFFF)])
        self.ctx.count("dhcp.forgotten_watched")

    def _returned(self, mac: str) -> Block | None:
        """A watched device is heard from: the watch ends, and its old block is its own
        again if nobody has taken it meanwhile."""
        r = self.returning.pop(mac, None)
        if r is None:
            return None
        self.ctx.send(returning.unwatch(r))
        block = self.alloc.block_for(mac)       # its lapsed lease's block, if it still holds it
        if block is None or block.index != r.index:
            block = None if block is not None else self.alloc.take(mac, r.index)
        if block is not None:
            self.ports[mac] = r.port
            # its block again: ours to answer. Told before the NAK or ACK leaves, so the
            # daemon never answers its next DISCOVER from its reserve (a second block the
            # controller would refuse, while the device believed in it)
            self.new_devices.know(mac)
        return block

    def came_back(self, mac: str, in_port: int, decided: bool = False) -> None:
        """A forgotten device sent something other than DHCP (or the household decided on
        its MAC again, `decided`): it gets its old address back, as the device it now is
        (pending, unless a household member permitted it again), until the lease it
        believes in would have ended, and is asked to renew."""
        r = self.returning.get(mac)
        if r is None or in_port != r.port:
            return
        if not decided and self.ctx.state.device_state(mac) is None \
                and not self.gate.admit(in_port, mac, self.ctx.now()):
            self.ctx.count("dhcp.new_mac_limited")
            return
        block = self._returned(mac)
        if block is None:
            return
        self.ctx.count("dhcp.forgotten_came_back")
        self._grant(mac, in_port, "", "")
        self.believed[mac] = max(self.believed[mac], r.until)     # it still believes in its old lease
        self.log.info("device %s (%s) is back: %s again", mac, block.device, self.ctx.state.device_state(mac))
        self.ctx.send([returning.forcerenew(r, self._router_mac(), int(self.ctx.now() * 1000) & 0xFFFFFFFF)])

    def _cut_short(self, mac: str, now: float) -> None:
        """A device that is not permitted (a restore made it pending, or it was denied while
        the controller was down) holds a pending lease, not the hour it was given: our side
        ends it at the pending lease, it is asked to renew (FORCERENEW), and if it still
        believes in the hour when ours ends, its next packet brings it back (_end_lease)."""
        if self.ctx.state.device_state(mac) == "permitted" or mac in self.relays:
            return
        short = now + self.ctx.config.pending_lease
        if self.alloc.expiry(mac) > short:
            self.alloc.set_expiry(mac, short)
            self.ctx.state.save_lease(self._held(mac))
            self._ask_to_renew.add(mac)
            self.ctx.count("dhcp.leases_cut_short")

    def _forcerenew(self, mac: str) -> PacketOut:
        block = self.alloc.block_for(mac)
        r = returning.Returning(mac, block.index, self.ports.get(mac, 0), block.device, block.router,
                                self.believed.get(mac, 0.0))
        return returning.forcerenew(r, self._router_mac(), int(self.ctx.now() * 1000) & 0xFFFFFFFF)

    def _expire_watches(self, now: float) -> None:
        for r in [r for r in self.returning.values() if r.until <= now]:
            del self.returning[r.mac]
            self.ctx.send(returning.unwatch(r))

    def _inform(self, msg: m.DhcpMessage, in_port: int) -> list:
        block = self.alloc.block_for(msg.mac)
        if block is None or msg.ciaddr != block.device:
            return []
        self.ctx.count("dhcp.informs")
        return [self._reply(m.ACK, msg, block, in_port, lease_time=None, yiaddr="0.0.0.0")]

    def _nak(self, msg: m.DhcpMessage, in_port: int, why: str, server_id: str | None = None) -> PacketOut:
        """`server_id`: the one the client chose, where that is not its block's router."""
        self.ctx.count("dhcp.naks")
        self.log.info("NAK to %s: %s", msg.mac, why)
        block = self.alloc.block_for(msg.mac)
        if server_id is None:
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
        # where the device learns whether it is cut off, and the page saying why (RFC 8910;
        # homework-dhcpd sends the same, dhcpd/src/dhcp.rs)
        options.append((m.OPT_CAPTIVE_PORTAL, captive_api_uri(block.router).encode()))
        hostname = msg.hostname or self.hostnames.get(msg.mac, "")
        if hostname:
            options.append((m.OPT_HOSTNAME, hostname.encode()))
        if dnr.OPT_V4_DNR in msg.requested_options and (endpoints := dnr.Endpoints.of(self.ctx.config)):
            options += endpoints.v4_option(block.router)      # the router's encrypted DNS (RFC 9463)
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
        src_mac = bytes.fromhex(self._router_mac().replace(":", ""))
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
            self._addressed_at = self.ctx.now()
            self._add_router_addresses(mac, self.alloc.block_for(mac))
        elif relayed and mac in self.addressed:   # moved behind a relay
            self.addressed.discard(mac)
            self._remove_router_addresses(self.alloc.block_for(mac))
        elif relayed:       # a relayed client's gateway is its relay: no spare .1 of ours in its subnet
            self.ctx.host.release_spare_router_address(self.alloc.block_for(mac).router)

    def _upcoming_routers(self, now: float) -> list[str]:
        """The router .1 of the blocks the next new devices get ([dhcp] spare_router_addresses)."""
        count = self.ctx.config.spare_router_addresses
        return [self.alloc.block(index).router for index in self.alloc.upcoming(count, now)]

    def top_up_spares(self) -> None:
        """Put the next free blocks' router addresses on the bridge, once new devices have
        stopped coming: during a burst the changes would cost Open vSwitch a routing-table
        reload each while the devices start. A crowd that keeps coming and has taken half
        of them gets them topped up all at once too (one reload for the lot), rather than
        an address change for each device beyond them."""
        now = self.ctx.now()
        low = len(self.ctx.host.spare_router_addresses()) < self.ctx.config.spare_router_addresses / 2
        if now - self._addressed_at >= SPARES_QUIET_SECONDS or low:
            self.ctx.host.reserve_router_addresses(self._upcoming_routers(now))

    def _add_router_addresses(self, mac: str, block) -> None:
        """The router's side of the device's subnets: its .1, and with IPv6 its ::1 and
        the route of its /64."""
        changed = self.ctx.host.add_router_address(block.router)
        self.ctx.count("dhcp.router_address_writes" if changed else "dhcp.router_address_spares_taken")
        self._add_prefix6(self.ctx.ipv6, mac, block)

    def _remove_router_addresses(self, block) -> None:
        self.ctx.host.remove_router_address(block.router)
        self._remove_prefix6(self.ctx.ipv6, block)

    def _add_prefix6(self, plan, mac: str, block) -> None:
        prefix = plan.device_prefix(block.index) if plan else None
        if prefix is not None:
            self.ctx.host.add_device_prefix6(block.index, str(prefix), str(prefix.network_address + 1), mac)

    def _remove_prefix6(self, plan, block) -> None:
        prefix = plan.device_prefix(block.index) if plan else None
        if prefix is not None:
            self.ctx.host.remove_device_prefix6(block.index, str(prefix), str(prefix.network_address + 1))

    def _on_ipv6_plan(self, topic: str, ev) -> None:
        """The site prefix changed: every addressed device's /64 moves on the router too."""
        for mac in sorted(self.addressed):
            block = self.alloc.block_for(mac)
            if block is not None:
                self._remove_prefix6(ev.old, block)
                self._add_prefix6(ev.new, mac, block)

    def _end_lease(self, mac: str, action: str) -> None:
        block = self.alloc.block_for(mac)
        if block is None:
            return
        self.alloc.set_expiry(mac, 0.0)
        self.live.discard(mac)
        self._dhcpd_forget(mac)
        self.ctx.state.save_lease(self._held(mac))
        if mac in self.addressed:
            self.addressed.discard(mac)
            self._remove_router_addresses(block)
        self.log.info("lease of %s (%s) %s", mac, block.device, action)
        self._publish_lease(action, self._held(mac), None, 0)
        now = self.ctx.now()
        port = self.ports.get(mac, 0)
        if action == "expired" and self.believed.get(mac, 0.0) > now + 1 and port and mac not in self.relays:
            # ours ended, but it was told longer: its next packet brings it back (returning.py)
            self.returning[mac] = returning.Returning(mac, block.index, port, block.device, block.router,
                                                      self.believed[mac])
            self.ctx.send(returning.watch(self.returning[mac]))

    def expire_leases(self) -> None:
        now = self.ctx.now()
        for mac in [mac for mac in self.live if self.alloc.expiry(mac) <= now]:
            self._end_lease(mac, "expired")
        if self.returning:
            self._expire_watches(now)
        self.top_up_spares()


def _is_dhcp_request(frame) -> bool:
    """UDP to port 67 (the DHCP intercept sits above the watch; a packet-in of it is DHCP's
    own business)."""
    p = frame.payload
    return frame.ethertype == ETH_IP and len(p) >= 24 and p[9] == PROTO_UDP and \
        int.from_bytes(p[(p[0] & 0x0F) * 4 + 2:(p[0] & 0x0F) * 4 + 4], "big") == SERVER_PORT
