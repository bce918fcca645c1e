"""Every row of a backup is checked before anything is written, with the check its
table's manifest declares (homework/manifest.py; built from the validators the commands
use: MACs, domain names, schedule windows): a bad row refuses the whole file."""
from __future__ import annotations

from . import contents
from .fileformat import BackupError

MAX_ROWS = 100_000


def validate(settings: dict, secrets: dict) -> None:
    """Raise BackupError naming the first bad row; return when every row is usable."""
    for part, spec in (("settings", settings), ("secrets", secrets)):
        if not isinstance(spec, dict):
            raise BackupError(f"backup: {part} must be an object of tables")
    for tables, known in ((settings, contents.SETTINGS), (secrets, contents.SECRETS)):
        for table, rows in tables.items():
            if table not in known:
                raise BackupError(f"backup: unknown table {table!r}")
            if not isinstance(rows, list) or len(rows) > MAX_ROWS:
                raise BackupError(f"backup: {table} must be a list of rows")
            check = contents.CHECKS[table]
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
