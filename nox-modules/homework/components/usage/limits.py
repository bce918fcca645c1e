"""Per-device or per-owner allowances: a day's or a month's bytes, and what happens when
they are used up (notify, or block until the next period). Rows in state.db."""
from __future__ import annotations

from dataclasses import dataclass

from ...commands import CommandError
from ...macaddr import BadMac, normalize
from .cap import parse_size

OWNER = "owner:"


@dataclass
class Limit:
    target: str          # MAC, or "owner:NAME"
    period: str          # day | month
    allowance: int       # bytes
    action: str          # notify | block
    reached: int = 0     # start of the period it was reached in (0 = never)
    lifted: int = 0      # start of the period a household member lifted it in

    def as_dict(self) -> dict:
        return {"target": self.target, "period": self.period, "allowance": self.allowance,
                "action": self.action}


def parse_target(mac=None, owner=None) -> str:
    if mac and str(mac).startswith(OWNER) and not owner:     # the CLI's one positional form
        mac, owner = None, str(mac)[len(OWNER):]
    if bool(mac) == bool(owner):
        raise CommandError("usage-limit: give either mac or owner")
    if owner:
        return OWNER + str(owner)
    try:
        return normalize(str(mac))
    except BadMac as exc:
        raise CommandError(f"usage-limit: {exc}") from None


def parse_limit(target: str, allowance, period="day", action="block") -> Limit:
    if period not in ("day", "month"):
        raise CommandError(f"usage-limit: period must be day or month, got {period!r}")
    if action not in ("notify", "block"):
        raise CommandError(f"usage-limit: action must be notify or block, got {action!r}")
    size = parse_size(allowance)
    if size <= 0:
        raise CommandError("usage-limit: the allowance must be more than 0 bytes (remove the limit instead)")
    return Limit(target, period, size, action)


class Limits:
    def __init__(self, state):
        self.state = state
        self.by_target = {r["target"]: Limit(**dict(r)) for r in state.execute("SELECT * FROM usage_limits")}

    def set(self, limit: Limit) -> None:
        self.by_target[limit.target] = limit
        self.save(limit)

    def remove(self, target: str) -> Limit | None:
        limit = self.by_target.pop(target, None)
        if limit is not None:
            self.state.defer("DELETE FROM usage_limits WHERE target = ?", (target,))
        return limit

    def save(self, limit: Limit) -> None:
        self.state.defer("INSERT INTO usage_limits (target, period, allowance, action, reached, lifted) "
                         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (target) DO UPDATE SET period = excluded.period, "
                         "allowance = excluded.allowance, action = excluded.action, reached = excluded.reached, "
                         "lifted = excluded.lifted",
                         (limit.target, limit.period, limit.allowance, limit.action, limit.reached, limit.lifted))

    def for_device(self, mac: str, owner: str) -> list[Limit]:
        found = [self.by_target[t] for t in (mac, OWNER + owner if owner else None) if t in self.by_target]
        return found
