"""Every row of a backup is checked before anything is written, with the validators the
commands use (MACs, domain names, schedule windows, the link's rates, URLs, the admin
password hash's cost): a bad row refuses the whole file. A value the API or the CLI would
refuse is refused here too, so no restored value can make a component fail later (a
`qos.down_kbit` of "²" once made the shaper fail every second)."""
from __future__ import annotations

from ... import system
from ...commands import CommandError
from ...macaddr import BadMac, normalize
from ...passwords import BadHash, check_hash
from ...state import DEVICE_STATES
from ..blocklists.fetch import FetchError, check_url as check_list_url
from ..dns.names import normalize_domain
from ..notify.webhooks import BadWebhook, check_url as check_webhook_url
from ..qos.store import link_value
from ..schedules.store import ACTIONS as SCHEDULE_ACTIONS
from ..schedules.windows import WindowError, parse_spec
from ..usage.limits import ACTIONS as LIMIT_ACTIONS
from .contents import SECRETS, SETTINGS
from .fileformat import BackupError

OWNER = "owner:"
MAX_ROWS = 100_000
MAX_NUMBER = 2 ** 62          # SQLite integers are 64-bit signed


def validate(settings: dict, secrets: dict) -> None:
    """Raise BackupError naming the first bad row; return when every row is usable."""
    for part, spec in (("settings", settings), ("secrets", secrets)):
        if not isinstance(spec, dict):
            raise BackupError(f"backup: {part} must be an object of tables")
    for tables, known in ((settings, SETTINGS), (secrets, SECRETS)):
        for table, rows in tables.items():
            if table not in known:
                raise BackupError(f"backup: unknown table {table!r}")
            if not isinstance(rows, list) or len(rows) > MAX_ROWS:
                raise BackupError(f"backup: {table} must be a list of rows")
            check = CHECKS[table]
            for i, row in enumerate(rows):
                if not isinstance(row, dict) or set(row) - set(known[table]):
                    raise BackupError(f"backup: {table} row {i + 1}: unexpected fields")
                try:
                    check(row)
                except (KeyError, TypeError, ValueError) as exc:
                    what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
                    raise BackupError(f"backup: {table} row {i + 1}: {what}") from None
    _unique(settings.get("devices", []), "mac", "devices")
    if len(secrets.get("wifi", [])) > 1:
        raise BackupError("backup: wifi must hold one network")


def _unique(rows: list, key: str, table: str) -> None:
    seen = set()
    for row in rows:
        if row[key] in seen:
            raise BackupError(f"backup: {table}: {row[key]} appears twice")
        seen.add(row[key])


def _mac(value) -> None:
    try:
        if normalize(str(value)) != value:
            raise ValueError(f"{value!r} is not a MAC in the router's form (aa:bb:cc:dd:ee:ff)")
    except BadMac as exc:
        raise ValueError(str(exc)) from None


def _target(value) -> None:
    """A device's MAC, or owner:NAME."""
    if isinstance(value, str) and value.startswith(OWNER):
        _text(value[len(OWNER):], "owner", empty=False)
    else:
        _mac(value)


def _text(value, what: str, empty: bool = True) -> None:
    if not isinstance(value, str) or (not empty and not value.strip()) or len(value) > 1000:
        raise ValueError(f"{what} must be {'' if empty else 'non-empty '}text")


def _number(value, what: str, low: float = 0, high: float = MAX_NUMBER, whole: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not isinstance(value, int)) \
            or not low <= value <= high:
        raise ValueError(f"{what} must be a {'whole ' if whole else ''}number from {low} to {high}, got {value!r}")


def _choice(value, what: str, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")


def _device(r):
    _mac(r["mac"])
    _choice(r["state"], "state", DEVICE_STATES)
    for key in ("hostname", "name", "owner", "type"):
        _text(r.get(key, ""), key)
    for key in ("first_seen", "last_seen"):
        _number(r.get(key, 0), key)


def _dns_rule(r):
    if r["owner"] != "*":
        _mac(r["owner"])
    if normalize_domain(r["domain"]) != r["domain"]:
        raise ValueError(f"domain {r['domain']!r} is not in normal form")
    _choice(r["action"], "action", ("allow", "deny"))
    schedule = r.get("schedule", "")
    _text(schedule, "schedule")
    if schedule:
        try:
            parse_spec(schedule)
        except WindowError as exc:
            raise ValueError(f"schedule: {exc}") from None
    _number(r.get("created", 0), "created")


def _schedule(r):
    _target(r["target"])
    _text(r["days"], "days", empty=False)
    for day in r["days"].split(","):
        if not day.isdigit() or int(day) > 6:
            raise ValueError(f"days must be weekday numbers 0-6, got {r['days']!r}")
    _number(r["start_min"], "start_min", 0, 1439, whole=True)
    _number(r["end_min"], "end_min", 0, 1439, whole=True)
    _choice(r["action"], "action", SCHEDULE_ACTIONS)
    _number(r.get("created", 0), "created")


def _pause(r):
    _mac(r["mac"])
    _choice(r["kind"], "kind", ("pause", "resume"))
    _number(r["since"], "since")
    _number(r["until"], "until")


def _blocklist(r):
    try:
        check_list_url(r["url"])
    except FetchError as exc:
        raise ValueError(str(exc)) from None
    _text(r.get("owner", "*"), "owner", empty=False)
    _number(r.get("enabled", 1), "enabled", 0, 1, whole=True)
    _number(r.get("added", 0), "added")
    _number(r.get("allow_local", 0), "allow_local", 0, 1, whole=True)


def _limit(r):
    _target(r["target"])
    _choice(r["period"], "period", ("day", "month"))
    _number(r["allowance"], "allowance", 0, whole=True)
    _choice(r["action"], "action", LIMIT_ACTIONS)
    _number(r.get("rate", 0), "rate", 0, whole=True)


def _cap(r):
    _number(r.get("id", 1), "id", 1, 1, whole=True)
    _number(r["cap"], "cap", 0, whole=True)
    _number(r["billing_day"], "billing_day", 1, 31, whole=True)


def _qos_rule(r, classes) -> None:
    """A priority row, checked by the qos component's own parsers."""
    from ..qos import rules as qos_rules      # here: qos imports the commands module
    try:
        _choice(r["class"], "class", classes)
        window = r.get("window", "")
        _text(window, "window")
        qos_rules.window_from_text(window)
        if "ports" in r:
            _text(r["ports"], "ports")
            qos_rules.parse_ports(r["ports"])
            _text(r.get("domains", ""), "domains")
            qos_rules.parse_domains(r.get("domains", ""))
            qos_rules.parse_name(r["name"])
    except (qos_rules.CommandError, WindowError) as exc:
        raise ValueError(str(exc)) from None


def _qos_device(r):
    _mac(r["mac"])
    _qos_rule(r, ("high", "medium"))


def _qos_app(r):
    _number(r["id"], "id", 1, whole=True)
    _qos_rule(r, ("high", "medium", "default"))


def _wifi(r):
    from ... import wifi
    try:
        wifi.check_ssid(r["ssid"])
        wifi.check_passphrase(r["passphrase"])
    except wifi.CommandError as exc:
        raise ValueError(str(exc)) from None


def _admin(r):
    _number(r.get("id", 1), "id", 1, 1, whole=True)
    try:
        check_hash(r["password_hash"])      # bounded scrypt cost: one wrong login must stay cheap
    except BadHash as exc:
        raise ValueError(f"password_hash: {exc}") from None
    _number(r.get("changed", 0), "changed")


def _token(r):
    _text(r["id"], "id", empty=False)
    _text(r["name"], "name")
    _choice(r["role"], "role", ("admin", "read-only"))
    _text(r["token_hash"], "token_hash", empty=False)
    for key in ("created", "last_used", "revoked"):
        _number(r.get(key, 0), key)


def _webhook(r):
    _text(r["id"], "id", empty=False)
    try:
        check_webhook_url(r["url"])
    except BadWebhook as exc:
        raise ValueError(str(exc)) from None
    _text(r["secret"], "secret")
    _number(r.get("created", 0), "created")
    _number(r.get("allow_local", 0), "allow_local", 0, 1, whole=True)


def _setting(r):
    """A `settings` row: each key with the validator of the command that sets it."""
    _text(r["key"], "key", empty=False)
    _text(r["value"], "value")
    key = r["key"]
    try:
        if key == system.TIMEZONE_KEY:
            system.check_zone(r["value"])
        elif key.startswith("qos."):
            link_value(key[4:], r["value"])
        else:
            raise ValueError(f"unknown setting {key!r}")
    except CommandError as exc:
        raise ValueError(str(exc)) from None


def _dns_option(r):
    _text(r["key"], "key", empty=False)
    if r["key"] != "safe_search":
        raise ValueError(f"unknown DNS option {r['key']!r}")
    _choice(r["value"], "safe_search", ("on", "off"))


CHECKS = {
    "devices": _device, "dns_rules": _dns_rule, "dns_modes": lambda r: (_mac(r["mac"]), _choice(
        r["mode"], "mode", ("denylist", "allowlist"))),
    "dns_options": _dns_option, "schedules": _schedule, "pauses": _pause, "blocklists": _blocklist,
    "usage_limits": _limit, "usage_cap": _cap, "settings": _setting, "qos_devices": _qos_device,
    "qos_apps": _qos_app, "api_admin": _admin, "api_tokens": _token, "webhooks": _webhook, "wifi": _wifi,
}
