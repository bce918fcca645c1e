"""What goes into a backup: the settings rows of state.db, table by table, as the
components' manifests declare them (homework/manifest.py).

Settings are what the household chose (decisions, names, rules, schedules, limits);
secrets are what lets someone in or signs for the router (password and token hashes,
webhook URLs and their HMAC keys) and are stored encrypted. Leases, usage counters,
sessions, logs and fetched blocklist contents are not settings: a restored router
rebuilds them. A table that an older schema does not have is simply absent.

SETTINGS, SECRETS, CLEARED, NOT_BACKED_UP and CHECKS are read from the manifests when
first used (a manifest imports its component's modules, which may import this one).
"""
from __future__ import annotations

from functools import cache

from ... import manifest
from ...manifest import Backup


@cache
def _derived() -> dict:
    tables = manifest.tables()
    kept = {kind: {t.name: t.columns for t in tables if t.backup is kind} for kind in (Backup.SETTINGS, Backup.SECRETS)}
    not_backed_up: dict[str, str] = {}
    for t in tables:
        if t.backup is Backup.NONE:
            not_backed_up[t.name] = t.why
        not_backed_up.update({f"{t.name}.{column}": why for column, why in t.left_out.items()})
    return {
        # table -> the columns kept. Other columns (statistics, alert state) take their defaults.
        "SETTINGS": kept[Backup.SETTINGS],
        "SECRETS": kept[Backup.SECRETS],
        # Emptied with a restore though not restored (sessions were signed in under the old password).
        "CLEARED": tuple(t.name for t in tables if t.cleared_by_restore),
        # What of state.db a backup leaves out on purpose, and why: a whole table, or "table.column".
        "NOT_BACKED_UP": not_backed_up,
        # table -> the check each restored row must pass
        "CHECKS": {t.name: t.check for t in tables if t.check is not None},
    }


def __getattr__(name: str):
    try:
        return _derived()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def existing_columns(execute, table: str) -> set[str]:
    return {row[1] for row in execute(f"PRAGMA table_info({table})")}


def collect(execute) -> tuple[dict, dict]:
    """(settings, secrets): {table: [row dict, ...]} read through `execute` (StateStore.execute)."""
    spec = _derived()
    return _read(execute, spec["SETTINGS"]), _read(execute, spec["SECRETS"])   # wifi: not in state.db, absent


def _read(execute, spec: dict[str, tuple[str, ...]]) -> dict:
    out = {}
    for table, columns in spec.items():
        present = [c for c in columns if c in existing_columns(execute, table)]
        if not present:
            continue
        rows = execute(f"SELECT {', '.join(present)} FROM {table} ORDER BY rowid")
        out[table] = [dict(zip(present, tuple(row), strict=True)) for row in rows]
    return out
