"""Remote access over WireGuard: a household device away from home.

The household adds it on the board ("away from home"): the router makes its keys, a MAC
and a veth in the away namespace (away.py), and starts its DHCP client there, so it asks to
join like any device: it is pending, with its own /30 and /64, until someone lets it in.
From then on every rule that applies to a device at home applies to it (DNS rules,
schedules, priorities, usage and limits): to the router it is a device on a switch port.
Its WireGuard configuration (a file and a QR code) names its addresses, the router's key
and where to reach the router; the router's WireGuard port is the only opening this adds
on the WAN (`remote_input` in scripts/router-net.sh's table). The board shows where it
connects from (WireGuard's endpoint and latest handshake).

Forgetting the device on the board removes it altogether: peer, veth, DHCP client, keys.
"""
from __future__ import annotations

import logging
import secrets
import threading
import time
from pathlib import Path

from ...commands import CommandError, seen_device
from ...component import Component
from ...qrsvg import qr_svg
from ..reach.wan import ipv4_addresses, is_public
from . import clientconf
from .away import Away, host_address, run
from .store import NAME_LIMIT, RemoteStore
from .tunnel import PeerState, Tunnel
from ... import nftplan

log = logging.getLogger("homework.remote")

MAX_REMOTE = 32                   # remote devices at most (each is a veth and a DHCP client)
CONNECTED_WITHIN = 180            # a handshake this recent: connected now (WireGuard rekeys every 2 min)
ADDRESS_WAIT = 20.0               # seconds remote-add waits for the device's first lease


def parse_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise CommandError("Give the device a name, e.g. \"Dad's phone\".")
    name = name.strip()
    if len(name) > NAME_LIMIT or any(ord(c) < 0x20 for c in name):
        raise CommandError(f"The name must be text of at most {NAME_LIMIT} printable characters.")
    return name


class Remote(Component):
    name = "remote"

    def __init__(self, ctx):
        super().__init__(ctx)
        cfg = ctx.config
        self.store = RemoteStore(ctx.state)
        self.run_dir = Path(cfg.remote_run_dir)
        self.away = Away(self.run_dir, cfg.bridge, cfg.datapath_type)
        self.away.wg = cfg.remote_interface
        self.tunnel = Tunnel(cfg.remote_interface, cfg.remote_backend, self.run_dir)
        self.port = cfg.remote_listen_port
        self.wan = cfg.wanwatch_interface
        ctx.wan_services["remote access (WireGuard)"] = ("udp", self.port)
        self.error = ""
        self.ready = threading.Event()
        self._lock = threading.RLock()
        self.states: dict[str, PeerState] = {}       # public key -> what WireGuard says of it

    # -- life cycle -------------------------------------------------------------------------------
    def start(self) -> None:
        cmd = self.ctx.commands.register
        cmd("remote-add", self.add)
        cmd("remote-list", self.list)
        cmd("remote-config", self.config)
        cmd("remote-status", self.status)
        self.ctx.bus.subscribe("lease", self._on_lease)
        self.ctx.bus.subscribe("device", self._on_device)
        self.ctx.bus.subscribe("ipv6_plan", lambda topic, ev: self._reroute_all())
        self.ctx.device_facts.append(self._facts)
        threading.Thread(target=self._setup, daemon=True, name="remote-setup").start()
        self.ctx.every(self.ctx.config.remote_check_interval, self.check)

    def _setup(self) -> None:
        with self._lock:
            why = self.away.start() or self.tunnel.start(self.away, self.store.router_key, self.port)
            if why:
                self.error = why
                log.error("remote access off: %s", why)
                self.ready.set()
                return
            self._open_port(True)
            for peer in self.store.peers.values():
                self._plumb(peer)
            self.ready.set()

    def stop(self) -> None:
        with self._lock:
            self._open_port(False)
            self.tunnel.stop(self.away)
            for peer in self.store.peers.values():
                self.away.remove_device(peer.index, self._ovs_env())
            self.away.stop()

    def _open_port(self, on: bool) -> None:
        where = f"{nftplan.ROUTER.family} {nftplan.ROUTER.name}"
        chain = nftplan.ROUTER.chain("remote_input").name
        text = f"add table {where}\nadd chain {where} {chain}\nflush chain {where} {chain}\n"
        if on:
            text += f'add rule {where} {chain} udp dport {self.port} accept comment "remote access"\n'
        rc, out = run(["nft", "-f", "-"], text)
        if rc != 0:
            log.error("cannot %s the WireGuard port: %s", "open" if on else "close", out.strip()[:300])

    @staticmethod
    def _ovs_env() -> dict:
        import os
        return {k: v for k, v in os.environ.items() if k.startswith("OVS_")}

    def _plumb(self, peer) -> str:
        """The peer in WireGuard and its veth with its DHCP client (caller holds the lock)."""
        why = self.tunnel.set_peer(self.away, peer.public_key, peer.preshared_key, self._allowed(peer.mac))
        why = why or self.away.add_device(peer.index, peer.mac, peer.name, self._ovs_env())
        if why:
            log.error("remote device %s: %s", peer.name, why)
        self._route(peer)
        return why

    # -- where each remote device is ---------------------------------------------------------------
    def _lease_of(self, mac: str):
        lease = self.ctx.leases.get(mac)
        return lease if lease is not None and lease.active and lease.local else None

    def _prefix6(self, lease) -> str | None:
        prefix = self.ctx.ipv6.device_prefix(lease.index) if self.ctx.ipv6 is not None and lease else None
        return str(prefix) if prefix is not None else None

    def _allowed(self, mac: str) -> list[str]:
        lease = self._lease_of(mac)
        if lease is None:
            return []
        prefix = self._prefix6(lease)
        return [f"{lease.ip}/32"] + ([prefix] if prefix else [])

    def _route(self, peer) -> None:
        lease = self._lease_of(peer.mac)
        why = self.away.route(peer.index, lease.ip if lease else None, lease.router if lease else None,
                              self._prefix6(lease))
        why = why or self.tunnel.set_peer(self.away, peer.public_key, peer.preshared_key, self._allowed(peer.mac))
        if why:
            log.error("remote device %s: %s", peer.name, why)

    def _on_lease(self, topic: str, ev) -> None:
        lease = ev.lease
        peer = self.store.peers.get(lease.mac) if lease is not None else None
        if peer is None or not self.ready.is_set() or self.error:
            return
        # off the DHCP path: the routes follow in a moment (the ACK is out already)
        threading.Thread(target=self._route_locked, args=(peer,), daemon=True).start()

    def _route_locked(self, peer) -> None:
        with self._lock:
            if peer.mac in self.store.peers:
                self._route(peer)

    def _reroute_all(self) -> None:
        for peer in list(self.store.peers.values()):
            threading.Thread(target=self._route_locked, args=(peer,), daemon=True).start()

    def _on_device(self, topic: str, ev) -> None:
        if ev.reason == "forgotten" and ev.mac in self.store.peers:
            threading.Thread(target=self._remove, args=(ev.mac,), daemon=True).start()

    def _remove(self, mac: str) -> None:
        with self._lock:
            peer = self.store.remove(mac)
            if peer is None:
                return
            self.tunnel.remove_peer(self.away, peer.public_key)
            self.away.remove_device(peer.index, self._ovs_env())
        log.info("remote device %s (%s) removed with its keys", peer.name, mac)

    def check(self) -> None:
        """Where each remote device connects from (one `wg show` while there are any)."""
        if not self.store.peers or not self.ready.is_set() or self.error:
            return
        self.states = self.tunnel.peers(self.away)
        if not self.tunnel.running():
            self.error = "the WireGuard interface is gone (wireguard-go exited); restart the controller"
            log.error("%s", self.error)

    # -- views ------------------------------------------------------------------------------------
    def _connection(self, peer) -> dict:
        st = self.states.get(peer.public_key)
        seen = st.latest_handshake if st else 0.0
        return {"connected": bool(seen) and time.time() - seen < CONNECTED_WITHIN,
                "endpoint": st.endpoint if st else "", "last_handshake": seen,
                "received": st.rx if st else 0, "sent": st.tx if st else 0}

    def _facts(self, mac: str) -> dict:
        """`away`: where a device away from home connects from. Its MAC is the router's
        making, not a randomised one, and its switch port is a veth, not a socket in the
        wall: the board says neither."""
        peer = self.store.peers.get(mac)
        if peer is None:
            return {}
        return {"away": self._connection(peer), "private": False, "attached": None}

    def _view(self, peer) -> dict:
        lease = self._lease_of(peer.mac)
        device = self.ctx.state.get_device(peer.mac)
        return {**peer.as_dict(), "state": device.state if device else "forgotten",
                "file_name": clientconf.file_name(peer.name),
                "address": lease.ip if lease else "", "ipv6_prefix": self._prefix6(lease) or "",
                **self._connection(peer)}

    def _endpoint_host(self) -> str:
        if self.ctx.config.remote_endpoint:
            return self.ctx.config.remote_endpoint
        try:
            addresses = ipv4_addresses(self.wan)
        except OSError:
            addresses = []
        public = [a for a in addresses if is_public(a)]
        return (public or addresses or [""])[0]

    # -- commands ---------------------------------------------------------------------------------
    def add(self, name=None, owner=None) -> dict:
        """A device away from home: keys, a MAC, its place in the away namespace; once its
        DHCP client has its address (it is then pending on the board), its configuration."""
        name = parse_name(name)
        if owner is not None and (not isinstance(owner, str) or len(owner) > NAME_LIMIT):
            raise CommandError(f"The owner must be text of at most {NAME_LIMIT} characters.")
        self.ready.wait(30)
        if self.error:
            raise CommandError(f"Remote access is not working on this router: {self.error}", 503)
        with self._lock:
            if len(self.store.peers) >= MAX_REMOTE:
                raise CommandError(f"The router keeps at most {MAX_REMOTE} devices away from home; forget one "
                                   "first.", 409)
            mac = self._new_mac()
            peer = self.store.add(mac, name, self.ctx.now())
            why = self._plumb(peer)
        if why:
            self._remove(mac)
            raise CommandError(f"The device could not be made: {why}", 500)
        deadline = time.monotonic() + ADDRESS_WAIT
        while self._lease_of(mac) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._lease_of(mac) is None:
            raise CommandError(f"{name} was made but has no address yet; try its configuration again in a "
                               "minute.", 503)
        self.ctx.devices.set_meta(mac, name=name, owner=owner or None)
        log.info("remote device %s (%s) added: pending until the household lets it in", name, mac)
        with self._lock:
            self._route(peer)
        return self.config(mac)

    def _new_mac(self) -> str:
        """A locally administered unicast MAC no device has: 02:68:77:72:xx:xx."""
        for _ in range(1000):
            mac = "02:68:77:72:" + ":".join(f"{b:02x}" for b in secrets.token_bytes(2))
            if self.ctx.state.get_device(mac) is None and mac not in self.store.peers:
                return mac
        raise CommandError("No free MAC for a remote device.", 500)

    def list(self) -> list[dict]:
        return [self._view(p) for p in sorted(self.store.peers.values(), key=lambda p: p.index)]

    def config(self, mac=None) -> dict:
        """Its WireGuard configuration (the file's text and name) and a QR code of it."""
        mac = seen_device(self.ctx.state, mac)
        peer = self.store.peers.get(mac)
        if peer is None:
            raise CommandError(f"{mac} is not a device away from home.", 404)
        lease = self._lease_of(mac)
        if lease is None:
            raise CommandError(f"{peer.name} has no address now (is it blacklisted?); its configuration needs "
                               "one.", 409)
        prefix = self._prefix6(lease)
        address6 = host_address(prefix) if prefix else None
        host = self._endpoint_host()
        if not host:
            raise CommandError("The router has no address on the internet now: set [remote] endpoint to "
                               "the name it is reached at.", 503)
        from .keys import public_of
        text = clientconf.config_text(
            name=peer.name, private_key=peer.private_key, address4=lease.ip, address6=address6,
            dns=[lease.router] + ([host_address(prefix, 1)] if prefix else []),
            router_public_key=public_of(self.store.router_key), preshared_key=peer.preshared_key,
            endpoint=clientconf.endpoint_text(host, self.port))
        return {**self._view(peer), "config": text, "qr_svg": qr_svg(text)}

    def status(self) -> dict:
        return {"backend": self.tunnel.kind, "listen_port": self.port, "endpoint": self._endpoint_host(),
                "running": self.ready.is_set() and not self.error and self.tunnel.running(), "error": self.error,
                "away_namespace_pid": self.away.pid, "interface": self.tunnel.ifname, "devices": len(self.store.peers)}
