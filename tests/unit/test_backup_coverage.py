"""Every table and column of state.db is either in a backup (settings or secrets) or
declared not to be, with the reason: a new table or column cannot be forgotten silently."""
import sqlite3

from homework import migrations
from homework.components.backup import contents


def schema() -> dict[str, list[str]]:
    db = sqlite3.connect(":memory:")
    migrations.migrate(db)
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: [row[1] for row in db.execute(f"PRAGMA table_info({t})")] for t in tables}


def test_every_table_and_column_is_backed_up_or_declared_not_to_be():
    kept = {**contents.SETTINGS, **{t: c for t, c in contents.SECRETS.items() if t != "wifi"}}
    undecided = []
    for table, columns in schema().items():
        if table in contents.NOT_BACKED_UP:
            assert table not in kept, f"{table} is both backed up and declared not to be"
            continue
        if table not in kept:
            undecided.append(table)
            continue
        for column in columns:
            if column not in kept[table] and f"{table}.{column}" not in contents.NOT_BACKED_UP:
                undecided.append(f"{table}.{column}")
    assert not undecided, ("neither in backup/contents.py's SETTINGS or SECRETS nor in its NOT_BACKED_UP: "
                           + ", ".join(undecided))


def test_declarations_name_what_exists():
    tables = schema()
    for name in contents.NOT_BACKED_UP:
        table, _, column = name.partition(".")
        assert table in tables, f"NOT_BACKED_UP names a table that does not exist: {name}"
        assert not column or column in tables[table], f"NOT_BACKED_UP names a column that does not exist: {name}"
    for spec in (contents.SETTINGS, contents.SECRETS):
        for table, columns in spec.items():
            if table == "wifi":
                continue
            assert set(columns) <= set(tables[table]), f"{table}: {set(columns) - set(tables[table])}"
