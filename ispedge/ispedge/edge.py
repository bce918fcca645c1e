"""The edge: households' placements, kept in step with the bridge. One lock: requests
from several households are served by threads, the bridge is changed by one at a time."""
from __future__ import annotations

import secrets
import threading
from collections.abc import Callable

from .config import EdgeConfig, Household
from .placement import HouseholdPlacements, PlacementError, TokenBucket, parse_request
from .switch import Switch


class Edge:
    def __init__(self, cfg: EdgeConfig, switch: Switch | None = None, clock: Callable[[], float] | None = None):
        self.cfg = cfg
        self.switch = switch or Switch(cfg)
        # A new epoch each start: a router that sees it change places its flows again.
        self.epoch = secrets.token_hex(8)
        self.placements = {h.name: HouseholdPlacements(h) for h in cfg.households}
        kw = {"clock": clock} if clock else {}
        self.buckets = {h.name: TokenBucket(cfg.messages_per_second, cfg.burst, **kw) for h in cfg.households}
        self.lock = threading.Lock()

    def start(self) -> Edge:
        self.switch.setup()
        return self

    def household(self, name: str | None) -> Household:
        h = self.cfg.household(name or "")
        if h is None:
            raise PlacementError(f"no household {name!r} at this edge", status=403)
        return h

    def admit(self, h: Household) -> float:
        """0 if this household may send a control message now, else seconds to wait."""
        with self.lock:
            return self.buckets[h.name].take()

    def listing(self, h: Household) -> dict:
        with self.lock:
            counts = self.switch.placement_counters(h)
            items = []
            for p in self.placements[h.name].by_id.values():
                packets, nbytes = counts.get(p.id, (0, 0))
                items.append({**p.as_dict(), "packets": packets, "bytes": nbytes})
        return {"household": h.name, "epoch": self.epoch, "budget": h.budget, "placements": items}

    def place(self, h: Household, body: object) -> tuple[dict, bool]:
        flow, queue = parse_request(h, body)
        with self.lock:
            mine = self.placements[h.name]
            p, created = mine.place(flow, queue)
            try:
                self.switch.apply_placements(h, list(mine.by_id.values()), [p], [])
            except Exception:
                if created:
                    mine.by_id.pop(p.id, None)
                raise
        return {**p.as_dict(), "epoch": self.epoch}, created

    def remove(self, h: Household, pid: int) -> dict:
        with self.lock:
            mine = self.placements[h.name]
            p = mine.remove(pid)
            self.switch.apply_placements(h, list(mine.by_id.values()), [], [p])
        return {**p.as_dict(), "epoch": self.epoch}

    def queues(self, h: Household) -> dict:
        with self.lock:
            stats = self.switch.queue_stats(h)
        rates = {"high": h.guaranteed_kbit, "medium": h.line_kbit, "default": h.line_kbit}
        return {"household": h.name, "epoch": self.epoch,
                "queues": {q: {**s, "ceil_kbit": rates[q]} for q, s in stats.items()}}
