"""Durable usage: bytes per device per local hour in state.db, read per hour/day/month and
per device, owner or device type (issue 14).

Fed by routing's `bandwidth` events: one per permitted device per flow-stats poll,
carrying the bytes counted since the previous poll (flow-removed remainders included),
split into up and down. Each byte reaches exactly one event, so summing them counts it
once. Why state.db rather than hwdb persistent tables: usage is read with the devices'
owner and type, which live in state.db; and state.db already has the migrations, the
write-behind batching, the backup and the upgrade path that keeps the data partition.
"""
from __future__ import annotations

from ...commands import CommandError
from ...component import Component
from . import export, periods, report
from .book import UsageBook
from .cap import Cap, parse_day, parse_size


class Usage(Component):
    name = "usage"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.tz = periods.zone(ctx.config.usage_timezone)
        self.book = UsageBook(ctx.state, self.tz, ctx.config.usage_keep_months)
        self.cap = Cap(ctx.state, ctx.config.usage_monthly_cap, ctx.config.usage_billing_day)
        # the billing period's bytes so far, kept up to date per event for the cap alerts
        self._period: tuple[int, int] = (0, 0)
        self._period_used = 0

    @property
    def billing_day(self) -> int:
        return self.cap.billing_day

    def start(self) -> None:
        self.ctx.bus.subscribe("bandwidth", self._on_bandwidth)
        self.ctx.every(self.ctx.config.usage_flush_interval, self.flush)
        self.ctx.commands.register("usage", self.usage)
        self.ctx.commands.register("usage-cap", self.usage_cap)
        self.ctx.commands.register("usage-csv", self.usage_csv)

    def stop(self) -> None:
        self.flush()

    def flush(self) -> None:
        rows = self.book.flush(self.ctx.now())
        if rows:
            self.ctx.count("usage.rows_written", rows)

    def _on_bandwidth(self, topic: str, ev: dict) -> None:
        total = int(ev.get("bytes", 0) or 0)
        up = int(ev.get("up", 0) or 0)
        down = int(ev.get("down", total - up) or 0)
        now = self.ctx.now()
        start, _end = self._period_so_far(now)     # before adding: a re-read must not count it twice
        self.book.add(ev["mac"], up, down, now)
        self._period_used += max(up, 0) + max(down, 0)
        for level in self.cap.due_alerts(start, self._period_used):
            self.ctx.count(f"usage.alerts_{level}")
            self.ctx.bus.publish("alert", mac="", kind=f"usage-{level}",
                                 detail=f"the household has used {level}% of its {self.cap.cap} byte cap "
                                        f"({self._period_used} bytes) this billing period")

    def _period_so_far(self, now: float) -> tuple[int, int]:
        """The current billing period; its bytes are re-read when it changes."""
        start, end = self._period
        if not start <= now < end:
            start, end = self._period = periods.month_window(now, self.tz, self.billing_day)
            self._period_used = sum(r[2] + r[3] for r in self.book.rows(start, end))
        return start, end

    # -- reads --------------------------------------------------------------------------------
    def window(self, period: str, now: float) -> tuple[int, int]:
        """The current hour, local day or billing period."""
        if period == "hour":
            start = periods.hour_start(now, self.tz)
            return start, start + 3600
        if period == "day":
            return periods.day_window(now, self.tz)
        return periods.month_window(now, self.tz, self.billing_day)

    def usage(self, period: str = "month", by: str = "device") -> dict:
        """This hour/day/billing period so far, per device, owner or type, and per
        sub-period (hours of the day, days of the month) for charts."""
        if period not in report.PERIODS:
            raise CommandError(f"usage: period must be one of {', '.join(report.PERIODS)}, got {period!r}")
        if by not in report.GROUPS:
            raise CommandError(f"usage: by must be one of {', '.join(report.GROUPS)}, got {by!r}")
        now = self.ctx.now()
        start, end = self.window(period, now)
        rows = self.book.rows(start, end)
        devices = {d.mac: d for d in self.ctx.state.devices()}
        step = {"hour": "hour", "day": "hour", "month": "day"}[period]
        return {"period": period, "by": by, "start": start, "end": end,
                "label": periods.label(start, self.tz, period, self.billing_day),
                "total": sum(r[2] + r[3] for r in rows),
                "rows": report.group(rows, devices, by, period, self.tz, self.billing_day),
                "series": report.group(rows, devices, by, step, self.tz, self.billing_day)}

    def usage_cap(self, cap=None, billing_day=None) -> dict:
        """Set the cap (bytes, or with K/M/G/T) and/or billing day when given; this
        period's use against the cap and its projection to the period's end."""
        cap = parse_size(cap) if cap not in (None, "") else None
        day = parse_day(billing_day) if billing_day not in (None, "") else None
        if cap is not None or day is not None:
            self.cap.set(cap, day)
            self._period = (0, 0)           # the billing day may have moved the period
        now = self.ctx.now()
        start, end = self._period_so_far(now)
        return self.cap.status(start, end, now, self._period_used)

    def usage_csv(self, month: str = "") -> str:
        """One local calendar month (YYYY-MM; '' = this one) as CSV: a row per day and device."""
        now = self.ctx.now()
        if not month:
            month = periods.label(now, self.tz, "month")
        start, end = periods.calendar_month(month, self.tz)
        devices = {d.mac: d for d in self.ctx.state.devices()}
        return export.month_csv(self.book.rows(start, end), devices, self.tz)
