"""The localnames component: keeps dnsmasq's hosts file in step with the devices.

Only permitted devices with a live lease are named: a pending device's DHCP hostname
cannot squat a name (say "nas") before anyone has let it in, and pending devices get the
gateway's address from dnsd for every name anyway. The file is rewritten after lease and
device events (permit, deny, name change, forget), at start, and every RECONCILE_SECONDS
as a safety net. A renewal that changes nothing named (same address and hostname, or a
device that is not named) is not a change: a home of a thousand devices renews about
one lease a second, and each pass looks at every device.

Events only mark the names stale; one pass every SETTLE_SECONDS works them out again. A
DHCP flood brings thousands of lease events a second.
"""
from __future__ import annotations

import threading

from ...component import Component
from .hostsfile import domains_of, fqdn, render, write_atomically
from .labels import assign, candidate

RECONCILE_SECONDS = 600.0
SETTLE_SECONDS = 0.5


class LocalNamesComponent(Component):
    name = "localnames"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._lock = threading.Lock()
        self.directory = ctx.config.localnames_hosts_dir
        self.domains = domains_of(ctx.config.dns_local_domains)
        self.names: dict[str, tuple[str, str]] = {}     # mac -> (label, IPv4 address)
        self._written: str | None = None
        self._leased: dict[str, tuple[str, str]] = {}   # mac -> (address, DHCP hostname) at the last pass
        self._stale = False
        self._refreshed_at = 0.0

    def start(self) -> None:
        self.ctx.bus.subscribe("device", self._on_event)
        self.ctx.bus.subscribe("lease", self._on_event)
        self.ctx.device_facts.append(self._facts)
        self.ctx.commands.register("local-names", self.table)
        self.ctx.every(SETTLE_SECONDS, self.tick)
        self.refresh()
        self._stale = True        # again once every component has started (DHCP's leases)

    def _on_event(self, topic: str, ev) -> None:
        """Only what can change a name marks the names stale: news of a device named at the
        last pass, or of one permitted (or no longer). A crowd of pending devices arriving
        (their leases, their "seen") changes no name, and cost a pass over every device
        each SETTLE_SECONDS while it came."""
        known = self._leased.get(ev.mac)
        if known is None:
            if "permitted" not in (ev.state, ev.old_state if topic == "device" else None):
                return                       # not named, and no decision came with it
        elif topic == "lease" and ev.action == "renewed" and known == (ev.lease.ip, ev.lease.hostname):
            return                           # renewed as it was
        self._stale = True

    def tick(self) -> None:
        if self._stale or self.ctx.now() - self._refreshed_at >= RECONCILE_SECONDS:
            self.refresh()

    def refresh(self) -> None:
        """Work out every label again and write the file if it changed."""
        self._stale = False
        self._refreshed_at = self.ctx.now()
        leases = self.ctx.leases
        claims, addresses, leased = [], {}, {}
        for device in self.ctx.state.devices():
            if device.state != "permitted":
                continue
            lease = leases.get(device.mac)
            if lease is None or not lease.active or not lease.ip:
                continue
            leased[device.mac] = (lease.ip, lease.hostname)
            claim = candidate(device.mac, device.name, device.hostname or lease.hostname, device.first_seen)
            if claim is not None:
                claims.append(claim)
                addresses[device.mac] = lease.ip
        labels = assign(claims)
        self._leased = leased
        with self._lock:
            self.names = {mac: (label, addresses[mac]) for mac, label in labels.items()}
            text = render({ip: label for label, ip in self.names.values()}, self.domains)
            if text == self._written:
                return
            try:
                write_atomically(self.directory, text)
            except OSError as exc:
                self.ctx.count("localnames.write_failures")
                self.log.error("cannot write %s/: %s (local names are stale)", self.directory, exc)
                return
            self._written = text
            self.ctx.count("localnames.writes")
        self.log.info("local names: %d devices named", len(labels))

    def _facts(self, mac: str) -> dict:
        entry = self.names.get(mac)
        return {"dns_name": fqdn(entry[0], self.domains) if entry else None}

    def table(self) -> list[dict]:
        """The `local-names` command (CLI `homework names`, GET /ws.v1/local-names)."""
        rows = [{"label": label, "name": fqdn(label, self.domains), "mac": mac, "ip": ip}
                for mac, (label, ip) in self.names.items()]
        return sorted(rows, key=lambda row: row["label"])
