"""The wanwatch component: looks at the WAN every `wanwatch.interval` seconds (probe.py),
debounces (hysteresis.py) and publishes `alert` kind `wan-down` / `wan-up` once per change.
Registers ctx.health["wan"] (so metrics exports `homework_wan_up`) and the `wan-status`
command."""
from __future__ import annotations

from ... import wording
from ...component import Component
from ...events import Alert, AlertKind
from .hysteresis import Hysteresis
from .probe import Look, look


class WanWatch(Component):
    name = "wanwatch"

    def __init__(self, ctx, probe=None):
        super().__init__(ctx)
        cfg = ctx.config
        self.ifname = cfg.wanwatch_interface
        self.probe = probe or (lambda: look(self.ifname))
        self.state = Hysteresis(cfg.wanwatch_down_after, cfg.wanwatch_up_after)
        self.last: Look | None = None
        self.since: float | None = None     # when the current state was confirmed

    def start(self) -> None:
        self.ctx.health["wan"] = lambda: self.state.up is True
        self.ctx.commands.register("wan-status", self.status, reads_only=True)
        self.ctx.every(self.ctx.config.wanwatch_interval, self.check)

    def check(self) -> None:
        self.last = self.probe()
        change = self.state.observe(self.last.ok)
        if self.state.up is not None and self.since is None:
            self.since = self.ctx.now()
        if change is None:
            return
        now, down_since = self.ctx.now(), self.since
        self.since = now
        self.ctx.count(f"wanwatch.{change}")
        detail = wording.sentence(self.last.reason)
        data = {"interface": self.ifname, "reason": self.last.reason}
        if change == "up" and down_since is not None:
            # A webhook in the internet may have missed wan-down: say how long it lasted.
            detail += f" It was down for {_duration(now - down_since)}."
            data["down_seconds"] = round(now - down_since)
        self.log.warning("WAN %s: %s", change, detail)
        self.ctx.bus.publish(Alert(mac="", kind=AlertKind(f"wan-{change}"), detail=detail, data=data))

    def status(self) -> dict:
        state = {True: "up", False: "down", None: "unknown"}[self.state.up]
        return {"interface": self.ifname, "state": state, "since": self.since,
                "reason": self.last.reason if self.last else ""}


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
