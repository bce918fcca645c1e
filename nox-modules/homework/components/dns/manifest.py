"""DNS's manifest (homework/manifest.py): the rules, modes and options the household sets
(backed up: the resolver's settings, safe-search), the addresses it learns for the
reverse check (not), its query events and counters."""
from __future__ import annotations

from ... import events, rowcheck
from ...interfaces import DnsdReady, DnsLists
from ...manifest import Manifest, NotBackedUp, Settings
from ..schedules.windows import WindowError, parse_spec
from .names import normalize_domain
from .resolver import option_row


def rule_row(r: dict) -> None:
    if r["owner"] != "*":
        rowcheck.mac(r["owner"])
    if normalize_domain(r["domain"]) != r["domain"]:
        raise ValueError(f"domain {r['domain']!r} is not in normal form")
    rowcheck.choice(r["action"], "action", ("allow", "deny"))
    schedule = r.get("schedule", "")
    rowcheck.text(schedule, "schedule")
    if schedule:
        try:
            parse_spec(schedule)
        except WindowError as exc:
            raise ValueError(f"schedule: {exc}") from None
    rowcheck.number(r.get("created", 0), "created")


def mode_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    rowcheck.choice(r["mode"], "mode", ("denylist", "allowlist"))


MANIFEST = Manifest(
    component="dns",
    tables=(
        Settings("dns_rules", (1,), ("owner", "domain", "action", "schedule", "created"), rule_row,
                 left_out={"id": "row ids are given anew; rules are keyed by owner and domain"}),
        Settings("dns_modes", (1,), ("mac", "mode"), mode_row),
        Settings("dns_options", (7,), ("key", "value"), option_row),
        NotBackedUp("dns_learned", (1,), "the reverse check learns addresses again from answers"),
    ),
    routes=("querylog", "resolver"),
    offers=(DnsLists, DnsdReady),
    publishes=(events.DnsQuery, events.DnsAnswer),
    hears=(events.Device, events.Lease, events.Ipv6Plan, events.ScheduleStrict, events.CutOffChanged,
           events.Timezone),
    counters={
        "dns.queries": "queries homework-dnsd answered",
        "dns.answers": "upstream answers homework-dnsd reported (for the reverse check)",
        "dns.learned": "addresses learned for names a device may not use (reverse check)",
        "dns.nft_batches": "updates of the captive set in nftables",
        "dns.nft_failures": "captive set updates that failed (retried)",
    },
    carries={"dns_rules": "website rules",
             "dns_modes": "its website mode (only the allowed ones, or all but the blocked)"},
)
