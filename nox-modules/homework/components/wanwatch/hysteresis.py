"""Up or down, without flapping: the state changes only after `down_after` failed looks
in a row (or `up_after` good ones), and each change is reported once. Pure, no clock."""
from __future__ import annotations


class Hysteresis:
    def __init__(self, down_after: int, up_after: int):
        self.down_after = down_after
        self.up_after = up_after
        self.up: bool | None = None       # None until the first state is confirmed
        self._streak = 0                  # looks in a row that disagree with `up`

    def observe(self, ok: bool) -> str | None:
        """Feed one look; returns "down" or "up" when the state changes and that is news
        (the first confirmed "up" after start is not: nothing was lost)."""
        if ok == self.up:
            self._streak = 0
            return None
        self._streak += 1
        if self._streak < (self.up_after if ok else self.down_after):
            return None
        before, self.up, self._streak = self.up, ok, 0
        if ok and before is None:
            return None
        return "up" if ok else "down"
