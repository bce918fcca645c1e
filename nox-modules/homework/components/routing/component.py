"""Routing and access control (seed §4.4.3-4.4.4): what each device may send, where it goes,
and how every flow is counted.

- pending / denied: ARP with the own gateway, DNS + HTTP(80) + ICMP to it; nothing else
- blacklisted, or no live lease: nothing (DHCP is the DHCP component's, at 60000)
- permitted: anti-spoofed entry (port + MAC + leased IP) -> accounting table -> by
  destination: another permitted device (routed in the switch), broadcast/multicast
  fan-out, or the router's stack (NAT to the WAN). All proactive: the controller is off
  the per-packet and per-flow path; the switch learns per-flow counter entries itself for
  flows inside the household, and NATed flows are read from conntrack (conntrack.py).

Decisions take effect at once: a `device` event re-syncs that device's flows (delete by
cookie kind, add the new set); a `lease` event does the same. When the switch (re)connects
every live device is re-synchronised from the persisted state.
"""
from __future__ import annotations

import bisect
import ipaddress
import logging
from collections import Counter

from ... import dnr
from ...component import Component
from ...events import Alert, AlertKind
from ...interfaces import DeviceSays
from ...flows import (ETH_IP, ETH_IPV6, PROTO_IGMP, Datapath,
                      FlowDelete, FlowRemoved, FlowStats, FlowStatsRequest, LOCAL, Output, PacketIn, PacketOut)
from ... import wording
from ...cutoff import captive_api_uri
from ...leases import Lease
from ...pipeline import COOKIE_MASK_OWNER
from ...macaddr import to_bytes
from ...packets import PacketError, parse_ipv4
from . import flowsets as fs
from . import flowsets6 as fs6
from . import dhcpv6, ndp
from ... import pipeline as L
from .accounting import Accounting
from .conntrack import ConntrackFlows, per_source_counts
from .icmp import time_exceeded, time_exceeded6
from .multicast import (MLD_V1_DONE, MLD_V1_REPORT, MLD_V2_REPORT, Memberships, general_query, icmpv6_of,
                        mld_general_query, parse_igmp, parse_mld)
from ...ipv6plan import ROUTER_LINK_LOCAL
from ...satellites import attachment

QUERY_INTERVAL = 60.0          # IGMP general queries to permitted devices
MEMBERSHIP_LIFETIME = 3 * QUERY_INTERVAL + 10
RA_SPARE = 120                 # an RA's lifetimes outlast the lease by this many seconds
SWEEP_PER_POLL = 16            # idle devices whose counters each poll reads, in turn
ENDINGS_SECONDS = 1.0          # connections' endings (conntrack) are published together this often


class Routing(Component):
    name = "routing"

    def __init__(self, ctx, said: DeviceSays | None = None):
        super().__init__(ctx)
        self.installed: dict[str, tuple[Lease, str]] = {}   # mac -> (device, "permitted"|"gateway")
        self.said = said        # identify's inbox: what a DHCPv6 message said (None: identification off)
        self.per_host: set[int] = set()                       # block indexes collapsed to per-host
        self.memberships = Memberships(MEMBERSHIP_LIFETIME)
        self.accounting = Accounting(self.ctx.bus.publish, self._device_for_index, self.ctx.count, self._owns6)
        # NATed (internet) flows: per-flow records from conntrack, when it is there
        self.conntrack = None
        self.nat_flows = ConntrackFlows(self._index_of_address, self.accounting.record, self.per_host.__contains__,
                                        self._inside)
        self._polled_at = float("-inf")
        self._swept = -1                     # the block index the last poll's sweep ended at
        self._advertised: dict[str, tuple[float, float]] = {}   # mac -> (when, until) of its last RA
        self._permitted_ports_count: Counter[int] = Counter()     # port -> permitted devices on it
        self._shared_ports: list[int] | None = None               # the ports the shared flows were sent for
        self.router_mac = "02:00:00:00:00:01"

    # -- life cycle ----------------------------------------------------------------------
    def start(self) -> None:
        self.router_mac = self.ctx.host.local_mac() or self.router_mac
        self.ctx.bus.subscribe("lease", self._on_lease)
        self.ctx.bus.subscribe("device", self._on_device)
        self.ctx.bus.subscribe("ipv6_plan", self._on_ipv6_plan)
        if self.ctx.config.flow_records == "conntrack":
            self.conntrack = self.ctx.host.conntrack_reader()
            if self.conntrack is None:
                self.log.warning("no conntrack tool: every flow gets a learned switch entry")
            else:
                self.conntrack.enable_accounting()
                self.conntrack.shorten_time_wait()
                self.conntrack.follow(self.nat_flows.ended)
                # The baseline now (what an earlier run reported already), not at the first
                # poll: the connections of the first interval after a start are new, and a
                # baseline taken then would leave them unrecorded.
                # (A failed dump leaves the baseline to the first poll's.)
                if (entries := self.conntrack.dump()) is not None:
                    self.nat_flows.snapshot(entries)
                # the records of connections' endings (DESTROY events, one at a time), together
                self.ctx.every(ENDINGS_SECONDS, self.accounting.publish_flows)
        self.ctx.every(self.ctx.config.flow_stats_interval, self.poll_flow_stats)
        self.ctx.every(QUERY_INTERVAL, self.query_members)
        self.ctx.commands.register("routing-status", self.status)
        # Device views say whether the device is counted per host (over the flow limit).
        self.ctx.device_facts.append(self._facts)

    def stop(self) -> None:
        if self.conntrack is not None:
            self.conntrack.stop()

    def datapath_up(self, dp: Datapath) -> list:
        self.router_mac = self.ctx.host.local_mac() or self.router_mac
        decisions: list = list(fs.base_flows(self.ctx.config.pool, self._captive_https()))
        if self.ctx.ipv6 is not None:
            decisions += fs6.base_flows(self.ctx.ipv6.site, self._captive_https())
        # Memberships are rebuilt from the devices' answers to an immediate query.
        decisions.append(FlowDelete(cookie=L.routing_cookie(L.KIND_MCAST), cookie_mask=L.MASK_ONE_KIND))
        self.memberships.clear()
        decisions += self._group_flows(sorted(self.ctx.router_groups))
        decisions += [fs.announcement_flow(group) for group in sorted(self.ctx.announcement_groups)]
        self.installed.clear()
        self._permitted_ports_count.clear()
        self._shared_ports = None          # the switch may have none of them: send them again
        self.per_host.clear()
        live = set()
        for lease in self.ctx.leases.active():
            live.add(lease.mac)
            decisions += self._sync(lease.mac, update_shared=False)
        # Whatever an earlier run installed for devices that are no longer live goes.
        installed_indexes = {dev.index for dev, _ in self.installed.values()}
        for lease in self.ctx.leases.all():
            if lease.index not in installed_indexes:
                decisions.append(FlowDelete(cookie=L.routing_cookie(L.KIND_SHARED, lease.index),
                                            cookie_mask=L.MASK_ALL_KINDS_ONE_DEVICE))
        decisions += self._shared_flows()
        decisions += self._queries(max_resp_tenths=10)
        self.accounting.start_priming()
        self.accounting.forget_learned()
        decisions.append(self._stats_request())
        self.log.info("switch connected: %d devices synchronised (%d permitted)", len(self.installed),
                      len(self._permitted()))
        return decisions

    # -- events ---------------------------------------------------------------------------
    def _on_lease(self, topic: str, ev) -> list:
        return self._sync(ev.lease.mac)

    def _on_ipv6_plan(self, topic: str, ev) -> list:
        """Renumbering (the ISP delegated another prefix): each device hears its old /64
        is no longer preferred (RFC 4862 keeps the address up to two hours, but new
        connections take the new one), then every routing flow is rebuilt as when the
        switch connects. IPv4 traffic pauses for as long as that takes (milliseconds)."""
        if self.ctx.datapath is None:
            return []
        old_plan = ev.old
        decisions: list = []
        for dev, _ in list(self.installed.values()):
            old = old_plan.device_prefix(dev.index) if old_plan is not None else None
            decisions += self._advertisement(dev, deprecated=[old] if old is not None else [])
        decisions.append(FlowDelete(cookie=L.COOKIE_ROUTING, cookie_mask=COOKIE_MASK_OWNER))
        return decisions + self.datapath_up(self.ctx.datapath)

    def _on_device(self, topic: str, ev) -> list:
        if ev.reason == "meta":
            return []
        return self._sync(ev.mac)

    def packet_in(self, pkt: PacketIn, frame) -> list | None:
        if frame.ethertype == ETH_IPV6:
            if pkt.reason == "invalid_ttl" or pkt.cookie == L.routing_cookie(L.KIND_TTL):
                return self._hop_limit_exceeded(pkt, frame)
            if len(frame.payload) > 43 and frame.payload[6] == 17:
                return self._information_request(pkt, frame)
            return self._icmpv6(pkt, frame)
        if frame.ethertype != ETH_IP:
            return None
        if pkt.reason == "invalid_ttl" or pkt.cookie == L.routing_cookie(L.KIND_TTL):
            return self._ttl_exceeded(pkt, frame)
        ip = parse_ipv4(frame.payload)
        if ip.proto == PROTO_IGMP:
            return self._igmp(pkt, frame, ip)
        return None

    def flow_removed(self, ev: FlowRemoved) -> list:
        self.accounting.flow_removed(ev)
        self.accounting.publish_flows()
        return []

    def flow_stats(self, stats: list[FlowStats]) -> list:
        self.accounting.flow_stats(stats)
        self.accounting.publish_flows()
        return self._over_limit()

    # -- per-device synchronisation -----------------------------------------------------------
    def _dev(self, mac: str) -> Lease | None:
        lease = self.ctx.leases.get(mac)
        # A relayed client (DHCP through a relay agent) is not on our port: no flows for it.
        if lease is None or not lease.active or not lease.local:
            return None
        return lease

    def _mode(self, mac: str) -> str | None:
        device = self.ctx.state.get_device(mac)
        state = device.state if device else "pending"
        if state == "blacklisted":
            return None
        return "permitted" if state == "permitted" else "gateway"

    def _sync(self, mac: str, update_shared: bool = True) -> list:
        """Decisions that bring one device's flows to what its lease and state call for."""
        dev = self._dev(mac)
        mode = self._mode(mac) if dev else None
        old = self.installed.get(mac)
        if old is not None and dev is not None and old[1] == mode and old[0].same_place(dev):
            self._install(mac, dev, mode)   # a renewal: the flows stay as they are
            return self._readvertise(dev)
        if old is None and mode is None and dev is None:
            return []
        self.ctx.count("routing.syncs")
        was_permitted = old is not None and old[1] == "permitted"
        decisions: list = []

        def delete(kind: int, index: int) -> None:
            decisions.append(FlowDelete(cookie=L.routing_cookie(kind, index), cookie_mask=L.MASK_ONE_KIND_ONE_DEVICE))

        # A device that stays where it is keeps its ARP and neighbour-discovery flows (no
        # mode deletes them): a decision resends only what the mode changes (a crowd's
        # permit was a fifth resent flows, each a table change for Open vSwitch).
        new_place = old is None or dev is None or not old[0].same_place(dev)
        if old is not None and (dev is None or mode is None or not old[0].same_place(dev)):
            decisions.append(FlowDelete(cookie=L.routing_cookie(L.KIND_SHARED, old[0].index),
                                        cookie_mask=L.MASK_ALL_KINDS_ONE_DEVICE))
            if self._prefix6(old[0]) is not None:
                decisions.append(fs6.no_punt_meter(old[0]))
            self.per_host.discard(old[0].index)
            self.accounting.forget_learned(old[0].index)
        if dev is None or mode is None:
            self._uninstall(mac)
            self._advertised.pop(mac, None)
            if dev is not None:   # blacklisted with a live lease
                decisions.append(FlowDelete(cookie=L.routing_cookie(L.KIND_SHARED, dev.index),
                                            cookie_mask=L.MASK_ALL_KINDS_ONE_DEVICE))
        elif mode == "gateway":
            # Nothing to delete for a device new since the switch connected (datapath_up
            # clears every index it does not sync): a new lease is 4 flow-mods, not 7.
            if old is not None or not update_shared:
                for kind in (L.KIND_FORWARD, L.KIND_ACCOUNT, L.KIND_LEARNED):
                    delete(kind, dev.index)
            self.per_host.discard(dev.index)
            self.accounting.forget_learned(dev.index)
            decisions += (fs.arp_flows(dev) if new_place else []) + fs.gateway_flows(dev)
            prefix = self._prefix6(dev)
            if prefix is not None:
                decisions += (fs6.punt_meter(dev) + fs6.nd_flows(dev, prefix) if new_place else [])
                decisions += fs6.gateway_flows(dev, prefix)
            self._install(mac, dev, mode)
        else:
            delete(L.KIND_GATEWAY, dev.index)
            decisions += (fs.arp_flows(dev) if new_place else []) + fs.forward_flows(dev, self.router_mac)
            decisions += (fs.per_host_flows(dev) if dev.index in self.per_host
                          else fs.account_flows(dev, self.ctx.config.flow_idle_timeout, self._learned_within()))
            prefix = self._prefix6(dev)
            if prefix is not None:
                decisions += (fs6.punt_meter(dev) + fs6.nd_flows(dev, prefix) if new_place else [])
                decisions += fs6.forward_flows(dev, prefix, self.router_mac) + fs6.mld_flows(dev)
                decisions += (fs6.per_host_flows(dev, prefix) if dev.index in self.per_host
                              else fs6.account_flows(dev, prefix, self.ctx.config.flow_idle_timeout,
                                                     self._learned_within6()))
            self._install(mac, dev, mode)
        if dev is not None and mode is not None and (old is None or not old[0].same_place(dev)):
            decisions += self._advertisement(dev)      # its /64 without waiting for a solicitation
        is_permitted = mode == "permitted"
        # A new device's first flows follow its lease, which the DHCP log line names: the
        # line is for changes (a burst of new devices logged each one three times).
        self.log.log(logging.INFO if old else logging.DEBUG, "device %s: %s -> %s (%s)", mac,
                     old[1] if old else "none", mode or "none", dev.ip if dev else "no lease")
        if update_shared and (was_permitted or is_permitted):
            decisions += self._shared_flows()
            if was_permitted and not is_permitted:
                decisions += self._group_flows(self.memberships.drop_device(mac))
            if is_permitted and not was_permitted:
                decisions += self._queries(max_resp_tenths=10, only=dev)
        return decisions

    def _install(self, mac: str, dev: Lease, mode: str) -> None:
        self._uninstall(mac)
        self.installed[mac] = (dev, mode)
        if mode == "permitted":
            self._permitted_ports_count[dev.port] += 1

    def _uninstall(self, mac: str) -> None:
        old = self.installed.pop(mac, None)
        if old is not None and old[1] == "permitted":
            self._permitted_ports_count[old[0].port] -= 1
            if not self._permitted_ports_count[old[0].port]:
                del self._permitted_ports_count[old[0].port]

    def _permitted(self) -> list[Lease]:
        return [dev for dev, mode in self.installed.values() if mode == "permitted"]

    def _permitted_ports(self) -> list[int]:
        """The ports with a permitted device (kept as devices come and go: a thousand
        permits looked at every device each)."""
        return sorted(self._permitted_ports_count)

    def _shared_flows(self) -> list:
        """The flows that fan out to every permitted device: broadcast, and over IPv6 the
        router's neighbour solicitations. Sent when the ports with a permitted device
        change, not for every decision (a crowd behind one access point changes none)."""
        ports = self._permitted_ports()
        if ports == self._shared_ports:
            return []
        self._shared_ports = ports
        flows = [fs.broadcast_flow(ports)]
        if self.ctx.ipv6 is not None:
            flows.append(fs6.solicitation_flow(ports))
        return flows

    def _device_for_index(self, index: int) -> tuple | None:
        lease = self.ctx.leases.by_index(index)
        return (lease.mac, lease.ip) if lease else None

    def _index_of_address(self, address: str) -> int | None:
        if ":" in address:
            return self.ctx.ipv6.index_of(address) if self.ctx.ipv6 is not None else None
        lease = self.ctx.leases.by_address(address)
        return lease.index if lease else None

    def _inside(self, address: str) -> bool:
        """An address of the household (the pool, the IPv6 site): flows to it are learned."""
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if ip.version == 4:
            return ip in self.ctx.config.pool
        return self.ctx.ipv6 is not None and ip in self.ctx.ipv6.site

    def _learned_within(self) -> ipaddress.IPv4Network | None:
        """With conntrack, only flows inside the pool get learned entries."""
        return self.ctx.config.pool if self.conntrack is not None else None

    def _learned_within6(self) -> ipaddress.IPv6Network | None:
        return self.ctx.ipv6.site if self.conntrack is not None and self.ctx.ipv6 is not None else None

    # -- IPv6: prefixes and Router Advertisements -----------------------------------------------
    def _prefix6(self, dev: Lease):
        """The device's /64, or None (IPv6 off, or the site prefix has no room for it)."""
        return self.ctx.ipv6.device_prefix(dev.index) if self.ctx.ipv6 is not None else None

    def _owns6(self, index: int, address: str) -> bool:
        return ":" in address and self.ctx.ipv6 is not None and self.ctx.ipv6.index_of(address) == index

    def _captive_https(self) -> bool:
        """Cut-off devices' port 443 is the captive pages' (the dns component's nftables
        sends it there): open in the gateway table only then, never to the board."""
        return "dns" in self.ctx.config.components and self.ctx.config.dns_intercept

    def _advertisement(self, dev: Lease, to=ndp.ALL_NODES, deprecated=()) -> list:
        """The device's RA: its /64 and the router for as long as its lease (and a little
        more). Sent when it gets a place, when it asks (RS), and when a renewal of its
        lease outlives the last one (_readvertise): never on a timer for every device, so
        an idle household sends none."""
        prefix = self._prefix6(dev)
        if prefix is None:
            return []
        now = self.ctx.now()
        lifetime = max(0, int(dev.expires - now)) + RA_SPARE
        self._advertised[dev.mac] = (now, now + lifetime)
        # The router's ::1 as DNS server (RFC 8106) only when homework-dnsd answers there:
        # a device told of a resolver nobody answers waits for it on every lookup.
        dns = self._dns6(prefix)
        endpoints = dnr.Endpoints.of(self.ctx.config) if dns is not None else None
        # and where it learns whether it is cut off and why (RFC 8910), as DHCP tells it
        frame = ndp.router_advertisement(to_bytes(self.router_mac), to_bytes(dev.mac), prefix, lifetime, dns=dns,
                                         to=to, deprecated=deprecated, search=self._search_domains(),
                                         captive=captive_api_uri(str(prefix.network_address + 1)),
                                         extra=endpoints.ra_options(dns, lifetime) if endpoints else b"")
        self.ctx.count("routing.ra_sent")
        return [PacketOut(data=frame, actions=(Output(dev.port),))]

    def _icmpv6(self, pkt: PacketIn, frame) -> list:
        """Router Solicitations and MLD reports, from a device with a lease on that port."""
        entry = self.installed.get(frame.src_mac)
        if entry is None or entry[0].port != pkt.in_port:
            return []
        try:
            ip = ndp.parse_ipv6(frame.payload)
            icmp = icmpv6_of(ip.payload, ip.next_header)
        except ValueError:
            self.ctx.count("routing.ignored")
            return []
        if icmp and icmp[0] in (MLD_V1_REPORT, MLD_V1_DONE, MLD_V2_REPORT):
            return self._mld(entry, icmp)
        if not ndp.is_router_solicitation(ip):
            self.ctx.count("routing.ignored")
            return []
        self.ctx.count("routing.rs")
        to = ip.src if ip.src.is_link_local else ndp.ALL_NODES
        return self._advertisement(entry[0], to=to)

    def _search_domains(self) -> list[str]:
        """The household's own domain (the first of [dns] local_domains, which dnsmasq
        answers): the DNS search list of RAs (DNSSL) and stateless DHCPv6."""
        first = next((d.strip() for d in self.ctx.config.dns_local_domains.split(",") if d.strip()), "")
        return [first] if first else []

    def _dns6(self, prefix):
        """The DNS server devices are told of over IPv6: the router's ::1 of their /64 when
        homework-dnsd answers there, else none."""
        cfg = self.ctx.config
        return prefix.network_address + 1 if "dns" in cfg.components and cfg.dns_intercept else None

    def _information_request(self, pkt: PacketIn, frame) -> list:
        """Stateless DHCPv6 from a leased device on its own port, from its link-local."""
        entry = self.installed.get(frame.src_mac)
        if entry is None or entry[0].port != pkt.in_port:
            return []
        prefix = self._prefix6(entry[0])
        dns = self._dns6(prefix) if prefix is not None else None
        try:
            ip = ndp.parse_ipv6(frame.payload)
            if not ip.src.is_link_local or len(ip.payload) < 8:
                raise PacketError("not from a link-local address")
            if self.said is not None:       # read on identify's timer, not here
                self.said.dhcp6(frame.src_mac, ip.payload[8:])
            xid, client, asked = dhcpv6.parse_information_request(ip.payload[8:])
        except ValueError:
            self.ctx.count("routing.ignored")
            return []
        if dns is None:
            return []
        self.ctx.count("routing.dhcpv6_info")
        endpoints = dnr.Endpoints.of(self.ctx.config) if dnr.OPT_V6_DNR in asked else None
        reply = dhcpv6.reply_frame(to_bytes(self.router_mac), frame.src, ip.src, xid, client, dns,
                                   ndp.dns_names(self._search_domains()),
                                   captive=captive_api_uri(str(prefix.network_address + 1)),
                                   extra=endpoints.v6_options(dns) if endpoints else b"")
        return [PacketOut(data=reply, actions=(Output(pkt.in_port),))]

    def _hop_limit_exceeded(self, pkt: PacketIn, frame) -> list:
        """traceroute -6 between devices shows the router, as for IPv4."""
        entry = self.installed.get(frame.src_mac)
        if entry is None or entry[1] != "permitted" or entry[0].port != pkt.in_port:
            return []
        data = frame.payload           # cut at 256 bytes by the switch: only the header is read
        if len(data) < 40 or data[0] >> 4 != 6:
            return []
        prefix = self._prefix6(entry[0])
        if prefix is None or ipaddress.IPv6Address(data[8:24]) not in prefix:
            return []
        self.ctx.count("routing.ttl_exceeded")
        reply = time_exceeded6(to_bytes(self.router_mac), frame.src, prefix.network_address + 1, frame.payload)
        return [PacketOut(data=reply, actions=(Output(pkt.in_port),))]

    def _mld(self, entry: tuple, icmp: bytes) -> list:
        """MLD from a permitted device: its IPv6 groups, kept as IGMP's are."""
        dev, mode = entry
        if mode != "permitted":
            self.ctx.count("routing.ignored")
            return []
        try:
            joined, left = parse_mld(icmp)
        except ValueError:
            self.ctx.count("routing.ignored")
            return []
        self.ctx.count("routing.mld")
        now = self.ctx.now()
        changed = [g for g in joined if self.memberships.join(g, dev.mac, now)]
        changed += [g for g in left if self.memberships.leave(g, dev.mac)]
        return self._group_flows(changed)

    def _readvertise(self, dev: Lease) -> list:
        """A renewed lease: a new RA once the lease would outlive the last one (whose
        lifetimes ran RA_SPARE past the lease it was sent with), so the prefix never lapses
        while the lease lives. A permitted device (one-hour leases, renewed every half
        hour) hears one a renewal; a pending one (30 s leases) one every two minutes."""
        told = self._advertised.get(dev.mac)
        if told is not None and dev.expires <= told[1]:
            return []
        return self._advertisement(dev)

    # -- multicast ------------------------------------------------------------------------------
    def _permitted_sender(self, pkt: PacketIn, frame, src_ip: str) -> Lease | None:
        entry = self.installed.get(frame.src_mac)
        if entry is None or entry[1] != "permitted":
            return None
        dev = entry[0]
        if dev.port != pkt.in_port or dev.ip != src_ip:
            return None
        return dev

    def _igmp(self, pkt: PacketIn, frame, ip) -> list:
        dev = self._permitted_sender(pkt, frame, ip.src_ip)
        if dev is None:
            self.ctx.count("routing.ignored")
            return []
        self.ctx.count("routing.igmp")
        joined, left = parse_igmp(ip.payload)
        now = self.ctx.now()
        changed = [g for g in joined if self.memberships.join(g, dev.mac, now)]
        changed += [g for g in left if self.memberships.leave(g, dev.mac)]
        return self._group_flows(changed)

    def _group_flows(self, groups: list[str]) -> list:
        decisions: list = []
        for group in groups:
            ports = [self.installed[m][0].port for m in self.memberships.members(group)
                     if m in self.installed and self.installed[m][1] == "permitted"]
            if group in self.ctx.router_groups:     # a group the router's own stack serves (SSDP)
                ports.append(LOCAL)
            if ports:
                decisions.append(fs.multicast_flow(group, ports))
            else:
                flow = fs.multicast_flow(group, [])
                decisions.append(FlowDelete(match=flow.match, cookie=flow.cookie, cookie_mask=L.MASK_ONE_KIND,
                                            table_id=flow.table_id, strict=True, priority=flow.priority))
        return decisions

    def _queries(self, max_resp_tenths: int, only: Lease | None = None, members: bool = False) -> list:
        """General queries to one device, to every permitted device, or (`members`) to the
        permitted devices that are members of some group."""
        router = to_bytes(self.router_mac)
        devices = [only] if only else self._permitted()
        if members and only is None:
            joined = self.memberships.devices()
            devices = [dev for dev in devices if dev.mac in joined]
        queries = [PacketOut(data=general_query(router, dev.router, max_resp_tenths), actions=(Output(dev.port),))
                   for dev in devices]
        if self.ctx.ipv6 is not None:        # and MLD's, so IPv6 memberships are refreshed too
            mld = mld_general_query(router, ROUTER_LINK_LOCAL.packed, max_resp_tenths * 100)
            queries += [PacketOut(data=mld, actions=(Output(dev.port),)) for dev in devices]
        return queries

    def query_members(self) -> None:
        """Refresh the memberships: queries go to the devices that joined a group (whose
        membership would otherwise lapse), not to every device. A device that joins sends
        its report unasked (IGMP and MLD both do); every device is asked once when it is
        permitted and when the switch connects."""
        changed = self.memberships.expire(self.ctx.now())
        self.ctx.send(self._group_flows(changed) + self._queries(max_resp_tenths=100, members=True))

    # -- TTL and flow limit ------------------------------------------------------------------------
    def _ttl_exceeded(self, pkt: PacketIn, frame) -> list:
        ip = parse_ipv4(frame.payload)
        dev = self._permitted_sender(pkt, frame, ip.src_ip)
        if dev is None:
            return []
        self.ctx.count("routing.ttl_exceeded")
        reply = time_exceeded(to_bytes(self.router_mac), frame.src, dev.router, frame.payload)
        return [PacketOut(data=reply, actions=(Output(dev.port),))]

    def _over_limit(self) -> list:
        """Collapse every permitted device holding more learned entries than the limit
        (index lookups over the devices that hold any)."""
        limit = self.ctx.config.per_host_flow_limit
        decisions: list = []
        for index, count in self.accounting.learned_counts().items():
            if count <= limit or index in self.per_host:
                continue
            owner = self._device_for_index(index)
            entry = self.installed.get(owner[0]) if owner else None
            if entry is None or entry[1] != "permitted" or entry[0].index != index:
                continue
            decisions += self._collapse(entry[0], count)
        return decisions

    def _nat_over_limit(self, entries: list) -> list:
        """The flow limit for NATed connections, from the poll's own conntrack dump (no
        dump of its own): a device holding more entries than the limit (connections
        open, and closed ones in their last minute) is counted per host."""
        limit = self.ctx.config.per_host_flow_limit
        if len(entries) <= limit:
            return []
        decisions: list = []
        counts: dict[int, int] = {}
        for address, count in per_source_counts(entries).items():
            index = self._index_of_address(address)
            if index is not None:
                counts[index] = counts.get(index, 0) + count
        for index, count in counts.items():
            lease = self.ctx.leases.by_index(index) if count > limit else None
            entry = self.installed.get(lease.mac) if lease else None
            if entry is None or entry[1] != "permitted" or entry[0].index in self.per_host:
                continue
            decisions += self._collapse(entry[0], count)
        return decisions

    def _facts(self, mac: str) -> dict:
        """What routing adds to a device's view: per-host counting, its IPv6 /64, and where
        it is plugged in (a router port or a satellite's port)."""
        facts: dict[str, object] = {"flow_limited": self.flow_limited(mac), "attached": self._attached(mac)}
        if self.ctx.ipv6 is not None:
            lease = self.ctx.leases.get(mac)
            prefix = self._prefix6(lease) if lease is not None and lease.active and lease.local else None
            facts["ipv6_prefix"] = str(prefix) if prefix is not None else None
        return facts

    def _attached(self, mac: str) -> dict | None:
        lease, dp = self.ctx.leases.get(mac), self.ctx.datapath
        if lease is None or not lease.local or dp is None:
            return None
        name = dp.port_name(lease.port)
        return attachment(name) if name else None

    def flow_limited(self, mac: str) -> bool:
        """Whether this device was collapsed to per-host counting (shown on its label)."""
        entry = self.installed.get(mac)
        return entry is not None and entry[0].index in self.per_host

    def _collapse(self, dev: Lease, flows: int) -> list:
        """Too many flows: replace the device's per-flow entries by one per-host entry
        (seed §4.4.4) and tell the household."""
        self.ctx.count("routing.flow_limit")
        self.per_host.add(dev.index)
        self.accounting.forget_learned(dev.index)
        limit = self.ctx.config.per_host_flow_limit
        self.log.warning("device %s (%s) has %d flows (limit %d): per-flow entries replaced by a per-host entry",
                         dev.mac, dev.ip, flows, limit)
        self.ctx.bus.publish(Alert(
            mac=dev.mac, kind=AlertKind.FLOW_LIMIT,
            detail=wording.sentence(f"{wording.name_of(self.ctx.state, dev.mac)} opened {flows} connections at once "
                                    f"(more than {limit}): the router now counts its traffic per address it "
                                    "talks to, not per connection"),
            data={"ip": dev.ip, "flows": flows, "limit": limit}))
        return ([FlowDelete(cookie=L.routing_cookie(L.KIND_ACCOUNT, dev.index), cookie_mask=L.MASK_ONE_KIND_ONE_DEVICE)]
                + fs.per_host_flows(dev)
                + (fs6.per_host_flows(dev, prefix) if (prefix := self._prefix6(dev)) is not None else [])
                + [FlowDelete(cookie=L.routing_cookie(L.KIND_LEARNED, dev.index),
                              cookie_mask=L.MASK_ONE_KIND_ONE_DEVICE)])

    # -- accounting ---------------------------------------------------------------------------------
    def _stats_request(self) -> FlowStatsRequest:
        """Every accounting entry of the table: the baseline when the switch connects."""
        return FlowStatsRequest(table_id=L.TABLE_ACCOUNT, cookie=L.routing_cookie(L.KIND_SHARED),
                                cookie_mask=COOKIE_MASK_OWNER)

    def poll_flow_stats(self) -> None:
        """One accounting interval. What is read follows the traffic, not the number of
        devices: the learned entries (pairs within the household, one request whatever
        holds them), the NATed connections (conntrack), and the per-device entries of only
        the devices that moved bytes (their connections grew or ended, or their entries
        grew at the last reading), plus SWEEP_PER_POLL others in turn, which catches what
        neither saw (say, packets the router's stack dropped). Counters are cumulative,
        so a device read late loses nothing; its bytes come an interval or so later."""
        self.ctx.count("routing.polls")
        now = self.ctx.now()
        interval = self.ctx.config.flow_stats_interval
        seconds = now - self._polled_at if interval / 2 < now - self._polled_at < interval * 3 else interval
        self._polled_at = now
        self.accounting.end_interval(seconds)
        busy = self.accounting.take_moving()
        decisions: list = []
        if self.conntrack is not None:
            entries = self.conntrack.dump()
            if entries is not None:     # a failed dump: the next one reports the growth
                self.nat_flows.snapshot(entries)
                self.accounting.publish_flows()
                decisions = self._nat_over_limit(entries)
            busy |= self.nat_flows.take_touched()
        if self.ctx.datapath is None:
            return
        permitted = sorted(dev.index for dev in self._permitted())
        wanted = (busy & set(permitted)) | set(self._sweep(permitted))
        self.ctx.count("routing.devices_polled", len(wanted))
        self.ctx.send(decisions + [FlowStatsRequest(table_id=L.TABLE_ACCOUNT, cookie=L.routing_cookie(L.KIND_LEARNED),
                                                    cookie_mask=L.MASK_ONE_KIND)]
                      + [FlowStatsRequest(table_id=L.TABLE_ACCOUNT, cookie=L.routing_cookie(L.KIND_ACCOUNT, index),
                                          cookie_mask=L.COOKIE_MASK_ALL) for index in sorted(wanted)])

    def _sweep(self, permitted: list[int]) -> list[int]:
        """The next SWEEP_PER_POLL permitted devices after the last one swept, in turn."""
        if not permitted:
            return []
        start = bisect.bisect_right(permitted, self._swept)
        turn = (permitted[start:] + permitted[:start])[:SWEEP_PER_POLL]
        self._swept = turn[-1]
        return turn

    # -- command ------------------------------------------------------------------------------------
    def status(self) -> dict:
        return {
            "devices": [{"mac": mac, "mode": mode, "ip": dev.ip, "port": dev.port,
                         "per_host": dev.index in self.per_host,
                         "ipv6_prefix": str(p) if (p := self._prefix6(dev)) is not None else None}
                        for mac, (dev, mode) in sorted(self.installed.items())],
            "groups": {g: self.memberships.members(g) for g in self.memberships.groups()},
            "stats": {**dict.fromkeys(("syncs", "igmp", "ttl_exceeded", "flow_limit", "ignored", "flows_reported",
                                       "flows_removed"), 0),
                      **self.ctx.counters.snapshot().get("routing", {})},
        }
