"""Identify's manifest (homework/manifest.py): what devices said about themselves (not
backed up: they say it again), the household's corrections (backed up, each row checked
as the command checks it), the inbox it offers dhcp and routing (what devices' DHCP
messages said, read on its timer), the identity events it publishes, and its counters."""
from __future__ import annotations

from ... import events, rowcheck
from ...interfaces import DeviceSays
from ...manifest import Manifest, NotBackedUp, Settings
from . import correction


def join_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    rowcheck.mac(r["was"])
    rowcheck.number(r.get("joined", 0), "joined")


def identity_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    stored = correction.check(r.get("type", ""), r.get("os", ""), r.get("label", ""))
    if stored != (r.get("type", ""), r.get("os", ""), r.get("label", "")):
        raise ValueError("type, os and label: spaces in a form the router never stores")
    rowcheck.number(r.get("corrected", 0), "corrected")


MANIFEST = Manifest(
    component="identify",
    tables=(
        NotBackedUp("device_evidence", (21,), "devices say it again the next time they ask for an address "
                                              "or announce themselves"),
        Settings("device_identity", (21,), ("mac", "type", "os", "label", "corrected"), identity_row),
        Settings("device_joins", (22,), ("mac", "was", "joined"), join_row),
        NotBackedUp("device_decisions", (24,), "a device's story, not a setting: a restore brings back each "
                                               "device's decision itself, and the story goes on from there"),
        NotBackedUp("device_places", (24,), "a device's story, not a setting: it is where the device is seen next"),
    ),
    routes=("identify",),
    offers=(DeviceSays,),
    publishes=(events.Identity,),
    hears=(events.Device, events.DnsQuery, events.Lease, events.StationAt, events.Timezone),
    counters={
        "identify.evidence": "times a device said something new about itself (a DHCP fingerprint, an announcement)",
        "identify.classified": "classifications made (each new piece of evidence)",
        "identify.corrections": "corrections the household made",
        "identify.joins": "devices back with a new private address let in as the device they were",
        "identify.mdns": "mDNS announcements heard from a device holding a lease",
        "identify.ssdp": "SSDP announcements heard from a device holding a lease",
        "identify.unknown_announcer": "announcements from an address no lease holds (left unread)",
        "identify.inbox_full": "DHCP messages left unread because the inbox held as many devices as it may",
    },
    stays={"device_identity": "the join itself moves the household's correction",
           "device_joins": "the join itself records the old address"},
)
