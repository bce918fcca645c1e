"""Decisions about devices: the one way in for permit, deny, blacklist, whitelist and
naming. The CLI, the ws.v1 API and the Guest Board all call these methods; components
react to the 'device' events they publish (routing installs or removes flows, eapol
drops EAPOL, dhcp changes lease times)."""
from __future__ import annotations

import logging

from .bus import EventBus
from .macaddr import normalize
from .state import Device, StateStore

log = logging.getLogger("homework.devices")

META_LIMIT = 64


class UnknownDevice(LookupError):
    pass


class DeviceRegistry:
    def __init__(self, state: StateStore, bus: EventBus):
        self.state = state
        self.bus = bus

    def get(self, mac: str) -> Device:
        mac = normalize(mac)
        device = self.state.get_device(mac)
        if device is None:
            raise UnknownDevice(f"no device with MAC {mac} has been seen")
        return device

    def all(self) -> list[Device]:
        return self.state.devices()

    def seen(self, mac: str, hostname: str = "") -> Device:
        device, created = self.state.touch_device(normalize(mac), hostname)
        if created:
            log.info("new device %s (%s) asks to join", device.mac, hostname or "no hostname")
            self.bus.publish("device", mac=device.mac, state=device.state, old_state=None,
                             device=device.as_dict(), reason="seen")
        return device

    def _decide(self, mac: str, state: str, allow_unknown: bool = False) -> Device:
        mac = normalize(mac)
        old = self.state.get_device(mac)
        if old is None and not allow_unknown:
            raise UnknownDevice(f"no device with MAC {mac} has been seen")
        device = self.state.set_device_state(mac, state)
        old_state = old.state if old else None
        log.info("device %s: %s -> %s", mac, old_state, state)
        self.bus.publish("device", mac=mac, state=state, old_state=old_state,
                         device=device.as_dict(), reason="decision")
        return device

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

    def set_meta(self, mac: str, **fields: str) -> Device:
        device = self.get(mac)
        clean = {}
        for key, value in fields.items():
            if value is None:
                continue
            if not isinstance(value, str) or len(value) > META_LIMIT or any(ord(c) < 0x20 for c in value):
                raise ValueError(f"{key} must be text of at most {META_LIMIT} printable characters")
            clean[key] = value.strip()
        device = self.state.set_device_meta(device.mac, **clean)
        self.bus.publish("device", mac=device.mac, state=device.state, old_state=device.state,
                         device=device.as_dict(), reason="meta")
        return device
