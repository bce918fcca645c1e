"""Nearby devices in the ws.v1 API and on the Guest Board (components/radio/nearby.py):

    GET /ws.v1/nearby  -> {"nearby": [{"mac", "rssi", "radio", "band", "last_heard",
                                       "randomised", "count", ("macs" for a group)}]}

Strongest first. Each radio's randomised MACs are one entry, mac "random-<ifname>", with
their count. Without the radio component the list is empty.

The board: a nearby MAC's label comes from its `link` events like any radio-heard MAC. This
module adds what `link` cannot say: a `nearby` event with `gone` removes the label (the
stream's "device" event without a view, as for a forgotten device, unless the MAC has
registered since), and a radio's randomised group is a label of its own (state "group":
not draggable, no panel) sent as a "device" event and listed in every snapshot.
"""
from __future__ import annotations

from .model import Model, field
from .routes import Access, RouteGroup, get

GROUP_STATE = "group"


def group_label(count: int) -> str:
    return f"{count} randomised device{'s' if count != 1 else ''} nearby"


class Nearby(Model):
    """A MAC the radio hears probing that is not connected; a radio's randomised MACs are one entry."""
    mac: str = field(doc="the MAC; random-<radio> for a radio's randomised MACs")
    rssi: float | None
    radio: str
    band: str | None
    last_heard: float = field(doc="epoch seconds")
    randomised: bool
    count: int = field(doc="how many MACs (1, or a group's)")
    macs: list[str] = field(optional=True, doc="a group's MACs")


class NearbyList(Model):
    nearby: list[Nearby] = field(doc="strongest first")


class NearbyRoutes(RouteGroup):
    tag = "board"

    def __init__(self, api):
        super().__init__(api)
        ctx = api.ctx
        ctx.bus.subscribe("nearby", self.on_nearby)
        api.board.extra_views.append(self.extra_views)

    def listing(self) -> list[dict]:
        commands = self.api.ctx.commands
        return commands.call("nearby")["nearby"] if "nearby" in commands.names() else []

    @get("/nearby", Access.READ, "Devices the radio hears probing that are not connected; each radio's randomised "
         "MACs are one entry", name="getNearby", answer=NearbyList)
    def nearby(self, call):
        return {"nearby": self.listing()}     # the same body as `homework nearby --json`

    def group_view(self, entry: dict) -> dict:
        at = entry["last_heard"]
        return {"mac": entry["mac"], "state": GROUP_STATE, "zone": "outside", "name": "", "owner": "",
                "type": "", "hostname": "", "first_seen": 0.0, "last_seen": at, "lease": None,
                "label": group_label(entry["count"]), "label_source": "group", "vendor": "", "private": False,
                "radio": entry["radio"], "band": entry.get("band"), "count": entry["count"],
                "metrics": {"rssi": entry["rssi"], "retrans": 0.0, "link_at": at, "bps": 0.0, "today_bytes": 0,
                            "seen_at": at, "leave_after": self.api.ctx.config.radio_nearby_forget}}

    def on_nearby(self, topic: str, ev) -> None:
        """ev: events.Nearby."""
        api = self.api
        mac = ev.mac or ""
        if ev.gone:
            if api.ctx.state.get_device(mac) is None:    # a device that registered since keeps its label
                api.board.forget_heard(mac)
                api.stream.publish("device", {"mac": mac, "state": None, "reason": "out-of-range", "view": None})
        elif ev.randomised:
            api.stream.publish("device", {"mac": mac, "state": GROUP_STATE, "reason": "nearby",
                                          "view": self.group_view(ev)})

    def extra_views(self, views: list[dict]) -> list[dict]:
        """Snapshot and polling: the groups, and nearby MACs the board no longer lists."""
        board = self.api.board
        shown = {v["mac"] for v in views}
        out = []
        for entry in self.listing():
            if entry["mac"] in shown:
                continue
            if entry["randomised"]:
                out.append(self.group_view(entry))
            else:
                view = {"mac": entry["mac"], "state": "unknown", "hostname": "", "name": "", "owner": "",
                        "type": "", "first_seen": 0.0, "last_seen": entry["last_heard"], "zone": "outside",
                        "lease": None, "metrics": board.metrics(entry["mac"]),
                        "radio": entry["radio"], "band": entry.get("band")}
                view.update(board.label(entry["mac"]))
                out.append(view)
        return out
