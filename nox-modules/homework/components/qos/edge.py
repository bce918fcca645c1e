"""The household's priorities placed at the ISP's edge too (ispedge/ in this repository):
every connection a device set to High or Preferred opens, or one an application rule with
that class marks, is placed in the household's high or medium queue at the edge, under the
addresses the ISP sees (after NAT: the reply tuple conntrack keeps, turned round), and
removed when it ends. The edge's own list is the truth each round: a restarted edge (a new
epoch, nothing placed) gets everything again, and a restarted router adopts what is there.

Blocking (HTTPS, conntrack): runs in the qos component's worker, never on the event loop.
Framework-free: `sync` takes what is wanted and a client (unit tested with a fake)."""
from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Iterable

from ...conntrack import Translated
from ...ispedge_client import EdgeClient, EdgeError
from .plan import Member

Flow = tuple[str, str, int, str, int]       # proto, src, sport, dst, dport as the edge sees it
RANK = {"high": 2, "medium": 1, "default": 0}
QUEUE_EVERY = 5.0                          # seconds between reads of the edge's queue counters


def wanted_placements(entries: Iterable[Translated], device_of: Callable[[str], str | None],
                      device_classes: dict[str, str], app_classes: dict[int, str],
                      host_class: Callable[[str, Flow], str] = lambda mac, flow: "default") -> dict[Flow, str]:
    """The edge queue each prioritised connection belongs in: the best of its device's
    class, its application's (by ct mark) as the router's own shaping decides it, and the
    class set for the application the computer's agent says owns it (`host_class(mac, the
    connection as the computer sees it)`). Only connections a device opened; "default"
    ones need no placement."""
    out: dict[Flow, str] = {}
    for e in entries:
        mac = device_of(e.src)
        if mac is None:
            continue
        cls = max((device_classes.get(mac, "default"), app_classes.get(e.mark, "default"),
                   host_class(mac, (e.proto, e.src, e.sport, e.dst, e.dport))), key=RANK.__getitem__)
        if cls != "default":
            out[e.outside()] = cls
    return out


def device_lookup(members: Iterable[Member]) -> Callable[[str], str | None]:
    """address -> MAC of the device whose /30 or /64 holds it (qos's Member rows)."""
    nets = []
    for m in members:
        nets.append((ipaddress.ip_network(m.network4, strict=False), m.mac))
        if m.network6:
            nets.append((ipaddress.ip_network(m.network6, strict=False), m.mac))

    def lookup(addr: str) -> str | None:
        try:
            a = ipaddress.ip_address(addr)
        except ValueError:
            return None
        return next((mac for net, mac in nets if a.version == net.version and a in net), None)
    return lookup


class EdgePlacer:
    def __init__(self, client: EdgeClient, url: str, clock: Callable[[], float] = time.monotonic):
        self.client, self.url, self.clock = client, url, clock
        self.queues: dict = {}
        self._queues_at = -QUEUE_EVERY
        self._wait_until = 0.0
        self.status: dict = {"configured": True, "edge": url, "reachable": None, "error": "", "epoch": "",
                             "wanted": 0, "placed": 0, "honoured": 0, "refused": [], "budget": 0, "queues": {},
                             "placed_at": {}, "at": 0.0}

    def sync(self, wanted: dict[Flow, str]) -> dict:
        """One round: list, remove what ended, place what is new or moved, read the queues
        now and then. Returns the status the board shows."""
        now = self.clock()
        st = self.status
        st["wanted"], st["at"] = len(wanted), time.time()
        if now < self._wait_until:
            return st
        refused: list[str] = []
        try:
            listing = self.client.placements()
            current = {(p["proto"], p["src"], p["sport"], p["dst"], p["dport"]): p for p in listing["placements"]}
            for flow, p in current.items():
                if flow not in wanted:
                    self.client.remove(p["id"])
            room = True
            for flow, queue in wanted.items():
                have = current.get(flow)
                if (have is not None and have["queue"] == queue) or not room:
                    continue
                try:
                    self.client.place(*flow, queue=queue)
                except EdgeError as exc:
                    if exc.status == 409:           # the household's budget at the edge is used up
                        room = False
                    if exc.status in (400, 403, 409):
                        refused.append(str(exc))
                        continue
                    raise
            if current.keys() != wanted.keys() or any(current[f]["queue"] != q for f, q in wanted.items()
                                                      if f in current):
                listing = self.client.placements()
            if now - self._queues_at >= QUEUE_EVERY:
                self.queues = self.client.queues()["queues"]
                self._queues_at = now
        except EdgeError as exc:
            if exc.status == 429:
                self._wait_until = now + max(1.0, exc.retry_after)
            st.update(reachable=exc.status != 0, error=str(exc))
            return st
        placed = listing["placements"]
        st.update(reachable=True, error="", epoch=listing["epoch"], budget=listing["budget"], refused=refused[:5],
                  placed=len(placed), honoured=sum(1 for p in placed if p.get("packets", 0) > 0),
                  queues=self.queues,
                  placed_at={f"{p['proto']} {p['src']}:{p['sport']} {p['dst']}:{p['dport']}": p["queue"]
                             for p in placed})
        return st

    def high_drops(self) -> int | None:
        q = self.queues.get("high")
        return int(q["drops"]) if q else None
