"""Helpers for routing unit tests: devices that join over DHCP, packets as match dicts,
and raw frames for packet-ins (IGMP, TTL-expired)."""
import struct

from homework.components.dhcp import message as m
from homework.flows import LOCAL, Datapath, PacketIn
from homework.packets import build_ethernet, build_ipv4, checksum, ip_bytes
from conftest import make_core
from dhcpframes import dhcp_frame, mac_bytes, opt_ip

ROUTER_MAC = "02:00:00:00:00:01"     # FakeHost's LOCAL MAC
PORTS = {"br0": LOCAL, "d1": 1, "d2": 2, "d3": 3}


class FakeConntrack:
    """The kernel's NATed connections as the routing component reads them (set as
    FakeHost.fake_conntrack before the core starts)."""

    def __init__(self):
        self.entries = []
        self.on_end = None
        self.failing = False        # the next dumps fail, as ConntrackReader.dump's None

    def enable_accounting(self):
        return True

    def shorten_time_wait(self):
        return True

    def follow(self, on_end):
        self.on_end = on_end

    def count(self):
        return len(self.entries)

    def dump(self):
        return None if self.failing else list(self.entries)

    def stop(self):
        pass


def routing_core(tmp_path, clock, components=("dhcp", "routing"), **overrides):
    core = make_core(tmp_path, components=components, clock=clock, **overrides)
    core.events = []
    core.bus.subscribe("*", lambda topic, payload: core.events.append((topic, payload)))
    core.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    return core


def join(core, mac, port):
    """DISCOVER + REQUEST; returns the device's address."""
    core.packet_in(PacketIn(in_port=port, data=dhcp_frame(mac, m.DISCOVER)))
    offer = core.ctx.leases.get(mac)
    core.packet_in(PacketIn(in_port=port, data=dhcp_frame(
        mac, m.REQUEST, options=[opt_ip(50, offer.ip), opt_ip(54, offer.router)])))
    core.switch.take_packet_outs()
    return core.ctx.leases.get(mac).ip


def ip_pkt(port, mac, src, dst, proto=6, sport=40000, dport=80, **extra):
    pkt = {"in_port": port, "eth_src": mac, "eth_dst": ROUTER_MAC, "eth_type": 0x0800,
           "ipv4_src": src, "ipv4_dst": dst, "ip_proto": proto, "nw_ttl": 64}
    if proto == 6:
        pkt.update(tcp_src=sport, tcp_dst=dport)
    elif proto == 17:
        pkt.update(udp_src=sport, udp_dst=dport)
    pkt.update(extra)
    return pkt


def from_router(src, dst, proto=6, sport=80, dport=40000):
    return ip_pkt(LOCAL, ROUTER_MAC, src, dst, proto, sport, dport)


def arp_pkt(port, mac, spa, tpa):
    return {"in_port": port, "eth_src": mac, "eth_type": 0x0806, "arp_spa": spa, "arp_tpa": tpa}


def ip_frame(src_mac, dst_mac, src, dst, proto, payload, ttl=64):
    return build_ethernet(mac_bytes(dst_mac), mac_bytes(src_mac), 0x0800,
                          build_ipv4(ip_bytes(src), ip_bytes(dst), proto, payload, ttl=ttl))


def igmp_v2(kind, group):
    body = struct.pack("!BBH4s", kind, 0, 0, ip_bytes(group))
    return body[:2] + struct.pack("!H", checksum(body)) + body[4:]


def igmp_v3(records):
    """records: [(record type, group, n sources)]"""
    recs = b"".join(struct.pack("!BBH4s", rtype, 0, nsrc, ip_bytes(group)) + b"\x0a\x00\x00\x01" * nsrc
                    for rtype, group, nsrc in records)
    body = struct.pack("!BBHHH", 0x22, 0, 0, 0, len(records)) + recs
    return body[:2] + struct.pack("!H", checksum(body)) + body[4:]
