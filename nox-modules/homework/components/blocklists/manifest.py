"""Blocklists' manifest (homework/manifest.py): the subscriptions (backed up without
their fetch statistics: the names are fetched again) and the DNS options it sets
(safe-search)."""
from __future__ import annotations

from ... import events, rowcheck
from ...manifest import Manifest, Settings

FETCH_STATISTICS = "fetch statistics: the list is fetched again"


def blocklist_row(r: dict) -> None:
    rowcheck.url(r["url"], "url")
    rowcheck.text(r.get("owner", "*"), "owner", empty=False)
    rowcheck.number(r.get("enabled", 1), "enabled", 0, 1, whole=True)
    rowcheck.number(r.get("added", 0), "added")
    rowcheck.number(r.get("allow_local", 0), "allow_local", 0, 1, whole=True)


MANIFEST = Manifest(
    component="blocklists",
    tables=(
        Settings("blocklists", (7, 15), ("url", "owner", "enabled", "added", "allow_local"), blocklist_row,
                 left_out={"id": "row ids are given anew; the names are fetched again",
                           **{c: FETCH_STATISTICS for c in ("fetched", "checked", "rules", "exceptions",
                                                            "skipped", "error")}}),
        Settings("dns_options", (7,), ("key", "value"), rowcheck.option),     # safe_search
    ),
    routes=("blocklists",),
    hears=(events.Device,),
)
