"""The API's manifest (homework/manifest.py): the admin password, sessions and tokens,
the route modules of its own (sessions, decisions, devices, usage and notifications
until they move to their components' route groups), what it streams to the board."""
from __future__ import annotations

from ... import events, rowcheck
from ...manifest import Manifest, NotBackedUp, Secrets
from ...passwords import BadHash, check_hash
from .paneldisplay import KEY as PANEL_NIGHT, check_night


def admin_row(r: dict) -> None:
    rowcheck.number(r.get("id", 1), "id", 1, 1, whole=True)
    try:
        check_hash(r["password_hash"])      # bounded scrypt cost: one wrong login must stay cheap
    except BadHash as exc:
        raise ValueError(f"password_hash: {exc}") from None
    rowcheck.number(r.get("changed", 0), "changed")


def token_row(r: dict) -> None:
    rowcheck.text(r["id"], "id", empty=False)
    rowcheck.text(r["name"], "name")
    rowcheck.choice(r["role"], "role", ("admin", "read-only"))
    rowcheck.text(r["token_hash"], "token_hash", empty=False)
    for key in ("created", "last_used", "revoked"):
        rowcheck.number(r.get(key, 0), key)


MANIFEST = Manifest(
    component="api",
    tables=(
        Secrets("api_admin", (1, 13), ("id", "password_hash", "changed"), admin_row,
                left_out={"chosen": "a restored password hash counts as the household's own (the column's default)"}),
        Secrets("api_tokens", (1,), ("id", "name", "role", "token_hash", "created", "last_used", "revoked"),
                token_row),
        NotBackedUp("api_sessions", (1, 20), "sessions were signed in under the old password: a restore ends them",
                    cleared_by_restore=True),
    ),
    settings_keys={PANEL_NIGHT: lambda key, value: check_night(value)},     # panels' screens at night
    routes=("app", "parity", "setup", "captive", "panels"),
    publishes=(events.Alert,),
    hears=(events.Device, events.Identity, events.Lease, events.Link, events.Bandwidth, events.Alert,
           events.Schedule, events.Restart, events.CutOffChanged,
           events.QosDevice, events.Nearby, events.Satellite),
    alerts=(events.AlertKind.STORAGE_FULL, events.AlertKind.STORAGE_ERROR),
)
