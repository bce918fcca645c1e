"""Every component's manifest (homework/manifest.py) says what its code does: the tables
it owns with their migration steps and backup fate, its route modules, the events it
publishes and hears, its alert kinds and counters. These tests read the migrations and
scan each package's code, so a new table, event or counter cannot go undeclared, and a
declaration cannot outlive the code it describes."""
from __future__ import annotations

import ast
import re
import sqlite3
from pathlib import Path

import pytest

from homework import events, manifest, migrations
from homework.config import KNOWN_COMPONENTS
from homework.manifest import Backup

SOURCE = Path(__file__).resolve().parents[2] / "nox-modules" / "homework"
COMPONENTS = SOURCE / "components"


def schema_after(steps: int | None = None) -> dict[str, str]:
    """table -> its CREATE statement after the first `steps` steps (all: None)."""
    db = sqlite3.connect(":memory:")
    for step in migrations.STEPS[:steps]:
        if step.sql:
            for statement in migrations._statements(step.sql):
                db.execute(statement)
        if step.run:
            step.run(db)
    return {name: sql or "" for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE type='table'")}


def columns_of(table: str) -> list[str]:
    db = sqlite3.connect(":memory:")
    migrations.migrate(db)
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def package_files(component: str) -> list[Path]:
    if component == "core":
        return [p for p in SOURCE.rglob("*.py") if COMPONENTS not in p.parents and "satellite_agent" not in p.parts]
    return sorted((COMPONENTS / component).rglob("*.py"))


def trees(component: str):
    for path in package_files(component):
        yield path, ast.parse(path.read_text(), str(path))


def test_every_known_component_has_a_manifest_named_after_it():
    names = [m.component for m in manifest.every()]
    assert names == ["core", *KNOWN_COMPONENTS]
    packages = {p.name for p in COMPONENTS.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(KNOWN_COMPONENTS), "a component package without a place in config.KNOWN_COMPONENTS"


# -- tables ---------------------------------------------------------------------------------------
def test_every_table_has_one_owner():
    owners: dict[str, list[str]] = {}
    for m in manifest.every():
        for t in m.tables:
            owners.setdefault(t.name, []).append(m.component)
    shared = {name: who for name, who in owners.items() if len(who) > 1}
    assert not shared, f"tables declared by more than one manifest: {shared}"
    in_db = set(schema_after())
    declared = {t.name for t in manifest.tables() if t.in_state_db}
    assert not in_db - declared, f"tables of migrations.py that no manifest owns: {sorted(in_db - declared)}"
    assert not declared - in_db, f"manifests name tables migrations.py does not make: {sorted(declared - in_db)}"


DEVICE_KEYS = {"mac", "target", "owner"}     # a column naming the device (or its owner) a row is about


def test_every_backed_up_device_table_is_carried_by_a_join_or_says_why_not():
    """A device let in as the device it was (identify's join) takes every component's settings
    for it: each backed-up table keyed by a device is in its manifest's `carries` (and the
    component overrides Component.carry_device) or in `stays` with the reason."""
    import importlib

    from homework.component import Component
    undecided = []
    for m in manifest.every():
        if m.component == "core":       # devices and pre-approvals: the join itself
            continue
        assert not set(m.carries) & set(m.stays), f"{m.component}: carried and staying: {set(m.carries) & set(m.stays)}"
        own = {t.name for t in m.tables} | set(m.settings_keys)
        assert set(m.carries) | set(m.stays) <= own, f"{m.component} declares tables or keys it does not own"
        for t in m.tables:
            if t.backup != Backup.NONE and DEVICE_KEYS & set(t.columns) and t.name not in m.carries | m.stays:
                undecided.append(f"{m.component}: {t.name}")
        cls = importlib.import_module(f"homework.components.{m.component}").COMPONENT
        overrides = cls.carry_device is not Component.carry_device
        assert overrides == bool(m.carries), \
            f"{m.component}: carries {sorted(m.carries)} but {'overrides' if overrides else 'has no'} carry_device"
    assert not undecided, f"per-device tables neither carried by a join nor said to stay: {undecided}"


def test_every_column_is_backed_up_or_declared_not_to_be():
    undecided = []
    for t in manifest.tables():
        if not t.in_state_db:
            continue
        existing = columns_of(t.name)
        if t.backup is Backup.NONE:
            assert t.why and not t.columns and not t.left_out and t.check is None, t.name
            continue
        assert t.check is not None, f"{t.name}: a backed-up table needs a row check"
        assert set(t.columns) <= set(existing), f"{t.name}: kept columns that do not exist: " \
                                                f"{set(t.columns) - set(existing)}"
        assert set(t.left_out) <= set(existing), f"{t.name}: left-out columns that do not exist: " \
                                                 f"{set(t.left_out) - set(existing)}"
        assert not set(t.columns) & set(t.left_out), f"{t.name}: both kept and left out"
        undecided += [f"{t.name}.{c}" for c in existing if c not in t.columns and c not in t.left_out]
    assert not undecided, "columns neither kept in a backup nor declared left out (in a manifest): " \
                          + ", ".join(undecided)


def test_each_table_names_the_migration_steps_that_make_or_change_it():
    touched: dict[str, list[int]] = {}
    before: dict[str, str] = {}
    for i, step in enumerate(migrations.STEPS, start=1):
        after = schema_after(i)
        for table, sql in after.items():
            if before.get(table) != sql:
                touched.setdefault(table, []).append(step.number)
        before = after
    for t in manifest.tables():
        if t.in_state_db:
            assert list(t.steps) == touched[t.name], f"{t.name}: steps {t.steps}, migrations.py: {touched[t.name]}"


def test_the_backup_reads_its_contents_from_the_manifests():
    from homework.components.backup import contents
    settings = {t.name for t in manifest.tables() if t.backup is Backup.SETTINGS}
    assert set(contents.SETTINGS) == settings and "devices" in settings
    assert "wifi" in contents.SECRETS and contents.CLEARED == ("api_sessions",)
    assert contents.NOT_BACKED_UP["usage_cap.alerted"] and contents.NOT_BACKED_UP["leases"]
    with pytest.raises(ValueError, match="allowlist"):
        contents.CHECKS["dns_modes"]({"mac": "02:00:00:00:00:01", "mode": "everything"})


# -- routes ---------------------------------------------------------------------------------------
def route_modules() -> set[str]:
    """The modules of components/api that declare route groups (routes.RouteGroup)."""
    found = set()
    for path in (COMPONENTS / "api").glob("*.py"):
        if re.search(r"^class \w+\(RouteGroup\)", path.read_text(), re.MULTILINE):
            found.add(path.stem)
    return found


def test_every_route_module_belongs_to_one_manifest():
    declared: dict[str, str] = {}
    for m in manifest.every():
        for module in m.routes:
            assert (COMPONENTS / "api" / f"{module}.py").exists(), f"{m.component}: no route module {module}"
            assert module not in declared, f"{module} is declared by {declared[module]} and {m.component}"
            declared[module] = m.component
    missing = route_modules() - set(declared)
    assert not missing, f"route modules no manifest declares: {sorted(missing)}"


# -- events, alerts, counters ---------------------------------------------------------------------
EVENT_CLASSES = {cls.__name__: cls for cls in events.TOPICS.values()}


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def scan(component: str) -> dict:
    built, heard, kinds, counted, patterns = set(), set(), set(), set(), set()
    for _path, tree in trees(component):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and ast.unparse(node).startswith(("AlertKind.", "events.AlertKind.")):
                kinds.add(getattr(events.AlertKind, node.attr))
            if not isinstance(node, ast.Call):
                continue
            fn = _name(node.func)
            if fn in EVENT_CLASSES:
                built.add(EVENT_CLASSES[fn])
            if fn == "Alert" or fn == "_alert":
                for arg in [*node.args[1:2], *(kw.value for kw in node.keywords if kw.arg == "kind")]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        kinds.add(events.AlertKind(arg.value))
                    elif isinstance(arg, ast.JoinedStr):
                        patterns.add(("alert", ast.unparse(arg)))
            if fn == "subscribe" and node.args and "bus" in ast.unparse(node.func):
                topic = node.args[0]
                if isinstance(topic, ast.Constant) and topic.value != "*":
                    heard.add(events.TOPICS[topic.value])
            if fn in ("count", "_count") and node.args:
                arg = node.args[0]
                for value in (arg.body, arg.orelse) if isinstance(arg, ast.IfExp) else (arg,):
                    if isinstance(value, ast.Constant) and isinstance(value.value, str) and "." in value.value:
                        counted.add(value.value)
                    elif isinstance(value, ast.JoinedStr):
                        patterns.add(("counter", ast.unparse(value)))
    return {"built": built, "heard": heard, "kinds": kinds, "counted": counted, "patterns": patterns}


@pytest.mark.parametrize("m", manifest.every(), ids=lambda m: m.component)
def test_the_manifest_declares_what_the_code_does(m):
    found = scan(m.component)
    assert found["built"] == set(m.publishes), (
        f"{m.component} builds {sorted(c.TOPIC for c in found['built'])}, its manifest publishes "
        f"{sorted(c.TOPIC for c in m.publishes)}")
    assert found["heard"] <= set(m.hears), \
        f"{m.component} subscribes to {sorted(c.TOPIC for c in found['heard'] - set(m.hears))}, undeclared"
    assert found["kinds"] <= set(m.alerts), f"{m.component} raises undeclared alerts {found['kinds'] - set(m.alerts)}"
    assert not m.alerts or events.Alert in m.publishes
    undeclared = {c for c in found["counted"] if c not in m.counters}
    assert not undeclared, f"{m.component} counts {sorted(undeclared)}: declare them in its manifest"
    prefixes = [text.split("{")[0].lstrip("f'\"") for kind, text in found["patterns"] if kind == "counter"]
    for name in m.counters:
        if "*" in name:
            continue
        assert name in found["counted"] or any(p and name.startswith(p) for p in prefixes) or \
            m.component == "hwdb_sync" and name.startswith("hwdb_sync."), \
            f"{m.component}'s manifest declares {name}, which its code never counts"


def test_every_counter_has_help_for_the_metrics():
    assert manifest.counter_help("dhcp.offers").startswith("OFFERs sent")
    assert manifest.counter_help("usage.errors") == manifest.of("core").counters["*.errors"]
    assert manifest.counter_help("nobody.counts_this") is None


def test_architecture_lists_every_manifest():
    text = (SOURCE.parents[1] / "docs" / "architecture.md").read_text()
    table = text.split("<!-- manifests:begin -->\n", 1)[1].split("\n<!-- manifests:end -->", 1)[0]
    assert table == manifest.markdown(), "docs/architecture.md's Manifests table is out of date (manifest.markdown())"
