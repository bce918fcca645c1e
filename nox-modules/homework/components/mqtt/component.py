"""The mqtt component: keeps each device's topics on the broker up to date from the bus
(device decisions and names, leases, bandwidth), passes on notifications (notify), and,
if `mqtt.accept_commands`, applies permit/deny from `{prefix}/device/ID/set`. Who may
publish there is the broker's ACL's job (only the admin role's MQTT user): the controller
cannot tell who published a message."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from ...commands import CommandError
from ...component import Component
from . import topics
from ...interfaces import BrokerStatus


class BrokerLink(Protocol):
    """What the component needs of its broker connection (link.PahoLink; a fake in tests)."""
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def publish(self, topic: str, payload: str, retain: bool = True) -> None: ...
    def subscribe(self, topic: str) -> None: ...


class Mqtt(Component):
    name = "mqtt"

    def __init__(self, ctx, link_factory=None):
        super().__init__(ctx)
        cfg = ctx.config
        self.prefix = cfg.mqtt_topic_prefix
        self.disc = cfg.mqtt_discovery_prefix
        self.accept_commands = cfg.mqtt_accept_commands
        self.traffic: dict[str, list[int]] = {}      # mac -> [rx, tx] bytes since start
        self._announced: dict[str, str] = {}         # mac -> the name its discovery carries
        self._link_factory = link_factory or self._paho
        self.link: BrokerLink | None = None

    def offer(self, interface: type) -> object:
        if interface is BrokerStatus:
            return self
        return super().offer(interface)

    def connected(self) -> bool:
        """BrokerStatus: is the broker connected now?"""
        return bool(getattr(self.link, "connected", False))

    def _paho(self, on_connect, on_message):
        from .link import PahoLink
        cfg = self.ctx.config
        password = Path(cfg.mqtt_password_file).read_text().strip() if cfg.mqtt_password_file else ""
        return PahoLink(cfg.mqtt_host, cfg.mqtt_port, cfg.mqtt_username, password, self.prefix,
                        on_connect, on_message)

    def start(self) -> None:
        if not self.ctx.config.mqtt_host:
            self.log.info("mqtt: no broker configured (mqtt.host)")
            return
        self.link = self._link_factory(self._on_connect, self._on_message)
        for topic in ("device", "lease", "bandwidth"):
            self.ctx.bus.subscribe(topic, self._on_event)
        self.ctx.bus.subscribe("notification", self._on_notification)
        self.link.start()

    def _started(self) -> BrokerLink:
        """The broker link: every handler that publishes is subscribed only once it exists."""
        assert self.link is not None
        return self.link

    def stop(self) -> None:
        if self.link is not None:
            self.link.stop()

    # -- out --------------------------------------------------------------------------------
    def _on_connect(self) -> None:
        """(Re)connected: a fresh broker may have lost the retained messages."""
        self._announced.clear()
        for device in self.ctx.devices.all():
            self.publish_device(device.mac)
        if self.accept_commands:
            self._started().subscribe(topics.command_filter(self.prefix))

    def _on_event(self, topic: str, ev) -> None:
        mac = ev.mac
        if not mac:
            return
        if topic == "bandwidth":
            t = self.traffic.setdefault(mac, [0, 0])
            t[0] += max(int(ev.down or 0), 0)
            t[1] += max(int(ev.up or 0), 0)
        if topic == "device" and ev.state is None:
            self.forget_device(mac)
            return
        self.publish_device(mac)

    def publish_device(self, mac: str) -> None:
        try:
            device = self.ctx.devices.get(mac)
        except LookupError:
            return
        link = self._started()
        name = device.name or device.hostname or mac
        if self._announced.get(mac) != name:
            for topic, payload in topics.discovery(self.prefix, self.disc, mac, name):
                link.publish(topic, payload)
            self._announced[mac] = name
        lease = self.ctx.leases.get(mac)
        present = lease is not None and lease.active     # one device's lease, not every lease
        rx, tx = self.traffic.get(mac, (0, 0))
        link.publish(topics.presence_topic(self.prefix, mac), "home" if present else "not_home")
        link.publish(topics.attributes_topic(self.prefix, mac), json.dumps({
            "mac": mac, "state": device.state, "name": device.name, "hostname": device.hostname,
            "owner": device.owner, "type": device.type, "ip": lease.ip if lease and present else "",
            "rx_bytes": rx, "tx_bytes": tx}))
        self.ctx.count("mqtt.published")

    def _on_notification(self, topic: str, note) -> None:
        """The notify component's notifications, as JSON on `{prefix}/notification` (not retained)."""
        self._started().publish(f"{self.prefix}/notification", json.dumps(note.as_dict(), default=str), retain=False)

    def forget_device(self, mac: str) -> None:
        """A forgotten device: empty retained payloads remove it from Home Assistant."""
        link = self._started()
        for topic, _payload in topics.discovery(self.prefix, self.disc, mac, ""):
            link.publish(topic, "")
        link.publish(topics.presence_topic(self.prefix, mac), "")
        link.publish(topics.attributes_topic(self.prefix, mac), "")
        self._announced.pop(mac, None)
        self.traffic.pop(mac, None)

    # -- in ---------------------------------------------------------------------------------
    def _on_message(self, topic: str, payload: bytes) -> None:
        command = topics.command_of(self.prefix, topic, payload)
        if command is None or not self.accept_commands:
            self.ctx.count("mqtt.commands_ignored")
            return
        ident, action = command
        macs = [d.mac for d in self.ctx.devices.all() if topics.device_id(d.mac) == ident]
        if not macs:
            self.ctx.count("mqtt.commands_ignored")
            return
        try:
            self.ctx.commands.call(action, mac=macs[0])
            self.ctx.count("mqtt.commands")
            self.log.info("mqtt: %s %s", action, macs[0])
        except CommandError as exc:
            self.ctx.count("mqtt.commands_ignored")
            self.log.warning("mqtt: %s %s refused: %s", action, macs[0], exc)
