"""DHCP's manifest (homework/manifest.py): the leases and the address holds it keeps,
the lease events and alerts it publishes, and its counters."""
from __future__ import annotations

from ... import events
from ...interfaces import DeviceSays
from ...leases import LeaseReader
from ...manifest import Manifest, NotBackedUp

K = events.AlertKind

MANIFEST = Manifest(
    component="dhcp",
    tables=(
        NotBackedUp("leases", (1, 2), "a restored router hands out addresses afresh; devices ask again"),
        NotBackedUp("quarantine", (3,), "holds on address blocks end with the leases they guard"),
    ),
    offers=(LeaseReader,),
    needs={"said": DeviceSays},
    publishes=(events.Lease, events.Alert),
    hears=(events.Device, events.Ipv6Plan, events.StationAt),
    alerts=(K.DHCP_FLOOD, K.DHCP_RELAY, K.DHCP_PORT_MISMATCH, K.DHCP_RELEASE_FORGED, K.DHCP_DECLINE_FORGED),
    counters={
        "dhcp.offers": "OFFERs sent (by the controller or homework-dhcpd)",
        "dhcp.acks": "ACKs sent (by the controller or homework-dhcpd)",
        "dhcp.naks": "NAKs sent (a REQUEST for an address that is not the device's)",
        "dhcp.informs": "INFORMs answered",
        "dhcp.releases": "RELEASEs taken",
        "dhcp.declines": "DECLINEs taken (the address was in use: its block is held back)",
        "dhcp.ignored": "messages not for us or from a blacklisted device",
        "dhcp.exhausted": "new devices refused because the pool had no free block",
        "dhcp.new_mac_limited": "new devices held back by a port's new-MAC limit",
        "dhcp.spoofed_source": "messages whose Ethernet source is not the client MAC they carry",
        "dhcp.relay_refused": "relayed messages from an agent not listed, or for a lease on our own ports",
        "dhcp.wrong_port": "requests for a lease from another port than it is bound to",
        "dhcp.forgotten_watched": "forgotten devices watched while they may still believe in their lease",
        "dhcp.forgotten_came_back": "devices that believed in a lease ours had ended: pending again on their address",
        "dhcp.forgotten_renewal_naks": "renewals of forgotten devices NAKed (they start over as new devices)",
        "dhcp.leases_cut_short": "leases of devices no longer permitted cut short to a pending lease at start",
        "dhcp.roamed": "leases that moved with a station from one satellite radio to another",
        "dhcp.roamed_by_radio": "leases moved because a radio heard the station roam",
        "dhcp.moved_acks": "ACKs of a lease that moved port, sent after its new flows",
        "dhcp.malformed": "messages from the fast path that could not be parsed",
        "dhcp.errors": "fast-path messages whose handling raised (logged)",
        "dhcp.fast_path_in": "requests read from the bridge's LOCAL socket",
        "dhcp.fast_path_out": "replies sent on the LOCAL socket",
        "dhcp.fast_path_unmarked": "requests on the LOCAL socket without the switch's in_port mark",
        "dhcp.fast_path_send_failed": "replies the LOCAL socket failed to send",
        "dhcp.router_address_writes": "router .1 addresses added to the bridge for a new lease",
        "dhcp.router_address_spares_taken": "new leases whose router address was already up as a spare",
        "dhcp.dhcpd_new_offers": "offers homework-dhcpd made to never-seen devices from its reserved blocks",
        "dhcp.dhcpd_offers_taken": "new leases homework-dhcpd ACKed itself",
        "dhcp.dhcpd_late": "homework-dhcpd notes about a lease the controller had already ended",
        "dhcp.dhcpd_punted": "requests homework-dhcpd handed to the controller",
        "dhcp.dhcpd_bad_claim": "claims by homework-dhcpd that named no reserved block",
        "dhcp.dhcpd_claim_refused": "claims by homework-dhcpd refused (the device is known or decided)",
        "dhcp.withdrawn_offer_naks": "NAKs to a REQUEST for homework-dhcpd's offer that the controller did not keep",
        "dhcp.dhcpd_bad_message": "lines from homework-dhcpd that could not be read",
        "dhcp.dhcpd_restarts": "times homework-dhcpd was started again",
    },
)
