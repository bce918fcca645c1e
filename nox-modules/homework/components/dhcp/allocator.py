"""Address management (seed §4.4.1): every MAC gets its own /30 from the pool.

Inside block k of the pool: .0 network, .1 router, .2 device, .3 broadcast. A MAC keeps its
block for good (sticky), even after its lease expires, unless the pool runs out; then a
block nobody holds whose hold has ended is taken (declined, forgotten, a refused claim),
else the block whose lease ended longest ago. Everything is in memory; the DHCP
component persists assignments through the state store.

Some fresh blocks may be reserved: set aside for homework-dhcpd to offer never-seen
devices by itself. Nobody else is given a reserved block; the device the
daemon offered one to claims it.

Holds and reservations are told to `on_hold` for the DHCP component to persist: a block
held back stays held across a controller restart (the device that may believe it holds the
block still may), and a block that was reserved comes back held for a pending lease (the
daemon, gone with the old controller, may have ACKed it untold); the new daemon gets fresh
blocks.
"""
from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from collections.abc import Callable
from functools import cached_property


@dataclass(frozen=True)
class Block:
    index: int
    network: ipaddress.IPv4Address

    # Cached: these strings are read several times for every DHCP message.
    @cached_property
    def router(self) -> str:
        return str(self.network + 1)

    @cached_property
    def device(self) -> str:
        return str(self.network + 2)

    @cached_property
    def broadcast(self) -> str:
        return str(self.network + 3)

    @cached_property
    def cidr(self) -> str:
        return f"{self.network}/30"


class PoolExhausted(RuntimeError):
    pass


RESERVED = math.inf     # the hold `on_hold` is told for a block set aside for homework-dhcpd


class Allocator:
    def __init__(self, pool: ipaddress.IPv4Network, on_reclaim: Callable[[str], None] | None = None,
                 on_hold: Callable[[int, float | None], None] | None = None):
        self.pool = pool
        self.on_reclaim = on_reclaim     # told the MAC whose lapsed block went to another
        # told (block, until) when a block is held back or reserved (until RESERVED), and
        # (block, None) when nothing holds it back any more: for the caller to persist
        self.on_hold = on_hold
        self.size = pool.num_addresses // 4
        self._by_mac: dict[str, int] = {}
        self._by_block: dict[int, str] = {}
        self._expires: dict[str, float] = {}
        # blocks held back -> until when: declined ones, a forgotten MAC's (until its lease
        # would have ended), a reserved one whose claim was refused
        self._quarantine: dict[int, float] = {}
        self._next_fresh = 0
        self._blocks: dict[int, Block] = {}
        self._reserved: list[int] = []      # in the order the daemon offers them

    # -- lookups ---------------------------------------------------------------------
    def block(self, index: int) -> Block:
        block = self._blocks.get(index)
        if block is None:
            if not 0 <= index < self.size:
                raise ValueError(f"block {index} outside the pool")
            block = self._blocks[index] = Block(index, self.pool.network_address + 4 * index)
        return block

    def block_for(self, mac: str) -> Block | None:
        index = self._by_mac.get(mac)
        return None if index is None else self.block(index)

    def block_of_address(self, address: str) -> Block | None:
        try:
            offset = int(ipaddress.IPv4Address(address)) - int(self.pool.network_address)
        except ValueError:
            return None
        if not 0 <= offset < self.pool.num_addresses:
            return None
        return self.block(offset // 4)

    def owner(self, index: int) -> str | None:
        return self._by_block.get(index)

    def assignments(self) -> dict[str, int]:
        return dict(self._by_mac)

    def reserved(self) -> list[int]:
        return list(self._reserved)

    def upcoming(self, count: int, now: float) -> list[int]:
        """The blocks the next `count` new MACs would get (none is taken): the reserved
        ones first, then fresh blocks in order."""
        found, index = self._reserved[:count], self._next_fresh
        while len(found) < count and index < self.size:
            if index not in self._by_block and self._quarantine.get(index, 0) <= now:
                found.append(index)
            index += 1
        return found

    # -- changes ---------------------------------------------------------------------
    def restore(self, mac: str, index: int, expires: float) -> None:
        """Reload an assignment from persistent state."""
        self.block(index)
        self._by_mac[mac] = index
        self._by_block[index] = mac
        self._expires[mac] = expires

    def allocate(self, mac: str, now: float, preferred: int | None = None) -> Block:
        """The MAC's block, assigning one if it has none. Raises PoolExhausted."""
        index = self._by_mac.get(mac)
        if index is not None:
            return self.block(index)
        if preferred is not None and 0 <= preferred < self.size and preferred not in self._by_block \
                and self._quarantine.get(preferred, 0) <= now and preferred not in self._reserved:
            index = preferred
        else:
            index = self._fresh_block(now)
        if index is None:
            index = self._reclaim(now)
        return self._assign(mac, index)

    def reserve(self, count: int, now: float) -> list[int]:
        """Set aside up to `count` more fresh blocks (fewer when the pool has no more);
        the ones newly reserved."""
        added: list[int] = []
        while len(added) < count:
            index = self._fresh_block(now)
            if index is None:
                break
            self._reserved.append(index)
            self._told(index, RESERVED)
            added.append(index)
        return added

    def claim(self, mac: str, index: int) -> Block | None:
        """A reserved block becomes the block of `mac`, which has none; None if it is not
        reserved or the MAC holds a block already."""
        if index not in self._reserved or mac in self._by_mac:
            return None
        self._reserved.remove(index)
        self._told(index, None)
        return self._assign(mac, index)

    def take(self, mac: str, index: int) -> Block | None:
        """A block nobody holds (not reserved, maybe held back) becomes the block of `mac`,
        which has none: a device configured with it already (its ACK went out) keeps it.
        None if someone holds it, it is reserved, or the MAC holds a block already."""
        if index in self._by_block or index in self._reserved or mac in self._by_mac \
                or not 0 <= index < self.size:
            return None
        self._release(index)
        return self._assign(mac, index)

    def unreserve(self, index: int, until: float) -> None:
        """No longer reserved: a device may believe it holds the block until `until` (the
        lease it was offered), so it is held back as a declined one is, and comes back
        through a reclaim (fresh blocks are not handed out twice)."""
        if index in self._reserved:
            self._reserved.remove(index)
            if index not in self._by_block:
                self._hold(index, until)
            else:
                self._told(index, None)

    def set_expiry(self, mac: str, expires: float) -> None:
        if mac in self._by_mac:
            self._expires[mac] = expires

    def expiry(self, mac: str) -> float:
        return self._expires.get(mac, 0.0)

    def forget(self, mac: str, hold_until: float | None = None) -> None:
        """`mac` holds no block any more. Its block is held back until `hold_until` (default:
        the end of the MAC's lease; the device may still believe it holds it), then a
        reclaim may give it to another: without that, a flood of MACs that are forgotten
        would use up the fresh blocks for good."""
        index = self._by_mac.pop(mac, None)
        expires = self._expires.pop(mac, 0.0)
        if index is not None:
            self._by_block.pop(index, None)
            until = expires if hold_until is None else hold_until
            self._hold(index, max(until, self._quarantine.get(index, 0.0)))

    def decline(self, mac: str, now: float, quarantine_seconds: float = 600) -> tuple[int, float] | None:
        """The client found the address in use: never hand this block out for a while.
        Returns (block, until)."""
        index = self._by_mac.get(mac)
        if index is None:
            return None
        self.forget(mac)
        self._hold(index, now + quarantine_seconds)
        return index, self._quarantine[index]

    def restore_hold(self, index: int, until: float) -> bool:
        """Reload a hold from persistent state (after the assignments); False, and nothing
        held, for a block out of the pool or one a restored assignment holds."""
        if not 0 <= index < self.size or index in self._by_block:
            return False
        self.block(index)
        self._quarantine[index] = until
        return True

    # -- internals -------------------------------------------------------------------
    def _assign(self, mac: str, index: int) -> Block:
        self._by_mac[mac] = index
        self._by_block[index] = mac
        self._expires[mac] = 0.0      # offered only, until a lease sets it
        return self.block(index)

    def _hold(self, index: int, until: float) -> None:
        self._quarantine[index] = until
        self._told(index, until)

    def _release(self, index: int) -> None:
        if self._quarantine.pop(index, None) is not None:
            self._told(index, None)

    def _told(self, index: int, until: float | None) -> None:
        if self.on_hold is not None:
            self.on_hold(index, until)

    def _fresh_block(self, now: float) -> int | None:
        while self._next_fresh < self.size:
            index = self._next_fresh
            self._next_fresh += 1
            if index not in self._by_block and self._quarantine.get(index, 0) <= now:
                return index
        return None

    def _reclaim(self, now: float) -> int:
        """No fresh block left: first a block held back whose hold has ended (it belongs to
        nobody), else the block of the MAC whose lease ended longest ago."""
        for index, until in sorted(self._quarantine.items(), key=lambda kv: kv[1]):
            if until <= now and index not in self._by_block:
                self._release(index)
                return index
        expired = [(exp, mac) for mac, exp in self._expires.items() if exp <= now]
        if expired:
            _, victim = min(expired)
            index = self._by_mac[victim]
            self.forget(victim)
            self._release(index)     # its lease has ended: the block is given now
            if self.on_reclaim is not None:
                self.on_reclaim(victim)
            return index
        raise PoolExhausted(f"all {self.size} /30 blocks of {self.pool} hold live leases")
