"""System updates in the ws.v1 API (homework/update/):

    POST /ws.v1/system/update   body: the .hwup file (application/octet-stream)
                                -> 202 {state: "writing", version, slot}; a refused file: 400
                                   "update refused: <reason>: <detail>", nothing written
    GET  /ws.v1/system/update   -> {enabled, state, percent, phase, version, error, reason,
                                    running: {version, sequence, arch, slot}, other: {slot, state, version, sequence}}
    POST /ws.v1/system/reboot   -> {rebooting: true} (refused 409 while an update is being written,
                                   and where updates are off: only a router image reboots itself)

Admin only (a session also needs its CSRF token). The upload is streamed to
[update] work_dir, never held in memory, and deleted once written or refused.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from ...commands import CommandError

MIB = 1024 * 1024
CHUNK = MIB


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module

    def updater():
        up = getattr(app.ctx, "updater", None)
        if up is None:
            raise ApiError(503, "updates are not available in this controller")
        return up

    def receive(call, up, path: Path) -> None:
        """The request body into path, in chunks; the upload ending early is a 400."""
        length = call.req.content_length
        if not length:
            raise ApiError(400, "send the .hwup file as the request body (Content-Type: application/octet-stream)")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        free = shutil.disk_usage(path.parent).free
        if free < length:
            raise ApiError(507, f"not enough room for the update in {path.parent}: {length} bytes needed, "
                                f"{free} free")
        tmp = path.with_name(path.name + ".part")
        src = call.req.body_file_raw
        left = length
        try:
            with open(tmp, "wb") as f:
                while left:
                    chunk = src.read(min(CHUNK, left))
                    if not chunk:
                        raise ApiError(400, f"update refused: truncated: the upload ended after "
                                            f"{length - left} of {length} bytes")
                    f.write(chunk)
                    left -= len(chunk)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def upload(call):
        up = updater()
        kind = (call.req.content_type or "").lower()
        if kind not in ("application/octet-stream", "application/x-hwup", ""):
            raise ApiError(400, f"send the .hwup file itself as application/octet-stream (not {kind})")
        try:
            up.claim("receiving")
        except CommandError as exc:
            raise ApiError(exc.status, str(exc)) from None
        path = up.work_dir() / "upload.hwup"
        try:
            receive(call, up, path)
        except ApiError as exc:
            up.release(exc.message, "truncated" if "truncated" in exc.message else None)
            raise
        except OSError as exc:
            up.release(f"cannot store the upload: {exc}")
            raise ApiError(507, f"cannot store the upload in {path.parent}: {exc.strerror or exc}") from None
        except BaseException:
            up.release("the upload failed")      # a dropped connection: free the lane for the next try
            raise
        try:
            started = up.start(path, remove=True, claimed=True)
        except CommandError as exc:
            raise ApiError(exc.status, str(exc)) from None
        return json_response(started, 202)

    def status(call):
        return json_response(app.command("update-status"))

    def reboot(call):
        return json_response(app.command("reboot"))

    limit = app.ctx.config.update_max_upload_mb * MIB
    app._add("POST", "/system/update/?", upload, "admin", max_body=limit)
    app._add("GET", "/system/update/?", status, "read")
    app._add("POST", "/system/reboot/?", reboot, "admin")
