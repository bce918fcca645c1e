"""Priorities in state.db (tables qos_devices and qos_apps, migration 10; the link's rates
and on/off in `settings` under qos.*), mirrored in memory. Writes go straight to disk, so
a priority set just before a restart holds after it. A value set here wins over the
config file's default once set."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ..schedules.windows import Window
from .plan import PortRange
from ...commands import CommandError
from ...values import whole_number
from .rules import parse_kbit, parse_ports, parse_share, window_from_text, window_text

LINK_KEYS = ("enabled", "down_kbit", "up_kbit", "high_share")
log = logging.getLogger("homework.qos")


def link_value(key: str, text: str):
    """A stored link setting (`settings` row qos.<key>) as the command would take it; the
    validator a restore uses too (backup/validate.py). ValueError/CommandError if not."""
    if key == "enabled":
        if text not in ("0", "1"):
            raise ValueError(f"qos.enabled must be 0 or 1, not {text!r}")
        return text == "1"
    if key not in LINK_KEYS:
        raise ValueError(f"qos.{key} is not a setting of the link")
    number = whole_number(text, f"qos.{key}")
    return parse_share(number) if key == "high_share" else parse_kbit(number, key)


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
        self._warned: set[tuple[str, str]] = set()
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
            key = r["key"][4:]
            try:
                out[key] = link_value(key, r["value"])
            except (ValueError, CommandError) as exc:   # written by hand: the config's value holds
                if (key, r["value"]) not in self._warned:
                    self._warned.add((key, r["value"]))
                    log.warning("ignoring the stored %s: %s", r["key"], exc)
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
