"""Decisions about devices: the one way in for permit, deny, blacklist, whitelist and
naming. The CLI, the ws.v1 API and the Guest Board all call these methods; components
react to the 'device' events they publish (routing installs or removes flows, eapol
drops EAPOL, dhcp changes lease times)."""
from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable

from .bus import EventBus
from . import events, routernames, wording
from .macaddr import BadMac, normalize
from .state import Device, StateStore

log = logging.getLogger("homework.devices")

META_LIMIT = 64
# Group decisions: decision -> the state it sets (forget: none); MACs per call.
GROUP_DECISIONS = {"permit": "permitted", "deny": "denied", "blacklist": "blacklisted", "forget": None}
GROUP_LIMIT = 256


class UnknownDevice(LookupError):
    pass


class CannotForget(ValueError):
    pass


def assignable(mac: str) -> str:
    """A MAC a device can have: normalized, unicast and not all zeros. Decisions about
    MACs never seen (pre-approval) check this: a typo like 01:... would never match."""
    mac = normalize(mac)
    first = int(mac[:2], 16)
    if first & 1:
        raise BadMac(f"{mac} is a multicast/broadcast address, not a device's MAC")
    if mac == "00:00:00:00:00:00":
        raise BadMac("00:00:00:00:00:00 is not a device's MAC")
    return mac


def never_seen(device: Device) -> bool:
    """A pre-approved device (decided on before it ever asked for an address)."""
    return device.last_seen == 0


class DeviceRegistry:
    """Besides decisions, bounds what unapproved devices can cost: at most
    `max_pending` pending devices are kept, the oldest first seen going first when a new
    one arrives, and a pending device unseen for `forget_after` seconds is forgotten.
    Forgetting removes the device row and its lease; a 'device' event with
    reason='forgotten' tells the components (DHCP ends the lease, routing drops flows)."""

    def __init__(self, state: StateStore, bus: EventBus, *, max_pending: int = 256,
                 forget_after: float = 86400, clock=time.time,
                 has_live_lease: Callable[[str], bool] = lambda mac: False):
        self.state = state
        self.bus = bus
        self.max_pending = max_pending
        self.forget_after = forget_after
        self.clock = clock
        # Pending devices in the order they were first seen: the cap forgets from the front.
        self._pending: OrderedDict[str, None] = OrderedDict(
            (d.mac, None) for d in state.devices() if d.state == "pending")
        self.forgotten = 0
        self.has_live_lease = has_live_lease    # does this MAC hold a live lease (the lease reader's)?

    def get(self, mac: str) -> Device:
        mac = normalize(mac)
        device = self.state.get_device(mac)
        if device is None:
            raise UnknownDevice(f"no device with MAC {mac} has been seen")
        return device

    def all(self) -> list[Device]:
        return self.state.devices()

    def seen(self, mac: str, hostname: str = "") -> Device:
        before = self.state.get_device(normalize(mac))
        device, created = self.state.touch_device(normalize(mac), hostname, self.clock())
        if before is not None and never_seen(before):
            log.info("pre-approved device %s (%s) seen for the first time: %s", device.mac,
                     hostname or "no hostname", device.state)
        if created:
            log.info("new device %s (%s) asks to join", device.mac, hostname or "no hostname")
            self._pending[device.mac] = None
            self.bus.publish(events.Device(mac=device.mac, state=device.state, old_state=None,
                                           device=device.as_dict(), reason="seen"))
            while len(self._pending) > self.max_pending:
                victim = self._cap_victim()
                log.warning("more than %d pending devices: forgetting %s", self.max_pending, victim)
                self._forget(victim, "pending cap")
        return device

    def _cap_victim(self) -> str:
        """The oldest pending device that holds no live lease (a flood's MACs never finish
        DHCP, a real guest does), else the oldest pending device."""
        for mac in self._pending:
            if not self.has_live_lease(mac):
                return mac
        return next(iter(self._pending))

    def pending_count(self) -> int:
        return len(self._pending)

    def forget(self, mac: str) -> dict:
        """Forget a device: its decision, name, lease and address. A blacklisted device is
        refused: forgetting it would lift the blacklist without anyone saying so."""
        device = self.get(mac)
        if device.state == "blacklisted":
            raise CannotForget(f"{device.mac} is blacklisted: whitelist it first, then forget it")
        self._forget(device.mac, "asked")
        return {"mac": device.mac, "forgotten": True}

    def forget_unseen(self) -> int:
        """Forget pending devices unseen for `forget_after` seconds (oldest first)."""
        limit = self.clock() - self.forget_after
        stale = []
        for mac in self._pending:
            device = self.state.get_device(mac)
            if device is not None and device.last_seen < limit:
                stale.append(mac)
        for mac in stale:
            self._forget(mac, "unseen")
        return len(stale)

    def _forget(self, mac: str, why: str) -> None:
        self._pending.pop(mac, None)
        old = self.state.get_device(mac)
        self.state.forget_device(mac)
        self.state.execute("DELETE FROM preapprovals WHERE mac = ?", (mac,))
        self.forgotten += 1
        log.info("device %s forgotten (%s)", mac, why)
        self.bus.publish(events.Device(mac=mac, state=None, old_state=old.state if old else None,
                                       device={"mac": mac}, reason="forgotten"))

    def _decide(self, mac: str, state: str, allow_unknown: bool = False) -> Device:
        mac = normalize(mac)
        old = self.state.get_device(mac)
        if old is None and not allow_unknown:
            raise UnknownDevice(f"no device with MAC {mac} has been seen")
        device = self._write_decision(mac, state, old)
        log.info("device %s: %s -> %s", mac, old.state if old else None, state)
        return self._announce(device, old)

    def _write_decision(self, mac: str, state: str, old: Device | None) -> Device:
        """The decision's rows: the device's state, and its pre-approval."""
        # A MAC never seen gets a row with first/last seen 0: "known, not yet seen" until
        # its first DHCP request, which then meets the decision at once (no pending stage).
        device = self.state.set_device_state(assignable(mac) if old is None else mac, state,
                                             now=0 if old is None else None)
        if old is None or never_seen(old):
            # a pre-approval trusts the MAC alone: it holds on the first port it is seen on
            self.state.execute("INSERT INTO preapprovals (mac, port) VALUES (?, '') ON CONFLICT(mac) DO NOTHING"
                               if state == "permitted" else "DELETE FROM preapprovals WHERE mac = ?", (mac,))
        else:
            # the household decided about a device it has seen: no pre-approval is left
            self.state.execute("DELETE FROM preapprovals WHERE mac = ?", (mac,))
        return device

    def _announce(self, device: Device, old: Device | None) -> Device:
        """A decision written: the pending list follows it and the components hear of it."""
        if device.state == "pending":
            self._pending.setdefault(device.mac, None)
        else:
            self._pending.pop(device.mac, None)
        self.bus.publish(events.Device(mac=device.mac, state=device.state, old_state=old.state if old else None,
                                       device=device.as_dict(), reason="decision"))
        return device

    def _decide_many(self, macs: list[str], state: str) -> list[Device]:
        """One decision for several checked MACs: their rows in one transaction (all or
        none; a thousand decisions were a thousand commits), one log line, then each
        device's event."""
        olds = {mac: self.state.get_device(mac) for mac in macs}
        try:
            with self.state.transaction():
                written = [self._write_decision(mac, state, olds[mac]) for mac in macs]
        except BaseException:
            self.state.reload_devices(macs)     # the rows rolled back: so do the kept copies
            raise
        changed = [mac for mac, old in olds.items() if old is None or old.state != state]
        log.info("%d devices -> %s (%d changed): %s", len(macs), state, len(changed), " ".join(changed))
        return [self._announce(device, olds[device.mac]) for device in written]

    def preapproval_port(self, mac: str) -> str | None:
        """The port a pre-approved device was first seen on ('' not yet); None: no
        pre-approval stands (the household has decided about it since it was seen)."""
        rows = self.state.execute("SELECT port FROM preapprovals WHERE mac = ?", (mac,))
        return rows[0]["port"] if rows else None

    def check_preapproval(self, mac: str, port: str, same_place: Callable[[str, str], bool]) -> bool:
        """A pre-approved device asks for an address on `port`. The first port it is seen on
        is the one its pre-approval holds on; from another one (`same_place` says which
        count as one: the radios a station roams between) the pre-approval ends: the
        device is pending and asks the household again. False in that case."""
        bound = self.preapproval_port(mac)
        if bound is None or not port:
            return True
        if not bound:
            self.state.execute("UPDATE preapprovals SET port = ? WHERE mac = ?", (port, mac))
            log.info("pre-approved device %s first seen on %s: its pre-approval holds there", mac, port)
            return True
        if bound == port or same_place(bound, port):
            return True
        log.warning("pre-approved device %s asks from %s, not %s where it was first seen: it waits for the "
                    "household", mac, port, bound)
        self._decide(mac, "pending")
        who = wording.name_of(self.state, mac)
        self.bus.publish(events.Alert(mac=mac, kind=events.AlertKind.PREAPPROVAL_MOVED,
                                      detail=wording.sentence(f"{who}, let in before it first joined, asked from "
                                                              f"port {port}, not {bound} where it first joined: it "
                                                              "waits for your decision (another device may be "
                                                              "using its address)"),
                                      data={"port": port, "first_port": bound}))
        return False

    def permit(self, mac: str, allow_unknown: bool = False) -> Device:
        return self._decide(mac, "permitted", allow_unknown)

    def deny(self, mac: str, allow_unknown: bool = False) -> Device:
        return self._decide(mac, "denied", allow_unknown)

    def blacklist(self, mac: str, allow_unknown: bool = True) -> Device:
        # Blacklisting a MAC never seen yet is useful (a known troublemaker), so allowed.
        return self._decide(mac, "blacklisted", allow_unknown)

    def whitelist(self, mac: str) -> Device:
        """Lift a blacklist: the device goes back to asking (pending)."""
        device = self.get(mac)
        if device.state != "blacklisted":
            return device
        return self._decide(mac, "pending")

    def set_meta(self, mac: str, **fields: str | None) -> Device:
        device = self.get(mac)
        clean: dict[str, str] = {}
        for key, value in fields.items():
            if value is None:
                continue
            if not isinstance(value, str) or len(value) > META_LIMIT or any(ord(c) < 0x20 for c in value):
                raise ValueError(f"{key} must be text of at most {META_LIMIT} printable characters")
            if key == "name":
                routernames.check_device_name(value)
            clean[key] = value.strip()
        changed = self.state.set_device_meta(device.mac, **clean)
        if changed is None:
            raise UnknownDevice(f"{device.mac} was forgotten meanwhile")
        device = changed
        self.bus.publish(events.Device(mac=device.mac, state=device.state, old_state=device.state,
                                       device=device.as_dict(), reason="meta"))
        return device

    def decide_group(self, decision: str, macs) -> list[Device | dict]:
        """One decision for several MACs, all or nothing: every MAC is checked
        first (syntax; for forget, known and not blacklisted), then all are applied. A MAC
        not seen yet is pre-approved, as for one MAC."""
        if decision not in GROUP_DECISIONS:
            raise ValueError(f"decision must be one of {', '.join(GROUP_DECISIONS)}, got {decision!r}")
        if not isinstance(macs, list) or not macs:
            raise ValueError("give a non-empty list of MACs")
        if len(macs) > GROUP_LIMIT:
            raise ValueError(f"at most {GROUP_LIMIT} MACs at once, got {len(macs)}")
        wanted: list[str] = []
        for text in macs:
            if not isinstance(text, str):
                raise BadMac(f"not a MAC address: {text!r}")
            mac = normalize(text)
            known = self.state.get_device(mac)
            if known is None:
                if decision == "forget":
                    raise UnknownDevice(f"no device with MAC {mac} has been seen")
                assignable(mac)
            elif decision == "forget" and known.state == "blacklisted":
                raise CannotForget(f"{mac} is blacklisted: whitelist it first, then forget it")
            if mac not in wanted:
                wanted.append(mac)
        if decision == "forget":
            return [self.forget(mac) for mac in wanted]
        state = GROUP_DECISIONS[decision]
        assert state is not None        # every decision but forget sets one
        return list(self._decide_many(wanted, state))

