"""The core's manifest (manifest.py): what the controller owns outside its components:
devices and their decisions (devices.py), the router's settings (system.py; qos keeps its
link rates there under "qos." keys), satellite pairing (pairing.py), the Wi-Fi network
(wifi.py), and the counters of dispatch, the adapter and the garbage collector."""
from __future__ import annotations

from . import events, manifest, rowcheck, system, wifi
from .commands import CommandError
from .manifest import Manifest, NotBackedUp, Secrets, Settings
from .state import DEVICE_STATES


def device_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    rowcheck.choice(r["state"], "state", DEVICE_STATES)
    for key in ("hostname", "name", "owner", "type"):
        rowcheck.text(r.get(key, ""), key)
    for key in ("first_seen", "last_seen"):
        rowcheck.number(r.get(key, 0), key)


def setting_row(r: dict) -> None:
    """A `settings` row: each key with the validator of the command that sets it (a
    restored `qos.down_kbit` of "²" once made the shaper fail every second)."""
    rowcheck.option(r)
    key = r["key"]
    check = manifest.settings_key_check(key)       # the manifest that keeps the key says how
    if check is None:
        raise ValueError(f"unknown setting {key!r}")
    try:
        check(key, r["value"])
    except CommandError as exc:
        raise ValueError(str(exc)) from None


def preapproval_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    rowcheck.text(r.get("port", ""), "port")


def wifi_row(r: dict) -> None:
    try:
        wifi.check_ssid(r["ssid"])
        wifi.check_passphrase(r["passphrase"])
    except wifi.CommandError as exc:
        raise ValueError(str(exc)) from None


MANIFEST = Manifest(
    component="core",
    tables=(
        Settings("devices", (1,), ("mac", "state", "hostname", "name", "owner", "type", "first_seen", "last_seen"),
                 device_row),
        Settings("settings", (9,), ("key", "value"), setting_row),     # keys: the manifests' settings_keys
        Settings("preapprovals", (19,), ("mac", "port"), preapproval_row),    # a pre-approval's first port
        NotBackedUp("satellites", (11, 12, 14),
                    "pairings are bound to this router's household CA (pki/), which a backup does not carry: "
                    "satellites pair again with the restored router"),
        NotBackedUp("storage_probe", (3,), "the write-health probe's own row"),
        NotBackedUp("sqlite_sequence", (7,), "SQLite's own AUTOINCREMENT bookkeeping"),
        # not a state.db table: the Wi-Fi network's name and passphrase from wifi.env,
        # added by the backup component and restored through the set-wifi command
        Secrets("wifi", (), ("ssid", "passphrase"), wifi_row, in_state_db=False),
    ),
    settings_keys={system.TIMEZONE_KEY: lambda key, value: system.check_zone(value)},
    routes=("satellites", "system", "update", "wifi"),
    publishes=(events.Device, events.Alert, events.Ipv6Plan, events.Satellite, events.Wifi, events.CutOffChanged,
               events.Timezone, events.Restart),
    hears=(events.Satellite,),
    alerts=(events.AlertKind.LAN_PORT_MISSING, events.AlertKind.SWITCH_REFUSED, events.AlertKind.PREAPPROVAL_MOVED,
            events.AlertKind.ROUTER_BOOT),       # bootalerts.py: the image's boot scripts' alerts
    counters={
        "core.packet_in": "packet-ins from the switch",
        "core.malformed_frames": "packet-ins whose Ethernet frame could not be parsed (dropped)",
        "core.unhandled_packets": "packet-ins no component took",
        "core.errors": "handlers, timers and commands that raised (logged; the controller goes on)",
        "core.ipv6_renumbered": "times the ISP delegated another IPv6 prefix and every device moved",
        "core.switch_refused": "datapaths refused because another switch is the router's bridge",
        "core.tls_refused": "OpenFlow-over-TLS connections refused at the handshake",
        "core.satellite_sessions": "OpenFlow sessions of satellite switches",
        "core.satellite_cable_locked": "times a satellite's cable lost its link and was locked until it reconnects",
        "controller.flow_writes_held": "writes of flow changes held back to go with the next",
        "controller.gc_frozen_objects": "start-up objects frozen out of the garbage collector's walks",
        "controller.gc_full_collections": "full garbage collections",
        "controller.gc_full_ms": "milliseconds spent in full garbage collections",
        "*.errors": "a component's packet handler raised on a packet (logged; the packet is dropped)",
        "*.malformed": "packets a component found malformed (dropped)",
    },
)
