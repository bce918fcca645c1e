"""The router's own facts and settings: what the Guest Board's "Router" section shows.

    system-info                      -> {version, uptime, timezone, timezone_source, schema, update_slot, wan,
                                         hardware}
    set-timezone {timezone}          -> {timezone, restarting}

The time zone chosen on the board is kept in state.db (`settings`, migration 9) and
overrides [router] timezone. Setting it applies it at once: the config the components
read is replaced and a `timezone` event tells those that keep a zone (schedules, usage
periods, DNS rule windows), no restart. At every start the stored zone replaces the
config file's before any component starts.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from . import __version__, migrations, wifi
from .commands import CommandError
from .events import Timezone
from .hardware.cache import HardwareReport, config_roles

VERSION_FILE = Path("/etc/homework/version")   # the image's stamp (install-overlay.sh): git describe
UPDATE_SLOT = "single (A/B updates not built yet)"
TIMEZONE_KEY = "timezone"
MAX_ZONE = 64


def software_version(stamp: Path = VERSION_FILE) -> str:
    """The image's version stamp (first line), else the controller package's __version__."""
    try:
        first = stamp.read_text(encoding="utf-8").splitlines()[0].strip()
    except (OSError, IndexError, UnicodeDecodeError):
        first = ""
    return first or __version__


def check_zone(name) -> str:
    if not isinstance(name, str) or not name or len(name) > MAX_ZONE:
        raise CommandError("timezone: give an IANA time zone name like 'Europe/London'")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CommandError(f"timezone: unknown time zone {name!r} (an IANA name like 'Europe/London')") from None
    return name


def wan_status(lease_file: str, now: float | None = None) -> dict | None:
    """The WAN's lease from [router] wan_lease_file: None when not configured, {"up": false}
    when there is no lease (the hook removes the file when the lease goes)."""
    if not lease_file:
        return None
    lease = wifi.read_env(Path(lease_file))
    if not lease.get("ADDRESS"):
        return {"up": False}
    since = int(lease["UP_SINCE"]) if lease.get("UP_SINCE", "").isdigit() else None
    now = time.time() if now is None else now
    return {"up": True, "interface": lease.get("INTERFACE", ""), "address": lease["ADDRESS"],
            "gateway": lease.get("GATEWAY", ""), "dns": lease.get("DNS", "").split(),
            "lease_seconds": int(lease["LEASE_SECONDS"]) if lease.get("LEASE_SECONDS", "").isdigit() else None,
            "up_since": since, "up_for": max(0, int(now - since)) if since else None}


def stored(state, key: str) -> str | None:
    rows = state.execute("SELECT value FROM settings WHERE key=?", (key,))
    return rows[0]["value"] if rows else None


def register(core, version_file: Path = VERSION_FILE) -> None:
    ctx = core.ctx
    started = time.monotonic()
    zone = stored(core.state, TIMEZONE_KEY)
    if zone:
        try:
            check_zone(zone)
        except CommandError:
            zone = None      # a zone this system's tzdata no longer has: keep the file's
    from_file = core.config.timezone
    if zone:
        core.config = ctx.config = dataclasses.replace(core.config, timezone=zone)
    # ports, Wi-Fi cards, firmware: gathered in a thread (hardware/cache.py), at most every 15 s
    def router_ports() -> tuple[str, ...]:
        """The configured LAN ports, every port on the router's switch but its own, the WAN."""
        dp = ctx.datapath
        on_switch = [name for name in (dp.ports if dp else {}) if name != core.config.bridge]
        wan = [core.config.wanwatch_interface] if "wanwatch" in core.config.components else []
        return tuple(dict.fromkeys((*core.config.lan_ports, *on_switch, *wan)))
    hardware = HardwareReport(config_roles(core.config, core.config.interfaces_file), extra_ports=router_ports)

    def system_info() -> dict:
        return {"version": software_version(version_file), "uptime": int(time.monotonic() - started),
                "timezone": ctx.config.timezone or "", "timezone_source": "board" if zone else "config",
                "timezone_config": from_file or "", "schema": migrations.LATEST,
                "update_slot": ctx.updater.slot_text() if ctx.updater else UPDATE_SLOT,
                "wan": wan_status(ctx.config.wan_lease_file), "hardware": hardware.get()}

    def set_timezone(timezone=None) -> dict:
        nonlocal zone
        check_zone(timezone)
        with core.state.transaction() as st:
            st.db.execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                          "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (TIMEZONE_KEY, timezone))
        # Live: the config the components read, and the event for those that keep a zone.
        zone = timezone
        core.config = ctx.config = dataclasses.replace(ctx.config, timezone=timezone)
        ctx.bus.publish(Timezone(zone=timezone))
        return {"timezone": timezone, "restarting": False,
                "note": "schedules, usage periods and website-rule windows use it now"}

    core.commands.register("system-info", system_info)
    core.commands.register("set-timezone", set_timezone)
    wifi.register(core)                   # Wi-Fi SSID/passphrase: the settings page's Wi-Fi section
