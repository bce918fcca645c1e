"""Blocklists' manifest (homework/manifest.py): the subscriptions (backed up without
their fetch statistics: the names are fetched again). The safe-search switch it sets is
one of the DNS options (the dns manifest's dns_options)."""
from __future__ import annotations

from ... import events, rowcheck
from ...interfaces import DnsLists, RestoredLists
from ...manifest import Manifest, Settings
from .fetch import FetchError, check_url

FETCH_STATISTICS = "fetch statistics: the list is fetched again"


def blocklist_row(r: dict) -> None:
    try:
        check_url(r["url"])          # the check a blocklist add makes
    except FetchError as exc:
        raise ValueError(str(exc)) from None
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
    ),
    routes=("blocklists",),
    needs={"dns": DnsLists},
    offers=(RestoredLists,),
    hears=(events.Device,),
    stays={"blocklists": "a list is the household's or an owner's: an owner's follows the owner, which the join "
                         "carries"},
)
