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

GROUP_STATE = "group"


def group_label(count: int) -> str:
    return f"{count} randomised device{'s' if count != 1 else ''} nearby"


def add_routes(app) -> None:
    from .app import json_response     # here: app.py imports this module

    ctx = app.ctx

    def listing() -> list[dict]:
        return ctx.commands.call("nearby")["nearby"] if "nearby" in ctx.commands.names() else []

    def nearby(call):
        return json_response({"nearby": listing()})     # the same body as `homework nearby --json`

    def group_view(entry: dict) -> dict:
        at = entry["last_heard"]
        return {"mac": entry["mac"], "state": GROUP_STATE, "zone": "outside", "name": "", "owner": "",
                "type": "", "hostname": "", "first_seen": 0.0, "last_seen": at, "lease": None,
                "label": group_label(entry["count"]), "label_source": "group", "vendor": "", "private": False,
                "radio": entry["radio"], "band": entry.get("band"), "count": entry["count"],
                "metrics": {"rssi": entry["rssi"], "retrans": 0.0, "link_at": at, "bps": 0.0, "today_bytes": 0,
                            "seen_at": at, "leave_after": ctx.config.radio_nearby_forget}}

    def on_nearby(topic: str, ev) -> None:
        mac = ev.mac or ""
        if ev.gone:
            if ctx.state.get_device(mac) is None:    # a device that registered since keeps its label
                app.board.forget_heard(mac)
                app.stream.publish("device", {"mac": mac, "state": None, "reason": "out-of-range", "view": None})
        elif ev.randomised:
            app.stream.publish("device", {"mac": mac, "state": GROUP_STATE, "reason": "nearby",
                                          "view": group_view(ev)})

    def extra_views(views: list[dict]) -> list[dict]:
        """Snapshot and polling: the groups, and nearby MACs the board no longer lists."""
        shown = {v["mac"] for v in views}
        out = []
        for entry in listing():
            if entry["mac"] in shown:
                continue
            if entry["randomised"]:
                out.append(group_view(entry))
            else:
                view = {"mac": entry["mac"], "state": "unknown", "hostname": "", "name": "", "owner": "",
                        "type": "", "first_seen": 0.0, "last_seen": entry["last_heard"], "zone": "outside",
                        "lease": None, "metrics": app.board.metrics(entry["mac"]),
                        "radio": entry["radio"], "band": entry.get("band")}
                view.update(app.board.label(entry["mac"]))
                out.append(view)
        return out

    ctx.bus.subscribe("nearby", on_nearby)
    app.board.extra_views.append(extra_views)
    app._add("GET", "/nearby/?", nearby, "read")
