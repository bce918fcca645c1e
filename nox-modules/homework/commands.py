"""The controller's command table: one place that names every operation the CLI (over
the control socket) and the ws.v1 API may call. Components add theirs at start()."""
from __future__ import annotations

import contextlib
from collections.abc import Callable

from .devices import CannotForget, UnknownDevice
from .pairing import PairingError
from .state import StorageError
from .macaddr import BadMac, normalize
from .restart import back_in


class CommandError(Exception):
    """A command was called wrongly (bad argument, unknown device); the message says why."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def seen_device(state, mac) -> str:
    """A command's MAC argument in the router's form, for a device the router has seen:
    400 for a malformed MAC, 404 for one never seen."""
    try:
        mac = normalize(str(mac))
    except BadMac as exc:
        raise CommandError(str(exc)) from None
    if state.get_device(mac) is None:
        raise CommandError(f"no device with MAC {mac} has been seen", 404)
    return mac


class Commands:
    def __init__(self):
        self._table: dict[str, Callable] = {}
        # Run after every command, before it answers: a component that applied the
        # command's events without waiting for a daemon waits here, once per command (a
        # group decision's hundreds of events then cost one round trip, not one each).
        self.settlers: list[Callable[[], None]] = []
        # Entered around every command: a component whose messages to a daemon, made by
        # the command's events, go out together when it ends (a group decision's hundreds).
        self.scopes: list[Callable[[], contextlib.AbstractContextManager]] = []
        # Commands that only read: called without the scopes and settlers (they change
        # nothing to wait for). The board's view of a device reads usage-today on every
        # device event; settling there waited for homework-dnsd and the captive sets once
        # per event, which held a crowd's bookings to about ten a second.
        self._reads: set[str] = set()

    def register(self, name: str, fn: Callable, *, reads_only: bool = False) -> None:
        if name in self._table:
            raise ValueError(f"command {name!r} registered twice")
        self._table[name] = fn
        if reads_only:
            self._reads.add(name)

    def names(self) -> list[str]:
        return sorted(self._table)

    def call(self, name: str, /, **kwargs):  # positional-only: commands may take a `name` argument
        fn = self._table.get(name)
        if fn is None:
            raise CommandError(f"unknown command {name!r}", 404)
        try:
            if name in self._reads:
                return fn(**kwargs)
            with contextlib.ExitStack() as scopes:
                for scope in self.scopes:
                    scopes.enter_context(scope())
                result = fn(**kwargs)
            for settle in self.settlers:
                settle()
            return result
        except TypeError as exc:
            raise CommandError(f"{name}: {exc}") from None
        except UnknownDevice as exc:
            raise CommandError(str(exc), 404) from None
        except CannotForget as exc:
            raise CommandError(str(exc), 409) from None
        except StorageError as exc:       # disk full: the change was not saved, say so
            raise CommandError(str(exc), 503) from None
        except (BadMac, ValueError) as exc:
            raise CommandError(str(exc)) from None


def register_core_commands(core) -> None:
    devices = core.devices
    cmd = core.commands

    ctx = core.ctx     # read ctx.leases at call time: the core puts dhcp's reader there as it loads the components

    def lease_view(lease) -> dict:
        """A lease as the CLI and API show it, with its IPv6 /64 when devices have IPv6."""
        view = lease.as_dict()
        prefix = ctx.ipv6.device_prefix(lease.index) if ctx.ipv6 is not None and lease.local else None
        if prefix is not None:
            view["ipv6_prefix"] = str(prefix)
        return view

    def device_view(device) -> dict:
        view = device.as_dict()
        lease = ctx.leases.get(device.mac)
        view["lease"] = lease_view(lease) if lease else None
        view.update(ctx.facts_about(device.mac))
        return view

    def satellites(fn):
        """A pairing call (pairing.py) with its own status codes kept."""
        def call(**kwargs):
            try:
                return fn(**kwargs)
            except PairingError as exc:
                raise CommandError(str(exc), exc.status) from None
        return call

    pairing = core.pairing

    def decided(fn):
        """A household decision on a satellite; if it changes which found cables there are
        (pairing.py), the controller restarts to take or give back their ports. A port
        given back leaves its demux bridge for the router's bridge once this process has
        stopped, before the next one starts."""
        def call(dpid, **kw):
            answer = fn(dpid, **kw)
            if pairing.cables_changed() and ctx.restart is not None:
                wanted = {c[1] for c in pairing.found_cables()}
                gone = [s for s in core.config.satellites if s.found and s.dpid not in wanted]

                def give_back():
                    for sat in gone:
                        core.give_back_port(sat, core.config.bridge)
                ctx.restart(f"satellite {answer.get('dpid', '')} {answer.get('state', 'forgotten')}: its cable "
                            "changes", then=give_back if gone else None)
                answer = {**answer, "restarting": True, "back_in": back_in(ctx.restart)}
            return answer
        return satellites(call)

    cmd.register("satellite-pair", satellites(lambda dpid, csr: pairing.pair_directly(dpid, csr)))
    cmd.register("satellite-request", satellites(
        lambda dpid, csr, origin=None, uplink="", requester="": pairing.request(dpid, csr, origin, uplink,
                                                                               requester)))
    cmd.register("satellite-ticket", satellites(lambda dpid, ticket: pairing.status(dpid, ticket)))
    cmd.register("satellites", lambda: pairing.all())
    cmd.register("satellite-permit", decided(pairing.permit))     # (dpid, code=None)
    cmd.register("satellite-deny", decided(pairing.deny))
    cmd.register("satellite-forget", decided(pairing.forget))
    cmd.register("devices", lambda: [device_view(d) for d in devices.all()])
    cmd.register("status", lambda mac=None: device_view(devices.get(mac)) if mac
                 else [device_view(d) for d in devices.all() if d.state == "permitted"])
    # allow_unknown: a MAC not seen yet is pre-approved, as blacklist always did.
    cmd.register("permit", lambda mac: device_view(devices.permit(mac, allow_unknown=True)))
    cmd.register("deny", lambda mac: device_view(devices.deny(mac, allow_unknown=True)))
    cmd.register("blacklist", lambda mac: device_view(devices.blacklist(mac)))
    cmd.register("whitelist", lambda mac: device_view(devices.whitelist(mac)))
    cmd.register("forget", lambda mac: devices.forget(mac))
    # one decision for a list of MACs, all or nothing (devices.decide_group)
    cmd.register("decide-group", lambda decision, macs: [r if isinstance(r, dict) else device_view(r)
                                                         for r in devices.decide_group(decision, macs)])
    cmd.register("blacklist-status", lambda: [device_view(d) for d in devices.all() if d.state == "blacklisted"])
    cmd.register("set-meta", lambda mac, name=None, owner=None, type=None:
                 device_view(devices.set_meta(mac, name=name, owner=owner, type=type)))
    cmd.register("dhcp-status", lambda: [lease_view(lease) for lease in ctx.leases.active()])
    cmd.register("leases", lambda: [lease_view(lease) for lease in ctx.leases.all()])
    cmd.register("stats", lambda: {**core.counters.snapshot(),
                                   "devices": {"pending": devices.pending_count(),
                                               "forgotten": devices.forgotten}})
