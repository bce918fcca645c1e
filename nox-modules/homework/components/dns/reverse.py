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

Cost: learning runs on the controller's event loop, under bursts of 100k+ new names, so
every step is O(log n) per pair: a heap orders the pairs by expiry (eviction and expiry
pop it), a reference count per (name, address) says when a name loses an address, and
drop flows are re-evaluated only for the addresses whose chains changed (`touched`).
SQLite writes are queued and written in one transaction per batch (`flush`).
"""
from __future__ import annotations

import heapq
import ipaddress

from ...flows import ETH_IP, ETH_IPV6, FlowDelete, FlowMod
from ...pipeline import COOKIE_DNS_REVERSE as COOKIE_REVERSE, COOKIE_MASK_OWNER, PRIO_DNS_REVERSE as PRIO_REVERSE

KEEP_SECONDS = 6 * 3600
MAX_LEARNED = 50_000
MAX_DROPS_PER_DEVICE = 2000
REWRITE_AFTER = 60.0      # a re-learned pair is written again only if its expiry moved this much
EXPIRE_BATCH = 5000       # pairs dropped per expire() call, so one call stays short

def drop_match(mac: str, addr: str) -> dict:
    if ":" in addr:
        return {"eth_src": mac, "eth_type": ETH_IPV6, "ipv6_dst": addr}
    return {"eth_src": mac, "eth_type": ETH_IP, "ipv4_dst": addr}


def drop_flow(mac: str, addr: str) -> FlowMod:
    return FlowMod(match=drop_match(mac, addr), actions=(), priority=PRIO_REVERSE, cookie=COOKIE_REVERSE)


def undrop_flow(mac: str, addr: str) -> FlowDelete:
    return FlowDelete(match=drop_match(mac, addr), cookie=COOKIE_REVERSE, cookie_mask=COOKIE_MASK_OWNER,
                      table_id=0, strict=True, priority=PRIO_REVERSE)


def chain_names(chain: str) -> tuple[str, ...]:
    """The distinct names of a chain ("a,b,a" -> a, b): each counts once per address."""
    return tuple(dict.fromkeys(chain.split(",")))


class LearnedPairs:
    """(chain, address) -> expiry, with the two indexes the reverse check needs, and the
    oldest pair found in O(log n). Pure data: no SQLite, no flows."""

    def __init__(self):
        self.expires: dict[tuple[str, str], float] = {}     # (chain, addr) -> expiry
        self.names_of: dict[str, set[str]] = {}             # addr -> chains ("name,cname,...")
        self.addrs_of: dict[str, set[str]] = {}             # every name of a chain -> addrs
        self._refs: dict[tuple[str, str], int] = {}         # (name, addr) -> chains with both
        self._heap: list[tuple[float, str, str]] = []       # (expiry, chain, addr), stale ones skipped

    def __len__(self) -> int:
        return len(self.expires)

    def add(self, chain: str, addr: str, expires: float) -> float | None:
        """Learn or refresh a pair; returns its previous expiry (None if it is new)."""
        key = (chain, addr)
        old = self.expires.get(key)
        self.expires[key] = expires
        if old is None:
            self.names_of.setdefault(addr, set()).add(chain)
            for name in chain_names(chain):
                refs = self._refs.get((name, addr), 0)
                self._refs[(name, addr)] = refs + 1
                if not refs:
                    self.addrs_of.setdefault(name, set()).add(addr)
        if old != expires:
            heapq.heappush(self._heap, (expires, chain, addr))
            self._compact()
        return old

    def remove(self, chain: str, addr: str) -> bool:
        if self.expires.pop((chain, addr), None) is None:
            return False
        chains = self.names_of[addr]
        chains.discard(chain)
        if not chains:
            del self.names_of[addr]
        for name in chain_names(chain):
            left = self._refs.pop((name, addr)) - 1
            if left:
                self._refs[(name, addr)] = left
                continue
            addrs = self.addrs_of[name]
            addrs.discard(addr)
            if not addrs:
                del self.addrs_of[name]
        return True

    def pop_oldest(self, before: float | None = None) -> tuple[str, str] | None:
        """Remove and return the pair that expires first (only if it expires at or before
        `before`, when given)."""
        heap = self._heap
        while heap:
            expires, chain, addr = heap[0]
            if self.expires.get((chain, addr)) != expires:
                heapq.heappop(heap)        # refreshed or removed since it was pushed
                continue
            if before is not None and expires > before:
                return None
            heapq.heappop(heap)
            self.remove(chain, addr)
            return chain, addr
        return None

    def _compact(self) -> None:
        """Refreshes leave stale heap entries behind; rebuild once they outnumber the live
        ones (O(n) every n pushes: O(1) amortised)."""
        if len(self._heap) > 2 * len(self.expires) + 1024:
            self._heap = [(exp, chain, addr) for (chain, addr), exp in self.expires.items()]
            heapq.heapify(self._heap)


class ReverseCheck:
    def __init__(self, state, clock):
        self.state = state
        self.clock = clock
        self.pairs = LearnedPairs()
        self.installed: dict[str, set[str]] = {}            # mac -> addrs with a drop flow
        self.capped: set[str] = set()
        self.touched: set[str] = set()                      # addrs whose chains changed since take_touched()
        self._to_write: dict[tuple[str, str], float] = {}
        self._to_delete: set[tuple[str, str]] = set()
        # (device or "*", chain) -> blocked: kept across batches (an address behind thousands
        # of names must not cost thousands of policy look-ups per batch); policy_changed() clears.
        self._verdicts: dict[tuple[str, str], bool] = {}
        now = clock()
        rows = state.execute("SELECT name, addr, expires FROM dns_learned WHERE expires > ? "
                             "ORDER BY expires DESC LIMIT ?", (now, MAX_LEARNED))
        for row in rows:
            self.pairs.add(row["name"], row["addr"], row["expires"])

    # the indexes, as the component and its commands read them
    @property
    def names_of(self) -> dict[str, set[str]]:
        return self.pairs.names_of

    @property
    def addrs_of(self) -> dict[str, set[str]]:
        return self.pairs.addrs_of

    # -- learning ----------------------------------------------------------------------------
    def learn(self, name: str, addrs: list[str], ttl: int, cnames: tuple = (), flush: bool = True) -> list[str]:
        """Record an answer; returns the addresses that were new for this chain. With
        flush=False the SQLite write waits for flush() (one transaction per batch)."""
        chain = ",".join((name, *cnames))
        expires = self.clock() + max(int(ttl), KEEP_SECONDS)
        fresh = []
        for addr in addrs:
            try:
                addr = str(ipaddress.ip_address(addr))
            except ValueError:
                continue
            old = self.pairs.add(chain, addr, expires)
            if old is None:
                fresh.append(addr)
                self.touched.add(addr)
            if old is None or expires - old >= REWRITE_AFTER:
                self._to_write[(chain, addr)] = expires
                self._to_delete.discard((chain, addr))
        while len(self.pairs) > MAX_LEARNED and (oldest := self.pairs.pop_oldest()) is not None:
            self._gone(oldest)
        if flush:
            self.flush()
        return fresh

    def _gone(self, key: tuple[str, str]) -> None:
        self.touched.add(key[1])
        self._to_write.pop(key, None)
        self._to_delete.add(key)

    def flush(self) -> None:
        """Write the queued learning to SQLite in one transaction."""
        if not self._to_write and not self._to_delete:
            return
        rows = [(chain, addr, exp) for (chain, addr), exp in self._to_write.items()]
        gone = list(self._to_delete)
        self._to_write, self._to_delete = {}, set()
        with self.state.transaction() as tx:
            if rows:
                tx.db.executemany("INSERT INTO dns_learned (name, addr, expires) VALUES (?,?,?) "
                                  "ON CONFLICT(name, addr) DO UPDATE SET expires=excluded.expires", rows)
            if gone:
                tx.db.executemany("DELETE FROM dns_learned WHERE name=? AND addr=?", gone)

    def expire(self, limit: int = EXPIRE_BATCH) -> bool:
        """Drop up to `limit` pairs past their expiry; True if anything went. The rest go on
        the next call (keeping a pair longer than its expiry is harmless)."""
        now = self.clock()
        count = 0
        while count < limit:
            key = self.pairs.pop_oldest(before=now)
            if key is None:
                break
            self._gone(key)
            count += 1
        self.flush()
        return count > 0

    def take_touched(self) -> set[str]:
        touched, self.touched = self.touched, set()
        return touched

    # -- flows -------------------------------------------------------------------------------
    def policy_changed(self) -> None:
        self._verdicts.clear()

    @staticmethod
    def _verdict_key(mac: str, policy) -> str:
        """Devices without rules or a mode of their own get the household's verdicts."""
        return mac if mac in policy.rules or mac in policy.modes else "*"

    def _blocked(self, addr: str, mac: str, policy, verdicts: dict | None = None) -> bool:
        """Every chain `addr` was learned from has a name blocked for `mac`."""
        chains = self.pairs.names_of.get(addr)
        if not chains:
            return False
        group = self._verdict_key(mac, policy)
        if verdicts is None:
            verdicts = self._verdicts
            if len(verdicts) > 4 * MAX_LEARNED:
                verdicts.clear()
        for chain in chains:
            blocked = verdicts.get((group, chain))
            if blocked is None:
                blocked = verdicts[(group, chain)] = not all(policy.name_allowed(mac, n) for n in chain.split(","))
            if not blocked:
                return False
        return True

    def wanted(self, mac: str, policy) -> set[str]:
        """Addresses this device must not reach (a full scan: for rule changes only)."""
        if not policy.restricted(mac):
            return set()
        out = set()
        verdicts: dict = {}      # fresh: the policy may have changed since the cached ones
        for addr in self.pairs.names_of:
            if self._blocked(addr, mac, policy, verdicts):
                out.add(addr)
                if len(out) >= MAX_DROPS_PER_DEVICE:
                    break
        return out

    def sync(self, mac: str, policy) -> list:
        """Flow changes that make the installed drops for `mac` match the policy (after a
        policy change: the cached verdicts go too)."""
        self.policy_changed()
        want = self.wanted(mac, policy)
        have = self.installed.get(mac, set())
        decisions: list = [drop_flow(mac, a) for a in sorted(want - have)]
        decisions += [undrop_flow(mac, a) for a in sorted(have - want)]
        self._set_installed(mac, want)
        return decisions

    def sync_touched(self, macs: list[str], policy, touched: set[str]) -> list:
        """Flow changes for the addresses whose chains changed: O(touched) per device, not
        O(everything learned)."""
        decisions: list = []
        addrs = sorted(touched)
        for mac in macs:
            have = self.installed.get(mac, set())
            if not policy.restricted(mac):
                want: set[str] = set()
                decisions += [undrop_flow(mac, a) for a in sorted(have)]
                self._set_installed(mac, want)
                continue
            want = set(have)
            for addr in addrs:
                blocked = self._blocked(addr, mac, policy)
                if blocked and addr not in have and len(want) < MAX_DROPS_PER_DEVICE:
                    want.add(addr)
                    decisions.append(drop_flow(mac, addr))
                elif not blocked and addr in have:
                    want.discard(addr)
                    decisions.append(undrop_flow(mac, addr))
            self._set_installed(mac, want)
        return decisions

    def _set_installed(self, mac: str, want: set[str]) -> None:
        if want:
            self.installed[mac] = want
        else:
            self.installed.pop(mac, None)
        if len(want) >= MAX_DROPS_PER_DEVICE:
            self.capped.add(mac)
        else:
            self.capped.discard(mac)

    def all_flows(self) -> list:
        """Every installed drop, for a switch that just (re)connected."""
        return [drop_flow(mac, a) for mac, addrs in self.installed.items() for a in sorted(addrs)]
