"""A panel's screen at night: dimmed between two times of the household's clock.

    panel-display              -> {dim, brightness, enabled, from, to, backlight}
    panel-night {from, to, brightness} | {enabled: false}  -> the same

The window and the brightness are settings rows (`panel.night`, "22:00-07:00@30" by
default; restored through check_night like the API's). Every panel page (the router's own
screen and wall tablets) asks panel-display and darkens itself by that much at night; a
tap lights it for a minute. On a box whose screen has a backlight (/sys/class/backlight:
a laptop-style or DSI panel; an HDMI monitor has none the kernel can set) the controller
also turns the backlight down and back up, in a thread (sysfs writes can block on a slow
panel). The time is the router's zone ([router] timezone, or the board's choice).
"""
from __future__ import annotations

import logging
import re
from datetime import datetime
from pathlib import Path

from ...commands import CommandError
from ...worker import offload
from ..usage.periods import zone

log = logging.getLogger("homework.api.panel")

KEY = "panel.night"
DEFAULT = "22:00-07:00@30"
OFF = "off"
TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
VALUE = re.compile(r"^(\d\d:\d\d)-(\d\d:\d\d)@(\d{1,3})$")
CHECK_EVERY = 30.0
BACKLIGHT = Path("/sys/class/backlight")


def check_night(value: str) -> str:
    """A stored or sent window: "HH:MM-HH:MM@PCT" (PCT 5..100) or "off"."""
    if value == OFF:
        return value
    m = VALUE.match(value) if isinstance(value, str) else None
    if not m or not TIME.match(m.group(1)) or not TIME.match(m.group(2)) or not 5 <= int(m.group(3)) <= 100:
        raise CommandError("night: give from and to as HH:MM (24-hour clock) and a brightness of 5 to 100 %", 400)
    if m.group(1) == m.group(2):
        raise CommandError("night: from and to are the same time; turn dimming off instead", 400)
    return value


def night_parts(value: str) -> tuple[str, str, str]:
    """A checked window's from, to and percent ("off" reads as the default's)."""
    m = VALUE.match(DEFAULT if value == OFF else value)
    if m is None:
        raise CommandError(f"night: not a window: {value!r}", 400)
    start, end, pct = m.groups()
    return start, end, pct


def minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def in_window(now_min: int, start: str, end: str) -> bool:
    a, b = minutes(start), minutes(end)
    return a <= now_min < b if a < b else now_min >= a or now_min < b     # across midnight


class PanelDisplay:
    def __init__(self, ctx, backlight_dir: Path = BACKLIGHT):
        self.ctx = ctx
        self.backlight_dir = backlight_dir
        self._dimmed: bool | None = None
        self._day_level: dict[str, int] = {}

    def setting(self) -> str:
        rows = self.ctx.state.execute("SELECT value FROM settings WHERE key=?", (KEY,))
        try:
            return check_night(rows[0]["value"]) if rows else DEFAULT
        except CommandError:
            return DEFAULT

    def state(self) -> dict:
        value = self.setting()
        enabled = value != OFF
        start, end, pct = night_parts(value)
        local = datetime.fromtimestamp(self.ctx.now(), zone(self.ctx.config.timezone))
        dim = enabled and in_window(local.hour * 60 + local.minute, start, end)
        return {"dim": dim, "brightness": int(pct) if dim else 100, "enabled": enabled, "from": start, "to": end,
                "night_brightness": int(pct), "backlight": self._backlights() != []}

    def set_night(self, enabled=True, **window) -> dict:
        if enabled is False:
            value = OFF
        else:
            unknown = set(window) - {"from", "to", "brightness"}
            if unknown:
                raise CommandError(f"night: unknown field(s) {', '.join(sorted(unknown))}", 400)
            current = night_parts(self.setting())
            start = window.get("from", current[0])
            end = window.get("to", current[1])
            pct = window.get("brightness", current[2])
            if isinstance(pct, bool) or not isinstance(pct, (int, str)) or not str(pct).isdigit():
                raise CommandError("night: brightness is a whole number of percent, 5 to 100", 400)
            value = check_night(f"{start}-{end}@{int(pct)}")
        with self.ctx.state.transaction() as st:
            st.db.execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                          "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (KEY, value))
        self.tick()
        return self.state()

    # -- the backlight ---------------------------------------------------------------------
    def _backlights(self) -> list[Path]:
        try:
            return sorted(p for p in self.backlight_dir.iterdir() if (p / "max_brightness").exists())
        except OSError:
            return []

    def tick(self) -> None:
        """Every CHECK_EVERY seconds: the backlight follows the window (when it changes)."""
        s = self.state()
        if s["dim"] == self._dimmed or not s["backlight"]:
            self._dimmed = s["dim"]
            return
        self._dimmed = s["dim"]
        offload(self._apply_backlight, s["dim"], s["night_brightness"])

    def _apply_backlight(self, dim: bool, pct: int) -> None:
        for bl in self._backlights():
            try:
                top = int((bl / "max_brightness").read_text())
                if dim:
                    self._day_level.setdefault(bl.name, int((bl / "brightness").read_text()))
                    level = max(1, top * pct // 100)
                elif bl.name in self._day_level:
                    level = self._day_level.pop(bl.name)       # back to where the household had it
                else:
                    continue                                   # never dimmed by us: not ours to set
                (bl / "brightness").write_text(str(level))
                log.info("backlight %s: %d of %d (%s)", bl.name, level, top, "night" if dim else "day")
            except (OSError, ValueError) as exc:
                log.warning("backlight %s: %s", bl.name, exc)


def register_commands(ctx, display: PanelDisplay) -> None:
    def night(enabled=True, **window):
        if not isinstance(enabled, bool):
            raise CommandError("night: enabled is true or false", 400)
        return display.set_night(enabled, **window)
    ctx.commands.register("panel-display", display.state)
    ctx.commands.register("panel-night", night)
