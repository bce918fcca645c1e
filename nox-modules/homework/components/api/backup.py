"""Backup and restore of the settings in the ws.v1 API (components/backup):

    POST /ws.v1/backup    {"passphrase"}            -> the .hwbak file, as a download
    POST /ws.v1/restore   {"passphrase", "backup"}  -> what was restored; the controller restarts in place
    GET  /ws.v1/restore/status                      -> {"restore": {..., "applied"}} once the restarted
                                                       controller has everything in force (public)

Admin only: a backup holds every device decision and, encrypted, the password and token
hashes. A wrong passphrase, a changed or damaged file, a backup of a newer release or
any bad row: 400 with the reason, nothing changed. The passphrase is never echoed.
"""
from __future__ import annotations

import json
from typing import Any

from webob import Response

from .model import Model, field
from .routes import Access, RouteGroup, get, needs, post

RESTORE_MAX_BODY = 4 * 1024 * 1024    # a backup of a few thousand devices; lighttpd allows 4 MiB
BACKUP = needs("backup", "backup is", "backup")
PASSPHRASE_USAGE = '{"passphrase": "..."} (at least 8 characters)'


class BackupFile(Model):
    """The .hwbak file: the settings, and the secrets (password and token hashes, webhooks)
    encrypted with the passphrase; the rest of the file is authenticated with them."""
    extra = "allow"
    format: str = field(doc="homework-backup")
    version: int
    created: str
    schema: int = field(doc="the state schema it was taken at")
    software: str
    settings: dict[str, list[dict[str, Any]]] = field(doc="table -> rows")
    secrets: dict[str, Any] = field(doc="kdf, n, r, p, salt, nonce, ciphertext")


class BackupBody(Model):
    usage = PASSPHRASE_USAGE
    passphrase: str = field(secret=True, doc="at least 8 characters")


class RestoreBody(Model):
    usage = '{"passphrase": "...", "backup": <the backup file\'s JSON>}'
    passphrase: str = field(secret=True)
    backup: dict[str, Any] = field(doc="the .hwbak file's JSON")


class Restored(Model):
    """What was restored (rows per table); the controller then restarts in place, and says
    `applied` in GET /restore/status once every setting is in force."""
    restored: dict[str, int]
    created: str | None
    schema: int | None
    software: str | None
    restarting: bool
    applied: bool = field(doc="false here: the restarted controller says when (GET /restore/status)")
    problems: list[str] = field(doc="what did not come back, in words (a blocklist that could not be fetched)")
    at: float = field(doc="the restore's id in GET /restore/status, epoch seconds")
    back_in: int | None = field(doc="seconds until the restarted router answers, its estimate; null: not known "
                                    "or not restarting")
    note: str


class LastRestore(Model):
    """The last restore, as the restarted controller sees it."""
    extra = "allow"
    created: str | None
    restored: dict[str, int]
    problems: list[str]
    applied: bool = field(doc="every restored setting in force: the switch driven, homework-dnsd told, every "
                              "blocklist's names loaded")
    at: float = field(doc="epoch seconds: the restore's answer's `at`")
    applied_at: float | None = field(optional=True, doc="when it was all in force")
    waiting: list[str] | None = field(optional=True, doc="what it still waits for, in words")


class RestoreStatus(Model):
    """The last restore since the router was set up (null: none)."""
    restore: LastRestore | None


class BackupRoutes(RouteGroup):
    tag = "system"

    @post("/backup", Access.ADMIN, "Download a backup of the settings (admin): devices and decisions, names, DNS "
          "rules and modes, schedules, blocklist subscriptions, usage limits; the password and token hashes and "
          "webhooks encrypted with the passphrase", name="backupSettings", body=BackupBody, body_required=True,
          answer=BackupFile, needs=BACKUP, errors={400: "no passphrase, or one shorter than 8 characters"},
          board="backup")
    def backup(self, call, body):
        result = self.api.command("backup", passphrase=body.passphrase)
        resp = Response(json.dumps(result["document"], indent=1, sort_keys=True),
                        content_type="application/json", charset="utf-8")
        resp.headers["Content-Disposition"] = f'attachment; filename="{result["filename"]}"'
        resp.headers["Cache-Control"] = "no-store"
        return resp

    @post("/restore", Access.ADMIN, "Replace the settings with a backup's (admin); everything is checked first, a "
          "bad file changes nothing; the controller then restarts in place and says when the settings are in "
          "force (GET /restore/status)", name="restoreSettings",
          body=RestoreBody, body_required=True, answer=Restored, needs=BACKUP, max_body=RESTORE_MAX_BODY,
          errors={400: "a wrong passphrase, a changed or damaged file, a newer release's backup or a bad row: "
                       "nothing changed"}, board="restore")
    def restore(self, call, body):
        return self.api.command("restore", passphrase=body.passphrase, backup=body.backup)

    # public: after a restore the board's session is gone (the controller restarted), and
    # the answer says only whether the restored settings are in force yet
    @get("/restore/status", Access.PUBLIC, "The last restore and whether the restarted controller has every "
         "restored setting in force yet (`applied`); public, as the restore ended every session",
         name="restoreStatus", answer=RestoreStatus, needs=BACKUP)
    def restore_status(self, call):
        return self.api.command("restore-status")
