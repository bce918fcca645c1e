"""Bus event -> hwdb rows, in the column order of hwdb/schema/router.hwdb.

Each builder returns [(table, values, upsert)]; a malformed payload (missing key, wrong
type) raises and the sink counts it instead of writing half a row."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import events as E


def _text(value, limit: int) -> str:
    return ("" if value is None else str(value))[:limit]


def _int(value) -> int:
    return int(value or 0)


def lease_rows(ev: E.Lease) -> list:
    lease = ev.lease
    action = "add" if ev.action in ("granted", "renewed") else "del"
    return [("Leases", (_text(lease.mac, 17), _text(lease.ip, 16), _text(lease.hostname, 64), action), True)]


def device_rows(ev: E.Device) -> list:
    device = ev.device or {}
    mac = _text(ev.mac, 17)
    rows: list[tuple[str, tuple, bool]] = [("Devices", (mac, _text(ev.state, 16), _text(ev.reason, 32),
                                                        _text(device.get("hostname"), 64)), True)]
    for table, key, limit in (("DeviceNames", "name", 64), ("DeviceTypes", "type", 32), ("Users", "owner", 64)):
        if device.get(key):
            rows.append((table, (mac, _text(device[key], limit)), True))
    return rows


def flows_rows(ev: E.Flows) -> list:
    return [("Flows", (_int(r.proto), _text(r.saddr, 45), _int(r.sport), _text(r.daddr, 45),
                       _int(r.dport), _int(r.npkts), _int(r.nbytes)), False) for r in ev.records]


def bandwidth_rows(ev: E.Bandwidth) -> list:
    return [("BWStats", (_text(ev.mac, 17), _text(ev.ip, 16), _int(ev.bytes)), False)]


def alert_rows(ev: E.Alert) -> list:
    return [("Alerts", (_text(ev.mac, 17), _text(ev.kind, 32), _text(ev.detail, 255)), False)]


def dns_rows(ev: E.DnsQuery) -> list:
    # `count`: dnsd merges identical queries within 20 ms into one event with a count.
    count = _int(ev.count)
    if count < 1:
        raise ValueError(f"dns_query count must be >= 1, not {count}")
    return [("DnsQueries", (_text(ev.mac, 17), _text(ev.name, 255), _text(ev.qtype, 8),
                            _text(ev.verdict, 16), _int(ev.latency_us), count), False)]


def link_rows(ev: E.Link) -> list:
    return [("Links", (_text(ev.mac, 17), float(ev.rssi or 0.0), _int(ev.retries),
                       _int(ev.packets), _int(ev.bytes)), False)]


def qos_rows(ev: E.QosRate) -> list:
    # the shaper's per class (mac "") and per device counters, every second
    return [("QosRates", (_text(ev.mac, 17), _text(ev.direction, 4), _text(ev.class_, 8),
                          _int(ev.rate_bps), _int(ev.bytes), _int(ev.drops)), False)]


def qos_app_rate_rows(ev: E.QosAppRate) -> list:
    # seed 4.5's application time series: an application's rate every second
    return [("AppRates", (_text(ev.name, 40), _text(ev.direction, 4), _text(ev.class_, 8),
                          _int(ev.rate_bps), _int(ev.bytes)), False)]


def qos_app_rows(ev: E.QosApp) -> list:
    # an application's priority as set now (class "" = removed)
    return [("AppPriorities", (_text(ev.name, 40), _text(ev.class_, 8), _text(",".join(ev.ports or []), 255),
                               _text(",".join(ev.domains or []), 255)), True)]


def app_tuple_rows(ev: E.AppTuple) -> list:
    # seed 4.5's application tuple: which application owns a computer's connection
    return [("AppTuples", (_text(ev.mac, 17), _text(ev.app, 40), _text(ev.proto, 4), _text(ev.src, 45),
                           _int(ev.sport), _text(ev.dst, 45), _int(ev.dport)), False)]


def qos_device_rows(ev: E.QosDevice) -> list:
    # a device's priority as set now ("default" = no rule)
    return [("DevicePriorities", (_text(ev.mac, 17), _text(ev.class_, 8)), True)]


# topic -> rows(event of that topic)
ROW_BUILDERS: dict[str, Callable[[Any], list]] = {
    "lease": lease_rows,
    "device": device_rows,
    "flows": flows_rows,
    "bandwidth": bandwidth_rows,
    "alert": alert_rows,
    "dns_query": dns_rows,
    "link": link_rows,
    "qos": qos_rows,
    "qos_app": qos_app_rows,
    "qos_app_rate": qos_app_rate_rows,
    "qos_device": qos_device_rows,
    "app_tuple": app_tuple_rows,
}
TOPICS = tuple(ROW_BUILDERS)
