"""Replace the settings in state.db with a backup's, in one transaction.

Replace mode: every table the backup format covers is emptied and refilled, so the router
ends up with exactly the backup's settings (a table the backup lacks, e.g. one an older
schema had not yet, ends up empty). Columns the backup lacks take the current schema's
defaults, which is what lets an older backup restore onto a newer schema.
"""
from __future__ import annotations

from . import contents
from .contents import existing_columns


def apply(state, settings: dict, secrets: dict) -> dict:
    """Write the (validated) rows; returns {table: rows written}. All or nothing."""
    written: dict[str, int] = {}
    with state.transaction() as store:
        execute = store.db.execute
        for tables, spec in ((settings, contents.SETTINGS), (secrets, contents.SECRETS)):
            for table in spec:
                present = existing_columns(execute, table)
                if not present:
                    continue          # cannot happen at LATEST; kept for a schema that dropped one
                execute(f"DELETE FROM {table}")
                for row in tables.get(table, []):
                    columns = [c for c in row if c in present]
                    marks = ", ".join("?" for _ in columns)
                    execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
                            tuple(row[c] for c in columns))
                written[table] = len(tables.get(table, []))
        for table in contents.CLEARED:
            if existing_columns(execute, table):
                execute(f"DELETE FROM {table}")
    return written
