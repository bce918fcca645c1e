"""Backup and restore of the settings.

    backup  {passphrase}            -> {"filename", "document"}: the .hwbak file's JSON
    restore {passphrase, backup | path} -> {"restored": {table: rows}, "restarting": true, "note"}

The settings are read from state.db through the state store (contents.py), packed with
the secrets encrypted (fileformat.py), and a restore checks the format, the schema, the
integrity and every row (validate.py) before it writes anything, in one transaction
(apply.py). What a backup does not carry is made ready first: its blocklists are fetched
before anything is written (their names are in force from the restored controller's
first moment, never "missing"). The components keep some settings in memory (devices,
DNS policy, schedules, tokens), read at start: rather than teach each of them to reload,
a restore restarts the controller in place a moment after answering (restart.py,
ctx.restart); the restored settings then come in through every component's own load
path. The answer says `applied: false`; the restored controller says `applied: true` in
`restore-status` (GET /ws.v1/restore/status) once everything is in force (the switch
driven, homework-dnsd told, every list's names loaded). The CLI and the board say
"restored" only then. Without ctx.restart (a core built in a test) the answer says
restarting: false and asks for a restart.
"""
from __future__ import annotations

import json
import logging
import os
import sqlite3
from pathlib import Path

from ... import __version__, migrations, wifi
from ...commands import CommandError
from ...component import Component
from ...interfaces import DnsdReady, RestoredLists
from ...restart import back_in
from ...worker import offload
from .apply import apply
from .contents import collect
from .fileformat import BackupError, filename, pack, parse, read_file, unpack
from .validate import validate

log = logging.getLogger(__name__)
RESTART_NOTE = "Restart the controller (systemctl restart homework-controller) to use the restored settings."
RESTARTING_NOTE = "The router restarts now to apply the restored settings; it is back {back}."
MARKER = "restore.json"          # in the state directory: what the last restore wrote, and whether it is in force
APPLIED_CHECK_SECONDS = 0.5


class Backup(Component):
    name = "backup"

    def __init__(self, ctx, lists: RestoredLists | None = None, dnsd: DnsdReady | None = None):
        super().__init__(ctx)
        self.lists = lists      # the blocklists component's (interfaces.py); None: not loaded
        self.dnsd = dnsd        # the dns component's; None: not loaded

    def _wifi_env(self) -> Path:
        return Path(self.ctx.config.state_dir) / wifi.ENV_NAME

    def _marker(self) -> Path:
        return Path(self.ctx.config.state_dir) / MARKER

    def start(self) -> None:
        self.ctx.commands.register("backup", self.backup)
        self.ctx.commands.register("restore", self.restore)
        self.ctx.commands.register("restore-status", self.status)
        self.restored = _read_json(self._marker())
        if self.restored is not None and not self.restored.get("applied"):
            self.ctx.every(APPLIED_CHECK_SECONDS, self._check_applied)

    def status(self) -> dict:
        """The last restore: what it wrote, its problems, and whether it is in force yet."""
        return {"restore": self.restored}

    def _check_applied(self) -> None:
        """In the restored controller: everything in force? The switch driven (flows and
        leases), homework-dnsd told the restored policy, every list's names loaded."""
        if self.restored is None or self.restored.get("applied"):
            return
        waiting = []
        if self.ctx.datapath is None:
            waiting.append("the switch")
        if self.dnsd is not None and not self.dnsd.ready():
            waiting.append("homework-dnsd")
        if self.lists is not None and self.lists.pending():
            waiting.append("the blocklists' names")
        if waiting:
            self.restored["waiting"] = waiting
            return
        self.restored.pop("waiting", None)
        self.restored.update(applied=True, applied_at=self.ctx.now())
        _write_json(self._marker(), self.restored)
        log.warning("the restored settings are in force")

    def backup(self, passphrase=None) -> dict:
        state = self.ctx.state
        with state.transaction():       # one consistent read (queued writes flushed first)
            settings, secrets = collect(lambda sql: state.db.execute(sql).fetchall())
        network = wifi.read_env(self._wifi_env())
        if network.get("SSID") and network.get("PASSPHRASE"):
            secrets["wifi"] = [{"ssid": network["SSID"], "passphrase": network["PASSPHRASE"]}]
        try:     # scrypt and AES of a large file: never on the event loop
            doc = offload(lambda: pack(settings, secrets, passphrase, schema=migrations.LATEST,
                                       software=__version__))
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        return {"filename": filename(), "document": doc}

    def restore(self, passphrase=None, backup=None, path=None) -> dict:
        """`backup`: the document (the API); `path`: a file on the router (the CLI: the
        control socket takes requests of at most 64 KiB, a backup may be larger)."""
        try:     # parsing a 4 MiB document, scrypt and every row's check: never on the event loop
            doc = offload(parse, read_file(path) if path else backup)
            settings, secrets = offload(unpack, doc, passphrase, migrations.LATEST)
            offload(validate, settings, secrets)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        # made ready before anything is written: the blocklists' names (a backup has their URLs)
        lists = self.lists
        prefetched = lists.prefetch(settings.get("blocklists", [])) if lists else {}
        try:
            written = apply(self.ctx.state, settings, secrets)
        except sqlite3.IntegrityError as exc:     # e.g. the same rule twice: rolled back, nothing changed
            if lists is not None:
                lists.drop_prefetched(prefetched)
            raise CommandError(f"backup: rows that cannot go together ({exc}): nothing restored") from None
        problems = lists.adopt(prefetched) if lists is not None else []
        for network in secrets.get("wifi", []):    # checked by validate(); applied like the settings page
            try:
                self.ctx.commands.call("set-wifi", ssid=network["ssid"], passphrase=network["passphrase"])
                written["wifi"] = 1
            except CommandError as exc:     # the settings are in; say what did not come back
                log.error("the backup's Wi-Fi settings were not restored: %s", exc)
                written["wifi"] = 0
        log.warning("settings restored from a backup made %s (schema %s, software %s): %s",
                    doc.get("created"), doc.get("schema"), doc.get("software"), written)
        restart = self.ctx.restart
        restarting = restart is not None
        seconds = back_in(restart) if restart is not None else None
        self.restored = {"created": doc.get("created"), "restored": written, "problems": problems,
                         "applied": False, "at": self.ctx.now()}
        _write_json(self._marker(), self.restored)
        if restart is not None:
            restart("settings restored from a backup")
        return {"restored": written, "created": doc.get("created"), "schema": doc.get("schema"),
                "software": doc.get("software"), "restarting": restarting, "applied": False,
                "problems": problems, "at": self.restored["at"], "back_in": seconds,
                "note": RESTARTING_NOTE.format(back=f"in about {seconds} s" if seconds else "in a few seconds")
                if restarting else RESTART_NOTE}


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".new")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
