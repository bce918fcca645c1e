"""The household's DNS policy: per-device and household-wide allow/deny rules and the
per-device mode, stored in the controller's SQLite and mirrored in memory for lookups.

Decision (identical to dnsd/src/policy.rs, which applies it on the query path):
  1. the browsers' DoH canary and the iCloud Private Relay names are NXDOMAIN for everyone;
  2. otherwise the most specific matching rule wins (a rule for example.com covers its
     subdomains); at the same name a device rule beats a household rule;
  3. no rule: blocked if a blocklist that applies to the device (the household's, or one
     for the device's owner) lists the name or a parent of it; explicit rules beat lists,
     so an `allow` rule un-blocks a listed name (components/blocklists);
  4. otherwise allowed, unless the device is in allow-list mode.

Schedules: a rule may carry a `schedule` (components/schedules/windows.py
text, e.g. "sun-thu 21:30-07:00"; '' = always). It only counts while a window of its
schedule is open: `rules` holds the rules in force now, `scheduled` every rule with a
schedule, and `refresh` moves them in and out as windows open and close. A device in a
dns-strict schedule window (`strict`) is in allow-list mode meanwhile.
"""
from __future__ import annotations

import logging
import threading
from datetime import tzinfo, UTC

from ...interfaces import BlockedNames
from ...macaddr import normalize
from ..schedules.windows import Window, WindowError, any_open, parse_spec, spec_text
from .names import normalize_domain, suffixes

HOUSEHOLD = "*"
ACTIONS = ("allow", "deny")
MODES = ("denylist", "allowlist")
CANARIES = frozenset({"use-application-dns.net", "mask.icloud.com", "mask-h2.icloud.com"})
log = logging.getLogger("homework.dns")



def owner_of(mac: str | None) -> str:
    """A device MAC (':' or '-') or None/'*'/'household' for the household-wide list."""
    if mac is None or mac in (HOUSEHOLD, "household", ""):
        return HOUSEHOLD
    return normalize(mac)


class Policy:
    def __init__(self, state, clock, tz: tzinfo = UTC):
        self.state = state
        self.clock = clock
        self.tz = tz
        self._lock = threading.RLock()
        self.rules: dict[str, dict[str, str]] = {}     # owner -> domain -> action (in force now)
        # (owner, domain) -> (action, windows): the rules that only count in their windows
        self.scheduled: dict[tuple[str, str], tuple[str, tuple[Window, ...]]] = {}
        self.strict: frozenset[str] = frozenset()      # devices in a dns-strict window now
        self.modes: dict[str, str] = {}
        # blocklists: list id -> (MACs it applies to or None for every device, its names);
        # replaced whole on change, so lookups iterate it without the lock
        self.lists: dict[str, tuple[frozenset | None, BlockedNames]] = {}
        for row in state.execute("SELECT owner, domain, action, schedule FROM dns_rules"):
            if row["schedule"]:
                try:
                    self.scheduled[(row["owner"], row["domain"])] = (row["action"], parse_spec(row["schedule"]))
                except WindowError as exc:      # never written so; kept in force rather than dropped
                    log.warning("dns rule %s %s: bad schedule %r (%s): applied always",
                                row["owner"], row["domain"], row["schedule"], exc)
                    self.rules.setdefault(row["owner"], {})[row["domain"]] = row["action"]
                continue
            self.rules.setdefault(row["owner"], {})[row["domain"]] = row["action"]
        self.refresh()
        for row in state.execute("SELECT mac, mode FROM dns_modes"):
            self.modes[row["mac"]] = row["mode"]

    # -- changes (persisted first, then in memory) ------------------------------------------
    def set_rules(self, owner: str, domains: list[str], action: str, schedule: str | None = None) -> list[dict]:
        """Add or replace rules for several domains in one transaction; `schedule`: when
        they count (windows text, '' or None = always). Each result says if it is `active`."""
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}")
        try:
            windows = parse_spec(schedule) if schedule else ()
        except WindowError as exc:
            raise ValueError(str(exc)) from None
        names = [normalize_domain(d) for d in domains]
        now = self.clock()
        active = not windows or any_open(windows, now, self.tz)
        with self._lock:
            with self.state.transaction() as tx:
                for name in names:
                    tx.db.execute("INSERT INTO dns_rules (owner, domain, action, schedule, created) VALUES (?,?,?,?,?) "
                                  "ON CONFLICT(owner, domain) DO UPDATE SET action=excluded.action, "
                                  "schedule=excluded.schedule", (owner, name, action, spec_text(windows), now))
            table = self.rules.setdefault(owner, {})
            for name in names:
                if windows:
                    self.scheduled[(owner, name)] = (action, windows)
                else:
                    self.scheduled.pop((owner, name), None)
                if active:
                    table[name] = action
                else:
                    table.pop(name, None)
            if not table:
                self.rules.pop(owner, None)
        return [{"owner": owner, "domain": n, "action": action, "schedule": spec_text(windows), "active": active}
                for n in names]

    def refresh(self) -> list[tuple[str, str, str | None]]:
        """Scheduled rules whose window opened or closed since the last look, as (owner,
        domain, action now in force or None). Decided from the clock alone."""
        now = self.clock()
        changed = []
        with self._lock:
            for (owner, name), (action, windows) in self.scheduled.items():
                want = action if any_open(windows, now, self.tz) else None
                table = self.rules.get(owner, {})
                if table.get(name) == want:
                    continue
                if want is None:
                    table.pop(name, None)
                    if not table:
                        self.rules.pop(owner, None)
                else:
                    self.rules.setdefault(owner, {})[name] = want
                changed.append((owner, name, want))
        return changed

    def set_strict(self, macs) -> set[str]:
        """The devices in a dns-strict window now; returns those whose mode changed."""
        with self._lock:
            new = frozenset(macs)
            changed = set(new ^ self.strict)
            self.strict = new
        return changed

    def remove_rule(self, owner: str, domain: str) -> bool:
        name = normalize_domain(domain)
        with self._lock:
            self.state.execute("DELETE FROM dns_rules WHERE owner=? AND domain=?", (owner, name))
            table = self.rules.get(owner, {})
            found = table.pop(name, None) is not None
            found = self.scheduled.pop((owner, name), None) is not None or found
            if not table:
                self.rules.pop(owner, None)
        return found

    def set_mode(self, mac: str, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        with self._lock:
            if mode == "denylist":
                self.state.execute("DELETE FROM dns_modes WHERE mac=?", (mac,))
                self.modes.pop(mac, None)
            else:
                self.state.execute("INSERT INTO dns_modes (mac, mode) VALUES (?,?) "
                                   "ON CONFLICT(mac) DO UPDATE SET mode=excluded.mode", (mac, mode))
                self.modes[mac] = mode

    # -- blocklists (components/blocklists owns them; dnsd has the same) ----------------------
    def set_list(self, list_id: str, macs: frozenset | None, names: BlockedNames) -> None:
        """macs: the devices the list applies to, None for every device; names: has
        covers(name) (blocklists/store.py SortedNames: the name or a parent listed)."""
        with self._lock:
            self.lists = {**self.lists, list_id: (macs, names)}

    def remove_list(self, list_id: str) -> None:
        with self._lock:
            self.lists = {k: v for k, v in self.lists.items() if k != list_id}

    def _listed(self, mac: str, name: str) -> bool:
        for macs, names in self.lists.values():
            if (macs is None or mac in macs) and names.covers(name):
                return True
        return False

    # -- queries ---------------------------------------------------------------------------
    def mode(self, mac: str) -> str:
        return "allowlist" if mac in self.strict else self.modes.get(mac, "denylist")

    def list_rules(self, owner: str | None = None) -> list[dict]:
        sql = "SELECT id, owner, domain, action, schedule, created FROM dns_rules"
        args: tuple = ()
        if owner is not None:
            sql += " WHERE owner=?"
            args = (owner,)
        rows = [dict(r) for r in self.state.execute(sql + " ORDER BY owner, domain", args)]
        for r in rows:
            r["active"] = r["domain"] in self.rules.get(r["owner"], {})
        return rows

    def restricted(self, mac: str) -> bool:
        """Whether any rule can block something for this device."""
        return (mac in self.modes or mac in self.strict or mac in self.rules or bool(self.rules.get(HOUSEHOLD))
                or any(macs is None or mac in macs for macs, _ in self.lists.values()))

    def restricted_macs(self, known: list[str]) -> list[str]:
        return [m for m in known if self.restricted(m)]

    def name_allowed(self, mac: str, name: str) -> bool:
        own = self.rules.get(mac, {})
        household = self.rules.get(HOUSEHOLD, {})
        for suffix in suffixes(name):
            action = own.get(suffix) or household.get(suffix)
            if action:
                return action == "allow"
        if self.lists and self._listed(mac, name):
            return False
        return self.mode(mac) != "allowlist"

    def verdict(self, mac: str, name: str) -> str:
        if name in CANARIES:
            return "bypass"
        return "allowed" if self.name_allowed(mac, name) else "blocked"
