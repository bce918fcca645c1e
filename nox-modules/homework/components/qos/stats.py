"""Counters of the HTB leaves: `tc -s -j class show dev D` -> per class and per device
bytes, packets, drops and rates.

iproute2 prints JSON for classes only in newer releases (Debian bookworm's 6.1 prints
text even with -j), so both forms are read. Sums are taken over leaves: HTB counts a
drop in the leaf's queue, not in its parents.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_CLASS = re.compile(r"^class htb 1:([0-9a-f]+)\b")
_SENT = re.compile(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+)")


@dataclass(frozen=True)
class Counter:
    bytes: int
    packets: int
    drops: int


def _minor(handle: str) -> int | None:
    major, _, minor = str(handle).partition(":")
    if major != "1" or not minor:
        return None
    try:
        return int(minor, 16)
    except ValueError:
        return None


def parse(output: str) -> dict[int, Counter]:
    """minor -> Counter for every class of the `1:` HTB tree."""
    text = output.strip()
    if text.startswith("["):
        out = {}
        for row in json.loads(text):
            minor = _minor(row.get("handle", ""))
            stats = row.get("stats") or {}
            if minor is not None and row.get("class") == "htb":
                out[minor] = Counter(int(stats.get("bytes", 0)), int(stats.get("packets", 0)),
                                     int(stats.get("drops", 0)))
        return out
    out, minor = {}, None
    for line in text.splitlines():
        found = _CLASS.match(line)
        if found:
            minor = int(found.group(1), 16)
            continue
        sent = _SENT.search(line)
        if sent and minor is not None:
            out[minor] = Counter(int(sent.group(1)), int(sent.group(2)), int(sent.group(3)))
            minor = None
    return out


_APP_COUNTER = re.compile(r"^app(\d+)_(up|down)$")


def parse_app_counters(output: str) -> dict[tuple[str, int], Counter]:
    """`nft -j list counters table inet homework_qos` -> (direction, app id) -> Counter.
    Anything else in the output (metainfo, other counters, bad JSON) is left out."""
    try:
        items = json.loads(output).get("nftables", []) if output.strip() else []
    except (ValueError, AttributeError):
        return {}
    out = {}
    for item in items if isinstance(items, list) else []:
        counter = item.get("counter") if isinstance(item, dict) else None
        found = _APP_COUNTER.match(str(counter.get("name", ""))) if isinstance(counter, dict) else None
        if found and isinstance(counter, dict):
            out[(found.group(2), int(found.group(1)))] = Counter(int(counter.get("bytes", 0)),
                                                                 int(counter.get("packets", 0)), 0)
    return out


@dataclass
class Sample:
    at: float
    leaves: dict        # (direction, minor) -> Counter
    apps: dict = field(default_factory=dict)     # (direction, app id) -> Counter


def summarize(now: Sample, before: Sample | None, leaves: dict, apps: dict | None = None) -> dict:
    """The GET /qos/stats body from two samples; `leaves`: (direction, minor) -> (class, mac);
    `apps`: app id -> (name, class)."""
    elapsed = (now.at - before.at) if before is not None else 0.0
    classes: dict[tuple[str, str], list[int]] = {}
    devices: dict[tuple[str, str, str], list[int]] = {}

    def rate(key, counter: Counter, field_name: str = "leaves") -> int:
        old = getattr(before, field_name).get(key) if before is not None else None
        if old is None or elapsed <= 0 or counter.bytes < old.bytes:
            return 0
        return int((counter.bytes - old.bytes) * 8 / elapsed)

    for key, counter in now.leaves.items():
        owner = leaves.get(key)
        if owner is None:
            continue
        cls, mac = owner
        bps = rate(key, counter)
        accs = [classes.setdefault((key[0], cls), [0, 0, 0, 0])]
        if mac:
            accs.append(devices.setdefault((key[0], cls, mac), [0, 0, 0, 0]))
        for acc in accs:
            acc[0] += bps
            acc[1] += counter.bytes
            acc[2] += counter.drops
            acc[3] += counter.packets
    app_rows = []
    for (direction, app_id), counter in sorted(now.apps.items()):
        name, cls = (apps or {}).get(app_id, (None, None))
        if name is not None:
            app_rows.append({"name": name, "direction": direction, "class": cls,
                             "rate_bps": rate((direction, app_id), counter, "apps"),
                             "bytes": counter.bytes, "packets": counter.packets})
    return {
        "at": now.at,
        "apps": app_rows,
        "classes": [{"direction": d, "class": c, "rate_bps": v[0], "bytes": v[1], "drops": v[2], "packets": v[3]}
                    for (d, c), v in sorted(classes.items())],
        "devices": [{"mac": m, "direction": d, "class": c, "rate_bps": v[0], "bytes": v[1], "drops": v[2],
                     "packets": v[3]} for (d, c, m), v in sorted(devices.items())],
    }


def high_drops(summary: dict) -> int:
    return sum(row["drops"] for row in summary["classes"] if row["class"] == "high")
