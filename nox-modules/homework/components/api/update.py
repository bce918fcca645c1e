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
from typing import Literal

from ...commands import CommandError
from .http import ApiError
from .model import Model, field
from .routes import Access, RouteGroup, get, post

MIB = 1024 * 1024
CHUNK = MIB


class Running(Model):
    version: str
    sequence: int
    arch: str
    slot: str | None = field(doc="a or b; null off an A/B image")


class OtherSlot(Model):
    slot: str
    state: str = field(doc="empty, good, trying, bad, ...")
    version: str | None
    sequence: int | None


class UpdateStatus(Model):
    """Update progress and the A/B slots."""
    state: Literal["idle", "receiving", "verifying", "writing", "ready-to-reboot", "failed"]
    percent: int
    version: str | None = field(doc="the update's version, once known")
    error: str | None
    reason: str | None = field(doc="a refusal's short reason (e.g. truncated, signature)")
    phase: str = field(optional=True, doc="what the writing is doing now")
    enabled: bool = field(doc="[update] enabled: off where the router is not an A/B image")
    running: Running
    other: OtherSlot | None


class UpdateStarted(Model):
    state: Literal["writing"]
    version: str
    slot: str


class Rebooting(Model):
    rebooting: bool


class UpdateRoutes(RouteGroup):
    tag = "system"

    def updater(self):
        up = getattr(self.api.ctx, "updater", None)
        if up is None:
            raise ApiError(503, "updates are not available in this controller")
        return up

    def receive(self, call, path: Path) -> None:
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

    @post("/system/update", Access.ADMIN, "Upload a signed .hwup update (admin): verified before anything is "
          "written, then written to the inactive slot in the background", name="postUpdate",
          request_type="application/octet-stream", answer=UpdateStarted, status=202,
          max_body=lambda api: api.ctx.config.update_max_upload_mb * MIB,
          errors={400: "update refused: the reason (signature, architecture, older version, truncated, ...); "
                       "nothing written",
                  409: "an update is already under way, or updates are off here",
                  507: "not enough room for the upload"}, board="upload")
    def upload(self, call):
        up = self.updater()
        kind = (call.req.content_type or "").lower()
        if kind not in ("application/octet-stream", "application/x-hwup", ""):
            raise ApiError(400, f"send the .hwup file itself as application/octet-stream (not {kind})")
        try:
            up.claim("receiving")
        except CommandError as exc:
            raise ApiError(exc.status, str(exc)) from None
        path = up.work_dir() / "upload.hwup"
        try:
            self.receive(call, path)
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
            return up.start(path, remove=True, claimed=True)
        except CommandError as exc:
            raise ApiError(exc.status, str(exc)) from None

    @get("/system/update", Access.READ, "Update progress and the A/B slots: state idle|receiving|verifying|writing|"
         "ready-to-reboot|failed", name="getUpdate", answer=UpdateStatus, board="update")
    def status(self, call):
        return self.api.command("update-status")

    @post("/system/reboot", Access.ADMIN, "Reboot the router (admin), e.g. into an update that is ready-to-reboot",
          name="reboot", answer=Rebooting, errors={409: "an update is being written, or updates are off here"})
    def reboot(self, call):
        return self.api.command("reboot")
