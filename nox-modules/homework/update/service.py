"""The controller's side of updates: one update at a time, its progress, and the reboot.

    update-start {path}   verify the .hwup at path (400 with the reason, nothing written),
                          then install it into the inactive slot in the background
    update-status         {enabled, state, percent, version, error, reason, running, other}
    reboot                run [update] reboot_command (not while an update is being written)

state: idle | receiving (the API is storing an upload) | verifying | writing |
ready-to-reboot | failed. After a controller restart, an installed update that was not
booted yet (the other slot's entry still +1, GRUB's try_slot set) shows as ready-to-reboot
again: the boot loaders are the record, nothing else needs to be kept.
"""
from __future__ import annotations

import logging
import shlex
import subprocess
import threading
from pathlib import Path

from ..commands import CommandError
from . import apply as applier
from . import hwup, slots

log = logging.getLogger("homework.update")
BUSY = ("receiving", "verifying", "writing")


class Updater:
    def __init__(self, config, state_db: Path | None):
        self.config = config
        self.state_db = state_db
        self._lock = threading.Lock()
        self._status = {"state": "idle", "percent": 0, "version": None, "error": None, "reason": None}
        # An upload left by a controller that stopped while it was being written is useless now.
        for stale in self.work_dir().glob("upload.hwup*") if self.work_dir().is_dir() else ():
            stale.unlink(missing_ok=True)

    # -- where things are --------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return bool(self.config.update_enabled)

    def work_dir(self) -> Path:
        return Path(self.config.update_work_dir or Path(self.config.state_dir) / "update")

    def running(self) -> hwup.Running:
        return hwup.read_running(self.config.update_version_file)

    def running_slot(self) -> str | None:
        return slots.running_slot(self.config.update_cmdline_file)

    def target(self) -> applier.Target:
        slot = self.running_slot()
        if slot is None:
            raise CommandError(f"this system was not booted from an A/B slot (no root=PARTLABEL=hw-root-a|b "
                               f"in {self.config.update_cmdline_file}): it cannot be updated in place", 409)
        other = slots.other(slot)
        return applier.Target(other, slots.slot_device(self.config.update_slot_device, other),
                              Path(self.config.update_esp_dir), self.config.update_esp_mount_command)

    def need_enabled(self) -> None:
        if not self.enabled:
            raise CommandError("updates are off on this system ([update] enabled = false): "
                               "flash the new image instead", 409)

    # -- status --------------------------------------------------------------------------
    def _set(self, **changes) -> None:
        with self._lock:
            self._status.update(changes)

    def progress(self, phase: str, percent: int) -> None:
        state = "ready-to-reboot" if phase == "ready-to-reboot" else "writing"
        self._set(state=state, percent=int(percent), phase=phase)

    def status(self) -> dict:
        with self._lock:
            out = dict(self._status)
        running = self.running()
        slot = self.running_slot()
        out.update(enabled=self.enabled,
                   running={"version": running.version, "sequence": running.sequence, "arch": running.arch,
                            "slot": slot},
                   other=None)
        if slot is not None and self.enabled:
            esp = Path(self.config.update_esp_dir)
            other = slots.slot_info(esp, slots.other(slot))
            out["other"] = other
            pending = (other["state"] == "trying" and
                       slots.read_grubenv(esp).get("try_slot") == other["slot"])
            if out["state"] == "idle" and pending:
                out.update(state="ready-to-reboot", percent=100, version=other["version"])
        return out

    def slot_text(self) -> str:
        slot = self.running_slot()
        if slot is None:
            return "single (not booted from an A/B slot)"
        return f"{slot.upper()} (updates go to {slots.other(slot).upper()})"

    # -- the update --------------------------------------------------------------------------
    def claim(self, state: str = "receiving") -> None:
        """Take the single update lane (the API calls this before storing an upload)."""
        self.need_enabled()
        with self._lock:
            if self._status["state"] in BUSY:
                raise CommandError(f"an update is already {self._status['state']}: wait for it to finish", 409)
            self._status = {"state": state, "percent": 0, "version": None, "error": None, "reason": None}

    def release(self, error: str | None = None, reason: str | None = None) -> None:
        self._set(state="failed" if error else "idle", error=error, reason=reason, percent=0)

    def start(self, path, remove: bool = False, claimed: bool = False) -> dict:
        """Verify now (the caller waits: a refusal is its answer), then write in the background."""
        if not claimed:
            self.claim("verifying")
        self._set(state="verifying")
        path = Path(path)
        try:
            target = self.target()
            key = hwup.load_public_key(self.config.update_public_key)
            bundle = hwup.verify(path, key, self.running())
        except hwup.UpdateRefused as exc:
            self._cleanup(path, remove)
            self.release(str(exc), exc.reason)
            log.warning("update refused: %s", exc)
            raise CommandError(f"update refused: {exc}", 400) from None
        except CommandError as exc:
            self._cleanup(path, remove)
            self.release(str(exc))
            raise
        except Exception as exc:      # noqa: BLE001 - never leave the lane taken: report it
            self._cleanup(path, remove)
            self.release(f"{type(exc).__name__}: {exc}")
            log.exception("update check failed")
            raise CommandError(f"update not possible: {exc}", 400 if isinstance(exc, ValueError) else 500) from None
        self._set(state="writing", percent=0, version=bundle.version)
        log.info("installing %s (build %d) into slot %s (%s)", bundle.version, bundle.sequence,
                 target.slot, target.device)
        threading.Thread(target=self._run, args=(bundle, target, remove), name="update-apply",
                         daemon=True).start()
        return {"state": "writing", "version": bundle.version, "slot": target.slot}

    def _run(self, bundle: hwup.Bundle, target: applier.Target, remove: bool) -> None:
        try:
            result = applier.apply(bundle, target, self.state_db, self.progress)
        except hwup.UpdateRefused as exc:
            log.error("update %s refused while writing: %s", bundle.version, exc)
            self.release(str(exc), exc.reason)
        except Exception as exc:      # noqa: BLE001 - any failure: report it, the old slot still boots
            log.exception("update %s failed", bundle.version)
            self.release(f"{type(exc).__name__}: {exc}" if not isinstance(exc, applier.ApplyError) else str(exc))
        else:
            log.info("update %s written to slot %s: reboot to try it", bundle.version, result["slot"])
        finally:
            self._cleanup(bundle.path, remove)

    @staticmethod
    def _cleanup(path: Path, remove: bool) -> None:
        if remove:
            Path(path).unlink(missing_ok=True)

    def reboot(self) -> dict:
        # Only a router image (updates on) reboots itself: a controller on a development
        # machine or in the tests must never run `systemctl reboot` on its host.
        if not self.enabled:
            raise CommandError("reboot is off on this system ([update] enabled = false)", 409)
        with self._lock:
            state = self._status["state"]
        if state in BUSY:
            raise CommandError(f"an update is {state}: reboot when it is ready", 409)
        command = shlex.split(self.config.update_reboot_command)
        if not command:
            raise CommandError("no [update] reboot_command is set", 503)
        log.warning("reboot requested: %s", " ".join(command))
        try:
            subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise CommandError(f"cannot run {command[0]}: {exc}", 500) from None
        return {"rebooting": True}


def register(core) -> None:
    """Commands for the API, the CLI and the board (the core made ctx.updater, which the
    API's upload uses)."""
    updater = core.ctx.updater
    core.commands.register("update-start", lambda path: updater.start(path))
    core.commands.register("update-status", updater.status)
    core.commands.register("reboot", updater.reboot)
