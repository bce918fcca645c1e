"""Routing's manifest (homework/manifest.py): no table of its own (its flows follow the
leases and decisions), the traffic events it publishes, and its counters."""
from __future__ import annotations

from ... import events
from ...interfaces import DeviceSays
from ...manifest import Manifest

MANIFEST = Manifest(
    component="routing",
    needs={"said": DeviceSays},
    publishes=(events.Bandwidth, events.Flows, events.Alert),
    hears=(events.Device, events.Lease, events.Ipv6Plan),
    alerts=(events.AlertKind.FLOW_LIMIT,),
    counters={
        "routing.syncs": "times a device's flows were brought in line with its lease and state",
        "routing.ra_sent": "IPv6 Router Advertisements sent",
        "routing.rs": "IPv6 Router Solicitations answered",
        "routing.dhcpv6_info": "DHCPv6 information requests answered",
        "routing.mld": "MLD reports heard (IPv6 multicast listeners)",
        "routing.igmp": "IGMP reports heard (IPv4 multicast listeners)",
        "routing.ttl_exceeded": "ICMP time-exceeded sent for packets routed between devices",
        "routing.ignored": "packet-ins routing had no use for",
        "routing.flow_limit": "times a device went over the per-host flow limit",
        "routing.flows_removed": "learned per-flow entries the switch removed and reported",
        "routing.flows_reported": "flow records published (in `flows` events)",
        "routing.polls": "accounting polls (one every flow_stats_interval)",
        "routing.devices_polled": "devices whose counters a poll read (those that moved bytes, and a few in turn)",
    },
)
