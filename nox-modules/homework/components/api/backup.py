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

RESTORE_MAX_BODY = 4 * 1024 * 1024    # a backup of a few thousand devices; lighttpd allows 4 MiB


def add_routes(app) -> None:
    from webob import Response

    from .app import ApiError, json_response     # here: app.py imports this module

    def need() -> None:
        if "backup" not in app.ctx.commands.names():
            raise ApiError(503, "backup is not available: the backup component is not loaded "
                                "(add \"backup\" to [controller] components)")

    def fields(call, allowed: set[str]) -> dict:
        data = app.fields(call, allowed)
        if not isinstance(data.get("passphrase"), str):
            raise ApiError(400, "send {\"passphrase\": \"...\"} (at least 8 characters)")
        return data

    def backup(call):
        need()
        data = fields(call, {"passphrase"})
        result = app.command("backup", passphrase=data["passphrase"])
        resp = Response(json.dumps(result["document"], indent=1, sort_keys=True),
                        content_type="application/json", charset="utf-8")
        resp.headers["Content-Disposition"] = f'attachment; filename="{result["filename"]}"'
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def restore(call):
        need()
        data = fields(call, {"passphrase", "backup"})
        if not isinstance(data.get("backup"), dict):
            raise ApiError(400, "send {\"passphrase\": \"...\", \"backup\": <the backup file's JSON>}")
        return json_response(app.command("restore", passphrase=data["passphrase"], backup=data["backup"]))

    def restore_status(call):
        need()
        return json_response(app.command("restore-status"))

    app._add("POST", "/backup/?", backup, "admin")
    # public: after a restore the board's session is gone (the controller restarted), and
    # the answer says only whether the restored settings are in force yet
    app._add("GET", "/restore/status/?", restore_status, "public")
    app._add("POST", "/restore/?", restore, "admin", max_body=RESTORE_MAX_BODY)
