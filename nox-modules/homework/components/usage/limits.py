"""Per-device or per-owner allowances: a day's or a month's bytes, and what happens when
they are used up (notify, slow down to a rate, or block until the next period). Rows in
state.db."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ... import wording
from ...commands import CommandError
from ...macaddr import BadMac, normalize
from .cap import parse_size

OWNER = "owner:"
ACTIONS = ("notify", "slow", "block")
DEFAULT_RATE = 1000               # kbit/s: what `slow` allows when no rate is given (1 Mbit/s)
MIN_RATE, MAX_RATE = 8, 10_000_000    # kbit/s: 8 kbit/s .. 10 Gbit/s
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?)(?:bit|b)?(?:/s|ps)?\s*$", re.IGNORECASE)
_RATE_UNITS = {"": 1, "k": 1, "m": 1000, "g": 1_000_000}


@dataclass
class Limit:
    target: str          # MAC, or "owner:NAME"
    period: str          # day | month
    allowance: int       # bytes
    action: str          # notify | slow | block
    reached: int = 0     # start of the period it was reached in (0 = never)
    lifted: int = 0      # start of the period a household member lifted it in
    rate: int = 0        # slow: kbit/s the device keeps once the allowance is used up

    def as_dict(self) -> dict:
        out = {"target": self.target, "period": self.period, "allowance": self.allowance,
               "action": self.action}
        if self.action == "slow":
            out["rate"] = self.rate
        out["text"] = self.text()
        return out

    def text(self) -> str:
        """The allowance in words, as the device panel shows it: "20 MB a day; once it is
        used up, slowed to 1 Mbit/s until the day is over"."""
        span = "day" if self.period == "day" else "month"
        then = {"block": f"no internet until the {span} is over",
                "slow": f"slowed to {wording.rate(self.rate)} until the {span} is over",
                "notify": "the household is told, nothing is cut"}[self.action]
        whose = f" for all of {wording.owner_devices(self.target[len(OWNER):])} together" \
            if self.target.startswith(OWNER) else ""
        return f"{wording.size(self.allowance)} a {span}{whose}; once it is used up, {then}"


def parse_rate(value) -> int:
    """kbit/s from e.g. 1mbit, 512kbit, 2.5Mbit/s, or a number (kbit/s)."""
    if isinstance(value, bool):
        raise CommandError(f"usage-limit: bad rate {value!r} (e.g. 1mbit, 512kbit)")
    if isinstance(value, (int, float)):
        kbps = value
    else:
        found = _RATE.match(str(value))
        if not found:
            raise CommandError(f"usage-limit: bad rate {value!r} (e.g. 1mbit, 512kbit)")
        kbps = float(found.group(1)) * _RATE_UNITS[found.group(2).lower()]
    if not MIN_RATE <= kbps <= MAX_RATE:
        raise CommandError(f"usage-limit: the rate must be between {MIN_RATE} kbit/s and "
                           f"{MAX_RATE // 1_000_000} Gbit/s, got {value!r}")
    return int(kbps)


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


def parse_limit(target: str, allowance, period="day", action="block", rate=None) -> Limit:
    if period not in ("day", "month"):
        raise CommandError(f"usage-limit: period must be day or month, got {period!r}")
    if action not in ACTIONS:
        raise CommandError(f"usage-limit: action must be {', '.join(ACTIONS[:-1])} or {ACTIONS[-1]}, got {action!r}")
    if rate not in (None, "") and action != "slow":
        raise CommandError("usage-limit: a rate is only for the action slow")
    try:
        size = parse_size(allowance)
    except CommandError:
        raise CommandError(f"usage-limit: the allowance must be a size such as 500M or 2G, got {allowance!r}") from None
    if size <= 0:
        raise CommandError("usage-limit: the allowance must be more than 0 bytes (remove the limit instead)")
    kbps = (DEFAULT_RATE if rate in (None, "") else parse_rate(rate)) if action == "slow" else 0
    return Limit(target, period, size, action, rate=kbps)


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
        self.state.defer("INSERT INTO usage_limits (target, period, allowance, action, reached, lifted, rate) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (target) DO UPDATE SET period = excluded.period, "
                         "allowance = excluded.allowance, action = excluded.action, reached = excluded.reached, "
                         "lifted = excluded.lifted, rate = excluded.rate",
                         (limit.target, limit.period, limit.allowance, limit.action, limit.reached, limit.lifted,
                          limit.rate))

    def for_device(self, mac: str, owner: str) -> list[Limit]:
        found = [self.by_target[t] for t in (mac, OWNER + owner if owner else None) if t in self.by_target]
        return found
