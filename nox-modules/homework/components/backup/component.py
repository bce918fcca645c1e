"""Backup and restore of the settings.

    backup  {passphrase}            -> {"filename", "document"}: the .hwbak file's JSON
    restore {passphrase, backup | path} -> {"restored": {table: rows}, "restarting": true, "note"}

The settings are read from state.db through the state store (contents.py), packed with
the secrets encrypted (fileformat.py), and a restore checks the format, the schema, the
integrity and every row (validate.py) before it writes anything, in one transaction
(apply.py). The components keep some settings in memory (devices, DNS policy, schedules,
tokens), read at start: rather than teach each of them to reload, a restore restarts the
controller in place a moment after answering (restart.py, ctx.restart); the restored
settings then come in through every component's own load path. Without ctx.restart (a
core built in a test) the answer says restarting: false and asks for a restart.
"""
from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from ... import __version__, migrations, wifi
from ...commands import CommandError
from ...component import Component
from ...worker import offload
from .apply import apply
from .contents import collect
from .fileformat import BackupError, filename, pack, parse, read_file, unpack
from .validate import validate

log = logging.getLogger(__name__)
RESTART_NOTE = "restart the controller (systemctl restart homework-controller) to use the restored settings"
RESTARTING_NOTE = "restarting: the controller restarts now to use the restored settings (back in a few seconds)"


class Backup(Component):
    name = "backup"

    def _wifi_env(self) -> Path:
        return Path(self.ctx.config.state_dir) / wifi.ENV_NAME

    def start(self) -> None:
        self.ctx.commands.register("backup", self.backup)
        self.ctx.commands.register("restore", self.restore)

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
        try:
            written = apply(self.ctx.state, settings, secrets)
        except sqlite3.IntegrityError as exc:     # e.g. the same rule twice: rolled back, nothing changed
            raise CommandError(f"backup: rows that cannot go together ({exc}): nothing restored") from None
        for network in secrets.get("wifi", []):    # checked by validate(); applied like the settings page
            try:
                self.ctx.commands.call("set-wifi", ssid=network["ssid"], passphrase=network["passphrase"])
                written["wifi"] = 1
            except CommandError as exc:     # the settings are in; say what did not come back
                log.error("the backup's Wi-Fi settings were not restored: %s", exc)
                written["wifi"] = 0
        log.warning("settings restored from a backup made %s (schema %s, software %s): %s",
                    doc.get("created"), doc.get("schema"), doc.get("software"), written)
        restarting = self.ctx.restart is not None
        if restarting:
            self.ctx.restart("settings restored from a backup")
        return {"restored": written, "created": doc.get("created"), "schema": doc.get("schema"),
                "software": doc.get("software"), "restarting": restarting,
                "note": RESTARTING_NOTE if restarting else RESTART_NOTE}
