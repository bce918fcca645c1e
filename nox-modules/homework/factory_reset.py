"""Factory reset: forget everything the household set up and start over.

    factory-reset {confirm: "erase everything"} -> {"restarting": true, "note"}

Once the controller has stopped (restart.py), every flow on the switch is deleted (a
device the new start knows nothing of must not keep its forwarding), state.db (with its
WAL) and the fetched blocklists are deleted, then the controller starts again in place on an empty database:
every device is a stranger, every rule, schedule, limit, token and session is gone.
Kept: what the router, not the household, owns in the state dir (the image's router.conf,
Wi-Fi settings, TLS certificate, the ULA prefix, hwdb's log) and the initial admin
password file: a reset router is logged into with the password on its label / from first
boot, as a new one is. The image moves that file aside once the password was changed
(homework-firstboot), so the reset puts it back.

A reset router is not set up (firsthour.py): the answer carries a set-up code, shown to
whoever reset it, with which a device on the Wi-Fi sets it up again (a wired one needs
nothing). The code is kept beside state.db, which the reset deletes.

The addresses devices hold are the router's bookkeeping, not the household's settings:
the new state.db starts with their leases, each device a pending stranger (no name, no
decision). So the device that pressed the reset lands on the waiting page, and its set-up
offer, at once, instead of being cut off until its DHCP client renews (half its lease: up
to half an hour for a permitted device).
"""
from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

from . import firsthour
from .commands import CommandError
from .flows import FlowDelete
from .restart import back_in

log = logging.getLogger(__name__)
CONFIRM = "erase everything"
WIPED_FILES = ("state.db", "state.db-wal", "state.db-shm", "state.db-journal")
WIPED_DIRS = ("blocklists",)
FLUSH_SECONDS = 0.3      # lets the flow delete leave the send queue before the exec
NOTE = "restarting: the controller erases its state and restarts now"


def check_confirmation(confirm) -> None:
    if confirm != CONFIRM:
        raise CommandError(f"factory reset: confirm with the exact phrase {CONFIRM!r}")


def wipe(state_dir: Path, password_file: str = "") -> list[str]:
    """Delete the controller's state in `state_dir` (the database must be closed); returns what went."""
    gone = []
    for name in WIPED_FILES:
        path = state_dir / name
        if path.exists():
            path.unlink()
            gone.append(name)
    for name in WIPED_DIRS:
        path = state_dir / name
        if path.is_dir():
            shutil.rmtree(path)
            gone.append(name + "/")
    if password_file:
        consumed = Path(password_file + ".consumed")
        if consumed.exists() and not os.path.exists(password_file):
            consumed.rename(password_file)        # the console's first password works again
            gone.append(consumed.name + " -> " + Path(password_file).name)
    return gone


def keep_addresses(state_db: Path, leases: list[dict], now: float) -> None:
    """A fresh state.db holding these lease rows, each device pending and nameless."""
    from .state import StateStore
    store = StateStore(state_db)
    try:
        for row in leases:
            store.touch_device(row["mac"], row["hostname"], now)
            store.execute("INSERT INTO leases (mac, block, expires, port, hostname, relay) VALUES (?,?,?,?,?,?)",
                          (row["mac"], row["block"], row["expires"], row["port"], row["hostname"], ""))
    finally:
        store.close()
    log.warning("factory reset: %d devices keep their addresses, pending", len(leases))


def register(core) -> None:
    ctx = core.ctx

    def factory_reset(confirm=None) -> dict:
        check_confirmation(confirm)
        if ctx.restart is None:
            raise CommandError("factory reset: this controller cannot restart itself (not started by main)")
        config = ctx.config
        pwfile = config.api_admin_password_file
        if pwfile and not os.path.exists(pwfile) and not os.path.exists(pwfile + ".consumed"):
            # The api component reads it at its first start: without it nobody could log in.
            raise CommandError(f"factory reset refused: the admin password file {pwfile} is missing, "
                               "and a reset router would have no admin password", 409)

        def erase() -> None:
            # Every flow goes: the restarted controller only resynchronises devices it has
            # leases for, and the erased ones would keep their forwarding until then.
            core.send([FlowDelete()])
            time.sleep(FLUSH_SECONDS)     # eventlet's: the OpenFlow sender runs meanwhile
            kept = [row for row in core.state.leases() if not row["relay"]]
            core.state.close()
            gone = wipe(Path(config.state_dir), config.api_admin_password_file)
            log.warning("factory reset: deleted %s", ", ".join(gone) or "nothing")
            keep_addresses(Path(config.state_db), kept, ctx.now())
        code = firsthour.new_setup_code(config.state_dir)
        ctx.restart("factory reset", then=erase)
        seconds = back_in(ctx.restart)
        note = NOTE + (f" (back in about {seconds} s)" if seconds else " (back in a few seconds)")
        return {"restarting": True, "note": note, "setup_code": code, "back_in": seconds}

    core.commands.register("factory-reset", factory_reset)
