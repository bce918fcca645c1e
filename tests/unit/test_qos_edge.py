"""The router's side of the ISP edge without a network: which connections are placed in
which queue (the household's device and application priorities, after NAT), keeping the
edge's list equal to them round by round (adopting what is there, re-placing after an edge
restart, the budget, the rate limit), the edge's drops told once a minute, and nothing at
all without an edge."""
from __future__ import annotations

from types import SimpleNamespace

from homework.components.qos.plan import Member
from homework.components.qos.edge import EdgePlacer, device_lookup, wanted_placements
from homework.conntrack import Translated
from homework.ispedge_client import EdgeError

PUBLIC = "198.51.100.2"
SERVER = "203.0.113.10"


def ct(src: str, sport: int, mark: int = 0, nat_port: int | None = None, dst: str = SERVER, dport: int = 5004):
    outside = src if ":" in src else PUBLIC
    return Translated("udp", src, sport, dst, dport, dst, dport, outside, nat_port or sport, mark)


MEMBERS = [Member("02:00:00:00:00:01", 1, "10.2.0.4/30", "2001:db8:100:1::/64"),
           Member("02:00:00:00:00:02", 2, "10.2.0.8/30")]


def test_the_better_of_device_and_application_class_is_placed_under_the_outside_tuple():
    lookup = device_lookup(MEMBERS)
    entries = [ct("10.2.0.6", 40000, nat_port=61000),              # a High device's connection, NATed
               ct("10.2.0.10", 40001, mark=7),                     # a Normal device in a Preferred app
               ct("10.2.0.10", 40002),                             # a Normal device, no app: not placed
               ct("2001:db8:100:1::5", 40003, dst="2001:db8:cafe::10"),   # IPv6: no NAT
               ct("203.0.113.99", 40004)]                          # not a device's (incoming): not placed
    wanted = wanted_placements(entries, lookup, {"02:00:00:00:00:01": "high"}, {7: "medium"})
    assert wanted == {("udp", PUBLIC, 61000, SERVER, 5004): "high",
                      ("udp", PUBLIC, 40001, SERVER, 5004): "medium",
                      ("udp", "2001:db8:100:1::5", 40003, "2001:db8:cafe::10", 5004): "high"}


class FakeEdge:
    """The edge's answers, as ispedge gives them (its budget, restarts, rate limit)."""

    def __init__(self, budget: int = 3):
        self.budget, self.epoch, self.items, self.next = budget, "e1", {}, 1
        self.calls: list[str] = []
        self.limited = False
        self.drops = 0

    def restart(self):
        self.epoch, self.items = "e2", {}

    def _gate(self, what):
        self.calls.append(what)
        if self.limited:
            raise EdgeError("too many", 429, retry_after=2)

    def placements(self):
        self._gate("list")
        return {"epoch": self.epoch, "budget": self.budget,
                "placements": [{"id": i, **p, "packets": 5} for i, p in self.items.items()]}

    def place(self, proto, src, sport, dst, dport, queue):
        self._gate("place")
        for p in self.items.values():
            if (p["proto"], p["src"], p["sport"], p["dst"], p["dport"]) == (proto, src, sport, dst, dport):
                p["queue"] = queue
                return p
        if len(self.items) >= self.budget:
            raise EdgeError("household home already holds its 3 placements", 409)
        self.items[self.next] = {"proto": proto, "src": src, "sport": sport, "dst": dst, "dport": dport,
                                 "queue": queue}
        self.next += 1

    def remove(self, pid):
        self._gate("remove")
        del self.items[pid]

    def queues(self):
        self._gate("queues")
        return {"queues": {"high": {"packets": 10, "bytes": 1000, "drops": self.drops}}}


def flow(port: int):
    return ("udp", PUBLIC, port, SERVER, 5004)


def test_each_round_makes_the_edge_hold_exactly_what_is_wanted():
    edge, now = FakeEdge(), [0.0]
    placer = EdgePlacer(edge, "https://edge:6700", clock=lambda: now[0])
    st = placer.sync({flow(1): "high", flow(2): "medium"})
    assert st["placed"] == 2 and st["honoured"] == 2 and st["reachable"] and st["epoch"] == "e1"
    st = placer.sync({flow(2): "high"})                 # 1 ended, 2 moved
    assert [(p["sport"], p["queue"]) for p in edge.items.values()] == [(2, "high")]
    # the edge restarts: the next round places everything again
    edge.restart()
    st = placer.sync({flow(2): "high"})
    assert st["epoch"] == "e2" and [p["sport"] for p in edge.items.values()] == [2]
    # a round with nothing changed lists once (and reads the queues every few seconds)
    edge.calls.clear()
    now[0] += 1
    placer.sync({flow(2): "high"})
    assert edge.calls == ["list"]


def test_the_budget_and_the_rate_limit_are_respected():
    edge, now = FakeEdge(budget=2), [0.0]
    placer = EdgePlacer(edge, "https://edge:6700", clock=lambda: now[0])
    st = placer.sync({flow(1): "high", flow(2): "high", flow(3): "high", flow(4): "high"})
    assert st["placed"] == 2 and st["wanted"] == 4 and "2" not in st["refused"][0][:1]
    assert edge.calls.count("place") == 3               # stops asking after the first refusal
    edge.limited = True
    st = placer.sync({flow(1): "high"})
    assert "too many" in st["error"] and st["reachable"]
    edge.calls.clear()
    now[0] += 1
    placer.sync({flow(1): "high"})
    assert edge.calls == []                             # waits out Retry-After
    edge.limited = False
    now[0] += 2
    st = placer.sync({flow(1): "high"})
    assert st["error"] == "" and st["placed"] == 1


def test_an_edge_that_does_not_answer_is_said_so():
    class Down(FakeEdge):
        def placements(self):
            raise EdgeError("the ISP edge at edge:6700 did not answer: refused")
    st = EdgePlacer(Down(), "https://edge:6700").sync({flow(1): "high"})
    assert st["reachable"] is False and "did not answer" in st["error"]


# -- in the controller -----------------------------------------------------------------------
import pytest  # noqa: E402

from homework.components.qos import apply  # noqa: E402
from test_api import Api  # noqa: E402
from test_qos_api import MONDAY_0826, Tools, new_core, qos  # noqa: E402


@pytest.fixture
def api(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(apply, "run_tool", Tools())
    clock.now = MONDAY_0826
    return Api(new_core(tmp_path, clock))


def test_without_an_edge_nothing_changes(api):
    body = api.call("GET", "qos/edge", token=api.token("read-only")).json
    assert body["configured"] is False
    assert qos(api.core).edge is None


def test_drops_in_the_edges_high_queue_are_told_once_a_minute(api, clock):
    q = qos(api.core)
    edge = FakeEdge()
    q.edge = EdgePlacer(edge, "https://edge:6700", clock=lambda: clock.now)
    q._conntrack = SimpleNamespace(available=True, dump_translated=lambda: [])
    alerts = []
    api.core.ctx.bus.subscribe("alert", lambda topic, ev: alerts.append(ev) or [])
    for drops, expected in ((0, 0), (4, 1), (9, 1)):
        edge.drops = drops
        clock.advance(6)
        q.tick()
        q.flush_edge()
        q.tick()
        assert len(alerts) == expected
    assert len(alerts) == 1 and alerts[0]["kind"] == "isp-high-drops" and "lost 4 packets" in alerts[0]["detail"]
    clock.advance(61)
    q.tick()
    assert len(alerts) == 2 and "lost 5 packets" in alerts[-1]["detail"]
    body = api.call("GET", "qos/edge", token=api.token("read-only")).json
    assert body["queues"]["high"]["drops"] == 9 and body["reachable"] is True

