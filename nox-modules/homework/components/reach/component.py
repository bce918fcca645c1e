"""Reaching in from the internet on the household's terms: port forwards of a device, and
UPnP IGD / NAT-PMP / PCP for the devices the household lets open ports themselves.

What should be open is recomputed from the decisions alone (forwards, "may open ports",
the devices' states, leases, pauses and usage blocks) at once after any change the bus
tells of, and every `[reach] check_interval` seconds (a pause or a usage block that
begins by the clock). Applying runs in a worker (nft, miniupnpd restarts), never in an
event handler; a command returns once its change is applied.
"""
from __future__ import annotations

import ipaddress
import logging
import threading
from pathlib import Path

from ...commands import CommandError, seen_device
from ...component import Component
from ...worker import BatchWorker
from . import plan, upnp
from .access import why_closed
from .forwards import MAX_FORWARDS, ForwardError, ForwardStore, parse_forward
from .plan import OpenForward, Upnp
from .upnp import Mapping, Miniupnpd
from .wan import ipv4_addresses, is_public

log = logging.getLogger("homework.reach")
SSDP_GROUPS = ("239.255.255.250", "ff02::c")


def _nft(text: str) -> tuple[int, str]:
    return upnp.run(["nft", "-f", "-"], text)


def device_name(device, mac: str) -> str:
    if device is None:
        return mac
    return device.name or device.hostname or mac


class Reach(Component):
    name = "reach"

    def __init__(self, ctx, nft=_nft, wan_addresses=ipv4_addresses, daemon: Miniupnpd | None = None):
        super().__init__(ctx)
        cfg = ctx.config
        self.bridge = cfg.bridge
        self.wan = cfg.reach_wan_interface or cfg.wanwatch_interface
        self.nft = nft
        self.wan_addresses = wan_addresses
        self.forwards = ForwardStore(ctx.state)
        self.allowed: dict[str, float] = {r["mac"]: r["since"] for r in
                                          ctx.state.execute("SELECT mac, since FROM open_ports_allowed")}
        self.upnp_address, self.upnp_prefixlen = plan.upnp_address(str(cfg.pool))
        self.daemon = daemon
        if self.daemon is None and cfg.reach_upnp and Miniupnpd.available():
            self.daemon = Miniupnpd(Path(cfg.reach_upnp_run_dir), self._miniupnpd_config)
        self.upnp_error = "" if cfg.reach_upnp and self.daemon is not None else (
            "miniupnpd is not installed (Debian package miniupnpd-nftables)" if cfg.reach_upnp else
            "UPnP is off in the router's configuration ([reach] upnp = false)")
        self._lock = threading.RLock()
        self.closed: dict[str, str] = {}           # MAC -> why its ports are closed ('' = open)
        self._applied: str | None = None           # the last fill script applied
        self._upnp_wanted: dict[str, tuple[str, str | None]] = {}   # MAC -> (ip4, prefix6) allowed now
        self._keep_off: tuple = ()
        self._wan4: list[str] = []
        self._pending: tuple = ([], {}, ())      # what the last check decided: (forwards, upnp, kept off)
        self.set_up = False
        self._worker = BatchWorker("reach-apply", self._apply_batch)

    # -- life cycle -------------------------------------------------------------------------------
    def start(self) -> None:
        cmd = self.ctx.commands.register
        cmd("forwards", self.list_forwards)
        cmd("forward-add", self.add_forward)
        cmd("forward-remove", self.remove_forward)
        cmd("open-ports", self.open_ports)
        cmd("may-open-ports", self.set_may_open_ports)
        cmd("upnp-status", self.upnp_status)
        cmd("upnp-close", self.close_mapping)
        for topic in ("device", "lease", "schedule", "alert", "ipv6_plan"):
            self.ctx.bus.subscribe(topic, self._on_change)
        self.ctx.device_facts.append(self._facts)
        if self.daemon is not None:          # devices' SSDP discovery reaches miniupnpd
            self.ctx.router_groups.update(SSDP_GROUPS)
        self._worker.put("setup")
        self.ctx.every(self.ctx.config.reach_check_interval, self.check)
        self.check()

    def stop(self) -> None:
        self._worker.flush()
        if self.daemon is not None:
            self.daemon.stop()
            upnp.flush_chains()
            upnp.remove_listen_interface()
        self.nft(plan.remove())

    def _on_change(self, topic: str, ev) -> None:
        mac = getattr(ev, "mac", "")        # an ipv6_plan event names no device
        if topic == "device" and ev.state is None and ev.reason == "forgotten":
            self._forgotten(mac)
        elif topic in ("device", "lease", "alert", "schedule") and mac and not self._concerns(mac):
            # a device with nothing open: a DHCP flood or a crowd brings thousands, and each
            # check restarted a miniupnpd that had exited (a crowd's new devices were a
            # fifth of the controller's time)
            return
        self.check()

    def _concerns(self, mac: str) -> bool:
        return mac in self.allowed or mac in self._upnp_wanted or any(f.mac == mac for f in self.forwards.all())

    def _forgotten(self, mac: str) -> None:
        """Forget removes a device altogether: its forwards and its permission go too."""
        with self._lock:
            gone = self.forwards.remove_device(mac)
            if self.allowed.pop(mac, None) is not None:
                self.ctx.state.execute("DELETE FROM open_ports_allowed WHERE mac=?", (mac,))
        if gone:
            log.info("device %s forgotten: its forwards %s removed", mac, ", ".join(f.ports_text for f in gone))

    # -- what should be open now -----------------------------------------------------------------
    def _where(self, mac: str) -> tuple[str | None, str | None]:
        lease = self.ctx.leases.get(mac)
        if lease is None:
            return None, None
        prefix = self.ctx.ipv6.device_prefix(lease.index) if self.ctx.ipv6 is not None else None
        return lease.ip, str(prefix) if prefix is not None else None

    def _why(self, mac: str) -> str:
        device = self.ctx.state.get_device(mac)
        facts: dict = {}
        if device is not None:
            for fact in self.ctx.device_facts:     # the others' facts (pauses, usage blocks), not ours
                if fact != self._facts:
                    facts.update(fact(mac))
        return why_closed(device, self.ctx.leases.get(mac), facts)

    def check(self) -> None:
        """Recompute what should be open; hand any change to the worker."""
        with self._lock:
            macs = {f.mac for f in self.forwards.all()} | set(self.allowed)
            closed = {mac: self._why(mac) for mac in sorted(macs)}
            self.closed = closed
            opened = []
            for f in self.forwards.all():
                if closed.get(f.mac):
                    continue
                ip4, prefix6 = self._where(f.mac)
                if ip4:
                    opened.append(OpenForward(f, ip4, prefix6))
            wanted = {}
            if self.daemon is not None:
                for mac in self.allowed:
                    if not closed.get(mac):
                        wanted[mac] = self._where(mac)
            keep_off = tuple(sorted({(p, f.first, f.last) for f in self.forwards.all() for p in f.protocols}
                                    | {(p, port, port) for (p, port) in self.ctx.wan_services.values()}))
            self._pending = (opened, wanted, keep_off)
        self._worker.put("check")

    def _upnp_plan(self, wanted: dict) -> Upnp | None:
        if self.daemon is None:
            return None
        return Upnp(self.upnp_address, self.ctx.config.reach_upnp_http_port,
                    tuple(ip for ip, _ in wanted.values() if ip), tuple(p for _, p in wanted.values() if p))

    # -- applying (the worker) ---------------------------------------------------------------------
    def _apply_batch(self, jobs: list) -> None:
        if not self.set_up:
            self._setup()
        with self._lock:
            opened, wanted, keep_off = self._pending
        try:
            wan4 = self.wan_addresses(self.wan)
        except OSError:
            wan4 = []
        self._wan4 = wan4
        text = plan.fill(opened, wan4, self._upnp_plan(wanted))
        if text != self._applied:
            rc, out = self.nft(text)
            if rc != 0:
                self.ctx.count("reach.nft_failures")
                log.error("opening/closing ports failed (tried again at the next check): %s", out.strip()[:500])
                self._applied = None
            else:
                self.ctx.count("reach.nft_applied")
                self._applied = text
        if self.daemon is not None:
            self._sync_upnp(wanted, keep_off)

    def _setup(self) -> None:
        upnp_plan = None
        if self.daemon is not None:
            why = upnp.ensure_listen_interface(self.upnp_address, self.upnp_prefixlen)
            if why:
                log.error("UPnP off: %s", why)
                self.upnp_error = why
                self.daemon = None
            else:
                upnp_plan = Upnp(self.upnp_address, self.ctx.config.reach_upnp_http_port, (), ())
        rc, out = self.nft(plan.setup(self.bridge, self.wan, upnp_plan))
        if rc != 0:
            log.error("nftables table %s could not be set up: %s", plan.TABLE, out.strip()[:500])
            return
        self.set_up = True
        log.info("reach: forwards and pinholes from %s%s", self.wan,
                 f"; miniupnpd for allowed devices on {self.upnp_address}" if self.daemon else "")

    def _sync_upnp(self, wanted: dict, keep_off: tuple) -> None:
        """Only the devices allowed now keep mappings: those of a device that lost the
        permission or its access (or moved to another address) end. A change in the ports
        kept off restarts miniupnpd with new permission rules; a dead one is started."""
        daemon = self.daemon
        if daemon is None:
            return
        changed = wanted != self._upnp_wanted or keep_off != self._keep_off
        fresh_rules = keep_off != self._keep_off or not daemon.running()
        self._upnp_wanted, self._keep_off = dict(wanted), keep_off
        if not changed and not fresh_rules:
            return
        allowed4 = {ip for ip, _ in wanted.values() if ip}
        allowed6 = [ipaddress.ip_network(p) for _, p in wanted.values() if p]

        def stray(m: Mapping) -> bool:
            return not _belongs(m, allowed4, allowed6)

        if not fresh_rules and not any(stray(m) for m in daemon.mappings(fresh=True)):
            return
        if daemon.starts:
            self.ctx.count("reach.upnp_restarts")
        for m in daemon.remove(stray):
            log.info("UPnP mapping %s %s -> %s ended: that device may not open ports now", m.protocol, m.port,
                     m.address)
            self.ctx.count("reach.upnp_mappings_ended")

    def _miniupnpd_config(self) -> str:
        cfg = self.ctx.config
        run_dir = Path(cfg.reach_upnp_run_dir)
        return upnp.config_text(wan=self.wan, bridge=self.bridge, http_port=cfg.reach_upnp_http_port,
                                lease4=run_dir / "upnp.leases", lease6=run_dir / "upnp6.leases",
                                uuid_text=upnp.stable_uuid(cfg.state_dir / "upnp-uuid"),
                                keep_off=list(self._keep_off), pool=str(cfg.pool),
                                min_lifetime=cfg.reach_pcp_min_lifetime, max_lifetime=cfg.reach_pcp_max_lifetime)

    def settle(self) -> None:
        """Wait until what the last check decided is applied (commands return after it)."""
        self.check()
        self._worker.flush()

    # -- views ------------------------------------------------------------------------------------
    def _mappings(self) -> list[Mapping]:
        return self.daemon.mappings(self.ctx.now()) if self.daemon is not None else []

    def _owner_of(self, m: Mapping) -> str | None:
        if m.family == 4:
            lease = self.ctx.leases.by_address(m.address)
            return lease.mac if lease else None
        if self.ctx.ipv6 is None:
            return None
        index = self.ctx.ipv6.index_of(m.address)
        lease = self.ctx.leases.by_index(index) if index is not None else None
        return lease.mac if lease else None

    def _forward_view(self, f) -> dict:
        why = self.closed[f.mac] if f.mac in self.closed else self._why(f.mac)
        ip4, prefix6 = self._where(f.mac)
        device = self.ctx.state.get_device(f.mac)
        return {**f.as_dict(), "device": device_name(device, f.mac), "open": not why,
                "why_closed": why, "address": ip4 or "", "ipv6_prefix": prefix6 or ""}

    def _mapping_view(self, m: Mapping, mac: str | None) -> dict:
        device = self.ctx.state.get_device(mac) if mac else None
        return {**m.as_dict(), "mac": mac or "", "device": device_name(device, mac or m.address)}

    def _facts(self, mac: str) -> dict:
        """`may_open_ports`: the household lets it open ports itself; `open_ports`: its
        forwards (open or why not) and the mappings it opened."""
        forwards = [self._forward_view(f) for f in self.forwards.of(mac)]
        mappings = [self._mapping_view(m, mac) for m in self._mappings() if self._owner_of(m) == mac] \
            if mac in self.allowed or mac in self._upnp_wanted else []
        return {"may_open_ports": mac in self.allowed, "open_ports": {"forwards": forwards, "mappings": mappings}}

    # -- commands (CLI, API, board) ---------------------------------------------------------------
    def list_forwards(self, mac=None) -> list[dict]:
        rows = self.forwards.of(seen_device(self.ctx.state, mac)) if mac else self.forwards.all()
        return [self._forward_view(f) for f in rows]

    def add_forward(self, mac=None, ports=None, protocol=None, to_port=None, description=None) -> dict:
        """An external port or range (and protocol) of the WAN to the device's port."""
        mac = seen_device(self.ctx.state, mac)
        try:
            protocol, first, last, to, description = parse_forward(ports, protocol, to_port, description)
        except ForwardError as exc:
            raise CommandError(str(exc)) from None
        with self._lock:
            if len(self.forwards.by_id) >= MAX_FORWARDS:
                raise CommandError(f"The router keeps at most {MAX_FORWARDS} forwards; remove one first.", 409)
            other = self.forwards.clash(protocol, first, last)
            if other is not None:
                who = device_name(self.ctx.state.get_device(other.mac), other.mac)
                raise CommandError(f"Port {other.ports_text} ({other.protocol}) already goes to {who}; "
                                   "remove that forward first.", 409)
            for what, (proto, port) in self.ctx.wan_services.items():
                if first <= port <= last and proto in (("tcp", "udp") if protocol == "both" else (protocol,)):
                    raise CommandError(f"Port {port} ({proto}) is the router's own, for {what}.", 409)
            for m in self._mappings():
                if m.family == 4 and first <= m.port <= last and m.protocol in (
                        ("tcp", "udp") if protocol == "both" else (protocol,)):
                    owner = self._owner_of(m)
                    who = device_name(self.ctx.state.get_device(owner) if owner else None, owner or m.address)
                    raise CommandError(f"Port {m.port} ({m.protocol}) is open by UPnP for {who}; close that "
                                       "mapping first, or untick \"may open ports\" for it.", 409)
            forward = self.forwards.add(mac, protocol, first, last, to, description, self.ctx.now())
        log.info("forward %d: %s %s -> %s port %d", forward.id, protocol, forward.ports_text, mac, to)
        self.settle()
        return self._forward_view(forward)

    def remove_forward(self, id=None) -> dict:
        try:
            forward_id = int(id)
        except (TypeError, ValueError):
            raise CommandError(f"The forward's id must be a number, got {id!r}.") from None
        with self._lock:
            forward = self.forwards.remove(forward_id)
        if forward is None:
            raise CommandError(f"There is no forward {forward_id}.", 404)
        log.info("forward %d removed (%s %s -> %s)", forward.id, forward.protocol, forward.ports_text, forward.mac)
        self.settle()
        return {"removed": forward_id}

    def carry_device(self, old: str, new: str) -> list[str]:
        """A device let in as the device it was: its port forwards (to its new address) and
        whether it may open ports itself move to it."""
        with self._lock:
            moved = self.forwards.remove_device(old)
            for f in moved:
                self.forwards.add(new, f.protocol, f.first, f.last, f.to_port, f.description, f.created)
            allowed = self.allowed.pop(old, None)
            if allowed is not None:
                self.ctx.state.execute("DELETE FROM open_ports_allowed WHERE mac=?", (old,))
                self.ctx.state.execute("INSERT INTO open_ports_allowed (mac, since) VALUES (?, ?) "
                                       "ON CONFLICT (mac) DO NOTHING", (new, allowed))
                self.allowed[new] = allowed
        if not moved and allowed is None:
            return []
        self.settle()
        return (["port forwards"] if moved else []) + (["may open ports"] if allowed is not None else [])

    def set_may_open_ports(self, mac=None, allowed=None) -> dict:
        """The household's tick: may the device open ports itself (UPnP, NAT-PMP, PCP)?
        Never for a pending, denied or blacklisted device."""
        mac = seen_device(self.ctx.state, mac)
        if not isinstance(allowed, bool):
            raise CommandError(f"allowed must be true or false, got {allowed!r}.")
        device = self.ctx.state.get_device(mac)
        assert device is not None           # seen_device: it has been seen
        if allowed and device.state != "permitted":
            raise CommandError(f"{device_name(device, mac)} is {device.state}: only a device let into the "
                               "home may open ports.", 409)
        with self._lock:
            if allowed and mac not in self.allowed:
                now = self.ctx.now()
                self.ctx.state.execute("INSERT INTO open_ports_allowed (mac, since) VALUES (?, ?) "
                                       "ON CONFLICT (mac) DO NOTHING", (mac, now))
                self.allowed[mac] = now
            elif not allowed and mac in self.allowed:
                self.ctx.state.execute("DELETE FROM open_ports_allowed WHERE mac=?", (mac,))
                del self.allowed[mac]
        log.info("%s %s open ports itself", mac, "may" if allowed else "may no longer")
        self.settle()
        return self._facts(mac)

    def open_ports(self, mac=None) -> list[dict]:
        """Every device with something open (or allowed to open): its forwards, its
        mappings, and whether it may open ports itself."""
        if mac:
            mac = seen_device(self.ctx.state, mac)
        mappings = self._mappings()
        owners = {m.key: self._owner_of(m) for m in mappings}
        macs = {f.mac for f in self.forwards.all()} | set(self.allowed) | {o for o in owners.values() if o}
        out = []
        for m in sorted(macs):
            if mac and m != mac:
                continue
            device = self.ctx.state.get_device(m)
            out.append({"mac": m, "device": device_name(device, m), "may_open_ports": m in self.allowed,
                        "forwards": [self._forward_view(f) for f in self.forwards.of(m)],
                        "mappings": [self._mapping_view(x, m) for x in mappings if owners[x.key] == m]})
        return out

    def upnp_status(self) -> dict:
        wan4 = self._wan4
        public = [a for a in wan4 if is_public(a)]
        running = self.daemon is not None and self.daemon.running()
        note = self.upnp_error or (self.daemon.error if self.daemon else "")
        if running and wan4 and not public:
            note = (f"The router's internet address {wan4[0]} is a private one: another router (the ISP's box) "
                    "is in front of it, so miniupnpd cannot open ports (double NAT). Put that box in bridge "
                    "mode, or forward the ports on it to this router.")
        return {"enabled": self.daemon is not None, "running": running, "note": note,
                "wan_addresses": wan4, "address": self.upnp_address if self.daemon else "",
                "http_port": self.ctx.config.reach_upnp_http_port,
                "mappings": [self._mapping_view(m, self._owner_of(m)) for m in self._mappings()]}

    def close_mapping(self, key=None) -> dict:
        """The household closes one mapping on the board (the device may ask again while it
        may open ports)."""
        if not isinstance(key, str) or key not in {m.key for m in self._mappings()}:
            raise CommandError(f"There is no open mapping {key!r}.", 404)
        assert self.daemon is not None          # it listed the mapping
        with self._lock:
            dropped = self.daemon.remove(lambda m: m.key == key)
        self.ctx.count("reach.upnp_restarts")
        log.info("UPnP mapping %s closed by the household", key)
        return {"closed": [m.as_dict() for m in dropped]}


def _belongs(m: Mapping, addresses4: set[str], prefixes6: list) -> bool:
    """Is the mapping for one of these device addresses (IPv4) or /64s (IPv6)?"""
    if m.family == 4:
        return m.address in addresses4
    try:
        return any(ipaddress.ip_address(m.address) in net for net in prefixes6)
    except ValueError:
        return False
