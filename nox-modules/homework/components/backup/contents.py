"""What goes into a backup: the settings rows of state.db, table by table.

Settings are what the household chose (decisions, names, rules, schedules, limits);
secrets are what lets someone in or signs for the router (password and token hashes,
webhook URLs and their HMAC keys) and are stored encrypted. Leases, usage counters,
sessions, logs and fetched blocklist contents are not settings: a restored router
rebuilds them. A table that an older schema does not have is simply absent.
"""
from __future__ import annotations

# table -> the columns kept. Other columns (statistics, alert state) take their defaults.
SETTINGS: dict[str, tuple[str, ...]] = {
    "devices": ("mac", "state", "hostname", "name", "owner", "type", "first_seen", "last_seen"),
    "dns_rules": ("owner", "domain", "action", "schedule", "created"),
    "dns_modes": ("mac", "mode"),
    "dns_options": ("key", "value"),
    "schedules": ("target", "days", "start_min", "end_min", "action", "created"),
    "pauses": ("mac", "kind", "since", "until"),
    "blocklists": ("url", "owner", "enabled", "added"),    # the names are fetched again
    "usage_limits": ("target", "period", "allowance", "action", "rate"),
    "usage_cap": ("id", "cap", "billing_day"),
    "settings": ("key", "value"),                          # the board's time zone (migration 9)
    "qos_devices": ("mac", "class", "window"),             # priorities (migration 10)
    "qos_apps": ("id", "name", "class", "ports", "domains", "window"),   # id: the ct mark
}
SECRETS: dict[str, tuple[str, ...]] = {
    "api_admin": ("id", "password_hash", "changed"),
    "api_tokens": ("id", "name", "role", "token_hash", "created", "last_used", "revoked"),
    "webhooks": ("id", "url", "secret", "created"),
    # not a state.db table: the Wi-Fi network's name and passphrase from wifi.env (wifi.py),
    # added by the component and restored through the set-wifi command
    "wifi": ("ssid", "passphrase"),
}
# Emptied with a restore though not restored: sessions were signed in under the old password.
CLEARED = ("api_sessions",)

# What of state.db a backup leaves out on purpose, and why: a whole table, or "table.column"
# for the columns of a backed-up table that are not settings. Every table and column of
# migrations.py is in SETTINGS, SECRETS or here (tests/unit/test_backup_coverage.py).
NOT_BACKED_UP: dict[str, str] = {
    "leases": "a restored router hands out addresses afresh; devices ask again",
    "quarantine": "holds on address blocks end with the leases they guard",
    "storage_probe": "the write-health probe's own row",
    "dns_learned": "the reverse check learns addresses again from answers",
    "usage_hours": "usage history is measurement, not a setting (and large)",
    "notifications": "a log of what happened on this router",
    "webhook_deliveries": "a log of deliveries",
    "api_sessions": "sessions end with a restore (CLEARED)",
    "satellites": "pairings are bound to this router's household CA (pki/), which a backup does not "
                  "carry: satellites pair again with the restored router",
    "sqlite_sequence": "SQLite's own AUTOINCREMENT bookkeeping",
    "dns_rules.id": "row ids are given anew; rules are keyed by owner and domain",
    "schedules.id": "row ids are given anew",
    "blocklists.id": "row ids are given anew; the names are fetched again",
    "blocklists.fetched": "fetch statistics: the list is fetched again",
    "blocklists.checked": "fetch statistics",
    "blocklists.rules": "fetch statistics",
    "blocklists.exceptions": "fetch statistics",
    "blocklists.skipped": "fetch statistics",
    "blocklists.error": "fetch statistics",
    "usage_cap.alerted_period": "alert state: the restored router alerts afresh",
    "usage_cap.alerted": "alert state",
    "usage_limits.reached": "this period's state, not a setting",
    "usage_limits.lifted": "this period's state, not a setting",
    "api_admin.chosen": "a restored password hash counts as the household's own (the column's default)",
}


def existing_columns(execute, table: str) -> set[str]:
    return {row[1] for row in execute(f"PRAGMA table_info({table})")}


def collect(execute) -> tuple[dict, dict]:
    """(settings, secrets): {table: [row dict, ...]} read through `execute` (StateStore.execute)."""
    return _read(execute, SETTINGS), _read(execute, SECRETS)


def _read(execute, spec: dict[str, tuple[str, ...]]) -> dict:
    out = {}
    for table, columns in spec.items():
        present = [c for c in columns if c in existing_columns(execute, table)]
        if not present:
            continue
        rows = execute(f"SELECT {', '.join(present)} FROM {table} ORDER BY rowid")
        out[table] = [dict(zip(present, tuple(row))) for row in rows]
    return out
