"""The reverse check (seed §4.4.2): names -> addresses learned from the answers the router
relays, and the drop flows that follow from them. A device that may not reach a name must
not reach that name's addresses either, even typed in by hand or learned by another
device's lookup.

Addresses are learned per answer *chain*: the name asked plus the CNAMEs the answer went
through (www.site.test -> site.cdn.example -> address). An address is dropped for a device
only if every chain it was learned from has a name blocked for that device: CDNs put many
sites on one address, and blocking an allowed site by accident is worse than letting a
hard-coded address through (the DNS block still stands).

Learned pairs persist in SQLite (a cache, so a controller restart does not reopen
hard-coded addresses) and are kept for at least KEEP_SECONDS whatever the TTL says,
because a device can keep using an address long after its record expired.
"""
from __future__ import annotations

import ipaddress

from ...flows import COOKIE_DNS, COOKIE_MASK_OWNER, ETH_IP, ETH_IPV6, FlowDelete, FlowMod

PRIO_REVERSE = 40000
COOKIE_REVERSE = COOKIE_DNS | 0x40_0000
KEEP_SECONDS = 6 * 3600
MAX_LEARNED = 50_000
MAX_DROPS_PER_DEVICE = 2000

SCHEMA = """
CREATE TABLE IF NOT EXISTS dns_learned (
    name TEXT NOT NULL,
    addr TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (name, addr)
);
"""


def drop_match(mac: str, addr: str) -> dict:
    if ":" in addr:
        return {"eth_src": mac, "eth_type": ETH_IPV6, "ipv6_dst": addr}
    return {"eth_src": mac, "eth_type": ETH_IP, "ipv4_dst": addr}


class ReverseCheck:
    def __init__(self, state, clock):
        self.state = state
        self.clock = clock
        state.ensure_schema(SCHEMA)
        self.expires: dict[tuple[str, str], float] = {}     # (chain, addr) -> expiry
        self.names_of: dict[str, set[str]] = {}             # addr -> chains ("name,cname,...")
        self.addrs_of: dict[str, set[str]] = {}             # every name of a chain -> addrs
        self.installed: dict[str, set[str]] = {}            # mac -> addrs with a drop flow
        self.capped: set[str] = set()
        now = clock()
        for row in state.execute("SELECT name, addr, expires FROM dns_learned WHERE expires > ?", (now,)):
            self._remember(row["name"], row["addr"], row["expires"])

    def _remember(self, chain: str, addr: str, expires: float) -> bool:
        new = (chain, addr) not in self.expires
        self.expires[(chain, addr)] = expires
        self.names_of.setdefault(addr, set()).add(chain)
        for name in chain.split(","):
            self.addrs_of.setdefault(name, set()).add(addr)
        return new

    def learn(self, name: str, addrs: list[str], ttl: int, cnames: tuple = ()) -> list[str]:
        """Record an answer; returns the addresses that were new for this chain."""
        name = ",".join((name, *cnames))
        now = self.clock()
        expires = now + max(int(ttl), KEEP_SECONDS)
        fresh, rows = [], []
        for addr in addrs:
            try:
                addr = str(ipaddress.ip_address(addr))
            except ValueError:
                continue
            if self._remember(name, addr, expires):
                fresh.append(addr)
            rows.append((name, addr, expires))
        if rows:
            self._save(rows)
        if len(self.expires) > MAX_LEARNED:
            self._evict(len(self.expires) - MAX_LEARNED)
        return fresh

    def _save(self, rows) -> None:
        with self.state.transaction() as tx:
            tx.db.executemany("INSERT INTO dns_learned (name, addr, expires) VALUES (?,?,?) "
                              "ON CONFLICT(name, addr) DO UPDATE SET expires=excluded.expires", rows)

    def _forget(self, chain: str, addr: str) -> None:
        self.expires.pop((chain, addr), None)
        chains = self.names_of.get(addr)
        if chains:
            chains.discard(chain)
            if not chains:
                del self.names_of[addr]
        for name in chain.split(","):
            if any(name in c.split(",") for c in self.names_of.get(addr, ())):
                continue
            addrs = self.addrs_of.get(name)
            if addrs:
                addrs.discard(addr)
                if not addrs:
                    del self.addrs_of[name]

    def _evict(self, count: int) -> None:
        for key, _ in sorted(self.expires.items(), key=lambda kv: kv[1])[:count]:
            self._forget(*key)

    def expire(self) -> bool:
        """Drop pairs past their expiry; True if anything went."""
        now = self.clock()
        gone = [key for key, exp in self.expires.items() if exp <= now]
        for key in gone:
            self._forget(*key)
        if gone:
            self.state.execute("DELETE FROM dns_learned WHERE expires <= ?", (now,))
        return bool(gone)

    # -- flows -------------------------------------------------------------------------------
    def wanted(self, mac: str, policy) -> set[str]:
        """Addresses this device must not reach: every chain they were learned from has a
        blocked name."""
        if not policy.restricted(mac):
            return set()
        verdict: dict[str, bool] = {}

        def chain_blocked(chain: str) -> bool:
            ok = verdict.get(chain)
            if ok is None:
                ok = verdict[chain] = all(policy.name_allowed(mac, n) for n in chain.split(","))
            return not ok

        out = set()
        for addr, chains in self.names_of.items():
            blocked = all(chain_blocked(c) for c in chains)
            if blocked:
                out.add(addr)
                if len(out) >= MAX_DROPS_PER_DEVICE:
                    break
        return out

    def sync(self, mac: str, policy) -> list:
        """Flow changes that make the installed drops for `mac` match the policy."""
        want = self.wanted(mac, policy)
        have = self.installed.get(mac, set())
        decisions: list = [FlowMod(match=drop_match(mac, a), actions=(), priority=PRIO_REVERSE,
                                   cookie=COOKIE_REVERSE) for a in sorted(want - have)]
        decisions += [FlowDelete(match=drop_match(mac, a), cookie=COOKIE_REVERSE, cookie_mask=COOKIE_MASK_OWNER,
                                 table_id=0, strict=True, priority=PRIO_REVERSE) for a in sorted(have - want)]
        if want:
            self.installed[mac] = want
        else:
            self.installed.pop(mac, None)
        if len(want) >= MAX_DROPS_PER_DEVICE:
            self.capped.add(mac)
        else:
            self.capped.discard(mac)
        return decisions

    def all_flows(self) -> list:
        """Every installed drop, for a switch that just (re)connected."""
        return [FlowMod(match=drop_match(mac, a), actions=(), priority=PRIO_REVERSE, cookie=COOKIE_REVERSE)
                for mac, addrs in self.installed.items() for a in sorted(addrs)]
