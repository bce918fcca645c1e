"""Manifests: what each component owns and offers, declared in one place per component.

Every component package has a `manifest.py` with a `MANIFEST`, and the core has its own
(`core_manifest.py`). A manifest names:

- `tables`: the state.db tables the component owns, the migration steps (migrations.py)
  that make or change each, and what of each goes into a backup: `Settings` (kept in the
  clear), `Secrets` (kept encrypted) or `NotBackedUp` (with the reason). A backed-up
  table lists the columns it keeps, the columns it leaves out (with the reason) and the
  check a restored row must pass. The backup component reads its contents from here
  (components/backup/contents.py), so a new table is one declaration, not a list to
  remember; tests/unit/test_manifests.py fails on a table or column that no manifest
  decides, and on steps that do not match migrations.py.
- `routes`: the API route modules (components/api/<module>.py) that serve the
  component's settings.
- `publishes`, `hears`, `alerts`: the events (events.py) it publishes and subscribes to,
  and the alert kinds it raises; the test scans the package's code against them.
- `counters`: every counter it counts (`ctx.count("dhcp.offers")`) with what it counts;
  the Prometheus metrics take their help text from here.
- `cli`: the `homework` subcommands it declares for its controller commands: command ->
  (positional argument names, a trailing "?" for an optional one; a line of help). cli.py
  reads them, so a new command is on the CLI without an edit there (every command is also
  `homework call NAME key=value ...`).
- `settings_keys`: the keys it keeps in the core's `settings` table (a key, or a prefix
  ending in "."), each with the check a restored value must pass (the command's own).
- `carries` and `stays`: the per-device tables (or per-device `settings_keys` prefixes,
  such as "notify.presence.") whose rows move to a device's new private address when the
  household lets it in as the device it was (Component.carry_device), and those that do
  not, with why.
- `offers` and `needs`: the interfaces (interfaces.py) it offers other components, and
  those it takes as constructor keywords. The core constructs the components that offer
  an interface before those that need it and hands it over at construction (None when no
  loaded component offers it): see docs/architecture.md, "Declared dependencies".

Manifests are plain data: importing one never starts anything.
"""
from __future__ import annotations

import fnmatch
import importlib
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from collections.abc import Callable, Mapping

from . import events


class Backup(StrEnum):
    SETTINGS = "settings"     # what the household chose: in the clear
    SECRETS = "secrets"       # what lets someone in or signs for the router: encrypted
    NONE = "none"             # not in a backup: `why` says why


@dataclass(frozen=True)
class Table:
    name: str
    steps: tuple[int, ...]                       # migrations.py steps that make or change it
    backup: Backup = Backup.NONE
    columns: tuple[str, ...] = ()                # backed up: the columns kept
    left_out: Mapping[str, str] = field(default_factory=dict)   # backed up: column -> why not kept
    check: Callable[[dict], None] | None = None  # backed up: raises ValueError on a bad restored row
    why: str = ""                                # not backed up: why
    cleared_by_restore: bool = False             # emptied by a restore though not restored
    in_state_db: bool = True                     # False: a secret kept elsewhere (the Wi-Fi's wifi.env)


def Settings(name: str, steps: tuple[int, ...], columns: tuple[str, ...], check: Callable[[dict], None],
             left_out: Mapping[str, str] | None = None) -> Table:
    return Table(name, steps, Backup.SETTINGS, columns, left_out or {}, check)


def Secrets(name: str, steps: tuple[int, ...], columns: tuple[str, ...], check: Callable[[dict], None],
            left_out: Mapping[str, str] | None = None, in_state_db: bool = True) -> Table:
    return Table(name, steps, Backup.SECRETS, columns, left_out or {}, check, in_state_db=in_state_db)


def NotBackedUp(name: str, steps: tuple[int, ...], why: str, cleared_by_restore: bool = False) -> Table:
    return Table(name, steps, why=why, cleared_by_restore=cleared_by_restore)


@dataclass(frozen=True)
class Manifest:
    component: str                               # "core" for the core's own
    tables: tuple[Table, ...] = ()
    routes: tuple[str, ...] = ()                 # API route modules: "schedules" = components/api/schedules.py
    publishes: tuple[type[events.Event], ...] = ()
    hears: tuple[type[events.Event], ...] = ()
    alerts: tuple[events.AlertKind, ...] = ()
    counters: Mapping[str, str] = field(default_factory=dict)   # "dhcp.offers" -> what it counts
    settings_keys: Mapping[str, Callable[[str, str], object]] = field(default_factory=dict)  # key -> check
    cli: Mapping[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)   # command -> (arguments, help)
    offers: tuple[type, ...] = ()                # interfaces it offers (Component.offer)
    needs: Mapping[str, type] = field(default_factory=dict)     # constructor keyword -> interface
    # A device let in as the device it was (identify's join): the per-device tables whose rows
    # its `carry_device` moves to the new address (table -> what, in words), and those it does
    # not move (table -> why). Every backed-up table keyed by a device is in one of the two.
    carries: Mapping[str, str] = field(default_factory=dict)
    stays: Mapping[str, str] = field(default_factory=dict)


def component_names() -> tuple[str, ...]:
    from .config import KNOWN_COMPONENTS
    return KNOWN_COMPONENTS


def of(component: str) -> Manifest:
    if component == "core":
        from .core_manifest import MANIFEST
        return MANIFEST
    return importlib.import_module(f"homework.components.{component}.manifest").MANIFEST


@cache
def every() -> tuple[Manifest, ...]:
    """The core's manifest, then every known component's, in config.KNOWN_COMPONENTS order."""
    return tuple(of(name) for name in ("core", *component_names()))


def tables() -> tuple[Table, ...]:
    return tuple(t for m in every() for t in m.tables)


def settings_key_check(key: str) -> Callable[[str, str], object] | None:
    """The check of a `settings` row's value, from the manifest that declares its key."""
    for m in every():
        for declared, check in m.settings_keys.items():
            if key == declared or (declared.endswith(".") and key.startswith(declared)):
                return check
    return None


def counter_help(name: str) -> str | None:
    """What a counter counts; a core pattern like "*.errors" covers every component's."""
    declared = {k: v for m in every() for k, v in m.counters.items()}
    if name in declared:
        return declared[name]
    return next((what for pattern, what in declared.items() if fnmatch.fnmatchcase(name, pattern)), None)


def markdown() -> str:
    """The table of docs/architecture.md's "Manifests" section (tests/unit/test_manifests.py
    keeps it current)."""
    def names(items) -> str:
        return ", ".join(f"`{i}`" for i in items) or "-"

    def table_text(t: Table) -> str:
        mark = {Backup.SETTINGS: "", Backup.SECRETS: " (secret)", Backup.NONE: " (not backed up)"}[t.backup]
        return f"`{t.name}`{mark}"

    rows = ["| component | tables | route modules | publishes | hears | alerts | counters |",
            "|---|---|---|---|---|---|---|"]
    for m in every():
        rows.append(f"| {m.component} | {', '.join(table_text(t) for t in m.tables) or '-'} | {names(m.routes)} "
                    f"| {names(c.TOPIC for c in m.publishes)} | {names(c.TOPIC for c in m.hears)} "
                    f"| {names(k.value for k in m.alerts)} | {len(m.counters)} |")
    return "\n".join(rows)
