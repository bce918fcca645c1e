"""Priorities in state.db (tables qos_devices and qos_apps, migration 10; the link's rates
and on/off in `settings` under qos.*), mirrored in memory. Writes go straight to disk, so
a priority set just before a restart holds after it. A value set here wins over the
config file's default once set."""
from __future__ import annotations

from dataclasses import dataclass

from ..schedules.windows import Window
from .plan import PortRange
from .rules import parse_ports, window_from_text, window_text

LINK_KEYS = ("enabled", "down_kbit", "up_kbit", "high_share")


@dataclass(frozen=True)
class DeviceRule:
    mac: str
    cls: str
    window: Window | None = None


@dataclass(frozen=True)
class App:
    id: int
    name: str
    cls: str
    ports: tuple[PortRange, ...]
    domains: tuple[str, ...]
    window: Window | None = None


class QosStore:
    def __init__(self, state):
        self.state = state
        self.devices: dict[str, DeviceRule] = {}
        self.apps: dict[str, App] = {}
        for r in state.execute("SELECT mac, class, window FROM qos_devices"):
            self.devices[r["mac"]] = DeviceRule(r["mac"], r["class"], window_from_text(r["window"]))
        for r in state.execute("SELECT id, name, class, ports, domains, window FROM qos_apps ORDER BY id"):
            self.apps[r["name"]] = App(r["id"], r["name"], r["class"], parse_ports(r["ports"]),
                                       tuple(d for d in r["domains"].split(",") if d), window_from_text(r["window"]))

    # -- the link ----------------------------------------------------------------------------
    def link(self) -> dict:
        """What was set at run time: {"enabled": bool, "down_kbit": int, ...}, only those set."""
        out = {}
        for r in self.state.execute("SELECT key, value FROM settings WHERE key LIKE 'qos.%'"):
            key, value = r["key"][4:], r["value"]
            if key == "enabled":
                out[key] = value == "1"
            elif key in LINK_KEYS and value.isdigit():     # a restored backup's odd value is ignored
                out[key] = int(value)
        return out

    def set_link(self, values: dict) -> None:
        for key, value in values.items():
            text = ("1" if value else "0") if key == "enabled" else str(int(value))
            self.state.execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                               "ON CONFLICT (key) DO UPDATE SET value=excluded.value", (f"qos.{key}", text))

    # -- devices and apps ----------------------------------------------------------------------
    def set_device(self, rule: DeviceRule) -> None:
        self.state.execute("INSERT INTO qos_devices (mac, class, window) VALUES (?, ?, ?) ON CONFLICT (mac) "
                           "DO UPDATE SET class=excluded.class, window=excluded.window",
                           (rule.mac, rule.cls, window_text(rule.window)))
        self.devices[rule.mac] = rule

    def clear_device(self, mac: str) -> None:
        if self.devices.pop(mac, None) is not None:
            self.state.execute("DELETE FROM qos_devices WHERE mac=?", (mac,))

    def set_app(self, name: str, cls: str, ports, domains, window) -> App:
        ports_text = ",".join(p.text() for p in ports)
        rows = self.state.execute(
            "INSERT INTO qos_apps (name, class, ports, domains, window) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) "
            "DO UPDATE SET class=excluded.class, ports=excluded.ports, domains=excluded.domains, "
            "window=excluded.window RETURNING id",
            (name, cls, ports_text, ",".join(domains), window_text(window)))
        app = App(rows[0]["id"], name, cls, tuple(ports), tuple(domains), window)
        self.apps[name] = app
        return app

    def remove_app(self, name: str) -> App | None:
        app = self.apps.pop(name, None)
        if app is not None:
            self.state.execute("DELETE FROM qos_apps WHERE id=?", (app.id,))
        return app
