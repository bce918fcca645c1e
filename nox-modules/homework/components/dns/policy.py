"""The household's DNS policy: per-device and household-wide allow/deny rules and the
per-device mode, stored in the controller's SQLite and mirrored in memory for lookups.

Decision (identical to dnsd/src/policy.rs, which applies it on the query path):
  1. the browsers' DoH canary and the iCloud Private Relay names are NXDOMAIN for everyone;
  2. otherwise the most specific matching rule wins (a rule for example.com covers its
     subdomains); at the same name a device rule beats a household rule;
  3. no rule: allowed, unless the device is in allow-list mode.

Schedules (parental-control time windows) fit later as a `schedule` on each rule: a rule
only counts while its schedule is active; today every rule's schedule is '' (always).
"""
from __future__ import annotations

import threading

from ...macaddr import normalize
from .names import normalize_domain, suffixes

HOUSEHOLD = "*"
ACTIONS = ("allow", "deny")
MODES = ("denylist", "allowlist")
CANARIES = frozenset({"use-application-dns.net", "mask.icloud.com", "mask-h2.icloud.com"})



def owner_of(mac: str | None) -> str:
    """A device MAC (':' or '-') or None/'*'/'household' for the household-wide list."""
    if mac is None or mac in (HOUSEHOLD, "household", ""):
        return HOUSEHOLD
    return normalize(mac)


class Policy:
    def __init__(self, state, clock):
        self.state = state
        self.clock = clock
        self._lock = threading.RLock()
        self.rules: dict[str, dict[str, str]] = {}     # owner -> domain -> action
        self.modes: dict[str, str] = {}
        for row in state.execute("SELECT owner, domain, action FROM dns_rules"):
            self.rules.setdefault(row["owner"], {})[row["domain"]] = row["action"]
        for row in state.execute("SELECT mac, mode FROM dns_modes"):
            self.modes[row["mac"]] = row["mode"]

    # -- changes (persisted first, then in memory) ------------------------------------------
    def set_rules(self, owner: str, domains: list[str], action: str) -> list[dict]:
        """Add or replace rules for several domains in one transaction."""
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}")
        names = [normalize_domain(d) for d in domains]
        now = self.clock()
        with self._lock:
            with self.state.transaction() as tx:
                for name in names:
                    tx.db.execute("INSERT INTO dns_rules (owner, domain, action, created) VALUES (?,?,?,?) "
                                  "ON CONFLICT(owner, domain) DO UPDATE SET action=excluded.action",
                                  (owner, name, action, now))
            table = self.rules.setdefault(owner, {})
            for name in names:
                table[name] = action
        return [{"owner": owner, "domain": n, "action": action} for n in names]

    def remove_rule(self, owner: str, domain: str) -> bool:
        name = normalize_domain(domain)
        with self._lock:
            self.state.execute("DELETE FROM dns_rules WHERE owner=? AND domain=?", (owner, name))
            table = self.rules.get(owner, {})
            found = table.pop(name, None) is not None
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

    # -- queries ---------------------------------------------------------------------------
    def mode(self, mac: str) -> str:
        return self.modes.get(mac, "denylist")

    def list_rules(self, owner: str | None = None) -> list[dict]:
        sql = "SELECT id, owner, domain, action, schedule, created FROM dns_rules"
        args: tuple = ()
        if owner is not None:
            sql += " WHERE owner=?"
            args = (owner,)
        return [dict(r) for r in self.state.execute(sql + " ORDER BY owner, domain", args)]

    def restricted(self, mac: str) -> bool:
        """Whether any rule can block something for this device."""
        return mac in self.modes or mac in self.rules or bool(self.rules.get(HOUSEHOLD))

    def restricted_macs(self, known: list[str]) -> list[str]:
        return [m for m in known if self.restricted(m)]

    def name_allowed(self, mac: str, name: str) -> bool:
        own = self.rules.get(mac, {})
        household = self.rules.get(HOUSEHOLD, {})
        for suffix in suffixes(name):
            action = own.get(suffix) or household.get(suffix)
            if action:
                return action == "allow"
        return self.modes.get(mac) != "allowlist"

    def verdict(self, mac: str, name: str) -> str:
        if name in CANARIES:
            return "bypass"
        return "allowed" if self.name_allowed(mac, name) else "blocked"
