"""Reach's manifest (homework/manifest.py): port forwards and the "may open ports" ticks
(backed up, each row checked with the forwards' own validator), what it hears to close
and open ports, and its counters."""
from __future__ import annotations

from ... import events, rowcheck
from ...manifest import Manifest, Settings
from .forwards import parse_forward


def forward_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    for key in ("first", "last", "to_port"):
        rowcheck.number(r[key], key, 1, 65535, whole=True)
    ports = str(r["first"]) if r["first"] == r["last"] else f"{r['first']}-{r['last']}"
    *_, description = parse_forward(ports, r["protocol"], r["to_port"], r.get("description"))
    if description != r.get("description", ""):
        raise ValueError("description: surrounding spaces")
    rowcheck.number(r.get("created", 0), "created")


def allowed_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    rowcheck.number(r.get("since", 0), "since")


MANIFEST = Manifest(
    component="reach",
    tables=(
        Settings("port_forwards", (16,), ("mac", "protocol", "first", "last", "to_port", "description", "created"),
                 forward_row, left_out={"id": "row ids are given anew"}),
        Settings("open_ports_allowed", (16,), ("mac", "since"), allowed_row),
    ),
    routes=("reach",),
    hears=(events.Device, events.Lease, events.Schedule, events.Alert, events.Ipv6Plan),
    counters={
        "reach.nft_applied": "times the open ports were rewritten in nftables (a forward, a device's access, "
                             "the WAN address or the allowed devices changed)",
        "reach.nft_failures": "times nftables refused that rewrite (tried again at the next check)",
        "reach.upnp_restarts": "times miniupnpd was restarted (to end mappings, or with new permission rules)",
        "reach.upnp_mappings_ended": "UPnP/NAT-PMP/PCP mappings ended because their device may no longer open ports",
    },
    carries={"port_forwards": "port forwards", "open_ports_allowed": "may open ports itself (UPnP, NAT-PMP, PCP)"},
)
