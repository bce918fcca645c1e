"""Durable usage: bytes per device per local hour in state.db, read per hour/day/month and
per device, owner or device type.

Fed by routing's `bandwidth` events: one per permitted device per flow-stats poll,
carrying the bytes counted since the previous poll (flow-removed remainders included),
split into up and down. Each byte reaches exactly one event, so summing them counts it
once. Why state.db rather than hwdb persistent tables: usage is read with the devices'
owner and type, which live in state.db; and state.db already has the migrations, the
write-behind batching, the backup and the upgrade path that keeps the data partition.
"""
from __future__ import annotations

import dataclasses

from ...commands import CommandError
from ... import wording
from ...component import Component
from ...cutoff_pages import back_at
from ...cutoff import ALLOWANCE, Cut
from ...events import Alert, AlertKind
from . import export, periods, report
from .book import UsageBook
from .blockflows import block_flows, unblock
from .blockflows import forget_all as forget_blocks
from ...leases import Lease
from .slowflows import forget_all, slow_flows, unslow
from .cap import Cap, parse_day, parse_size
from .limits import OWNER, Limit, Limits, parse_limit, parse_target
from .bursts import Bursts, minutes_text, parse as parse_burst, size_text
from .recent import RecentMinutes




class Usage(Component):
    name = "usage"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.tz = periods.zone(ctx.config.usage_timezone or ctx.config.timezone)
        self.book = UsageBook(ctx.state, self.tz, ctx.config.usage_keep_months)
        self.cap = Cap(ctx.state, ctx.config.usage_monthly_cap, ctx.config.usage_billing_day)
        # the billing period's bytes so far, kept up to date per event for the cap alerts
        self._period: tuple[int, int] = (0, 0)
        self._period_used = 0
        self.limits = Limits(ctx.state)
        self.blocked: dict[str, int] = {}      # MAC -> block index of the flows installed for it
        self.slowed: dict[str, tuple[Lease, int]] = {}   # MAC -> (lease, kbit/s) its meter and flows are for
        # tests only (usage.test_period_seconds): periods shorter than the stored hours are
        # counted here, in memory: (MAC, period start) -> bytes
        self._short: dict[tuple[str, int], int] = {}
        self._limit_used: dict[str, tuple[int, int]] = {}   # target -> (period start, bytes)
        self.recent = RecentMinutes()        # the panel's "last hour" chart, per minute
        # bytes per device since local midnight, the one "today" every view shows (the board's
        # panel too): kept from the same events as the book, read from it at a new day
        self._today_start = 0
        self._today: dict[str, int] = {}
        self.bursts = Bursts(ctx.state)     # per-device "more than X in Y minutes" alerts

    @property
    def billing_day(self) -> int:
        return self.cap.billing_day

    def start(self) -> None:
        self.ctx.bus.subscribe("bandwidth", self._on_bandwidth)
        self.ctx.every(self.ctx.config.usage_flush_interval, self.flush)
        self.ctx.commands.register("usage", self.usage)
        self.ctx.commands.register("usage-cap", self.usage_cap)
        self.ctx.commands.register("usage-csv", self.usage_csv)
        self.ctx.commands.register("usage-device", self.usage_device)
        self.ctx.commands.register("usage-device-sums", self.device_sums, reads_only=True)
        self.ctx.commands.register("usage-limit", self.set_limit)
        self.ctx.commands.register("usage-limit-remove", self.remove_limit)
        self.ctx.commands.register("usage-limits", lambda: [lim.as_dict() for lim in self.limits.by_target.values()])
        self.ctx.commands.register("usage-lift", self.lift)
        self.ctx.commands.register("usage-today", self.today, reads_only=True)
        self.ctx.commands.register("usage-burst", self.set_burst)
        self.ctx.commands.register("usage-burst-remove", self.remove_burst)
        self.ctx.commands.register("usage-bursts", lambda: [b.as_dict() for b in self.bursts.by_mac.values()])
        self.ctx.bus.subscribe("device", self._on_device)
        self.ctx.bus.subscribe("lease", self._on_lease)
        self.ctx.bus.subscribe("ipv6_plan", self._on_ipv6_plan)
        self.ctx.bus.subscribe("timezone", self._on_timezone)
        self.ctx.device_facts.append(self._facts)
        self.ctx.cutoffs.add_source(self._cut_off)     # the page and DNS of a blocked device

    def stop(self) -> None:
        self.flush()

    def flush(self) -> None:
        rows = self.book.flush(self.ctx.now())
        if rows:
            self.ctx.count("usage.rows_written", rows)
        self._end_expired_blocks()

    def datapath_up(self, dp) -> list:
        self.blocked.clear()
        self.slowed.clear()
        now = self.ctx.now()
        return [forget_blocks(), forget_all(), *self._block(self._should_block(now)),
                *self._slow(self._should_slow(now))]

    def _on_ipv6_plan(self, topic: str, ev) -> list:
        """Renumbered: blocks and slow-downs cover the devices' new /64s."""
        return self.datapath_up(self.ctx.datapath) if self.ctx.datapath is not None else []

    def _prefix6(self, lease):
        return self.ctx.ipv6.device_prefix(lease.index) if self.ctx.ipv6 is not None else None

    def _on_bandwidth(self, topic: str, ev) -> list:
        total = int(ev.bytes or 0)
        up = int(ev.up or 0)
        down = int(ev.down if ev.down is not None else total - up)
        now = self.ctx.now()
        start, _end = self._period_so_far(now)     # before adding: a re-read must not count it twice
        self.book.add(ev.mac, up, down, now)
        self.recent.add(ev.mac, up, down, now)
        if self._today_start and self._today_start <= now < self._today_start + 86400:
            self._today[ev.mac] = self._today.get(ev.mac, 0) + max(up, 0) + max(down, 0)
        self._check_burst(ev.mac, now)
        if self.ctx.config.usage_test_period_seconds:
            key = (ev.mac, self.limit_window("day", now)[0])
            self._short = {k: v for k, v in self._short.items() if k[1] == key[1]}
            self._short[key] = self._short.get(key, 0) + max(up, 0) + max(down, 0)
        self._period_used += max(up, 0) + max(down, 0)
        for level in self.cap.due_alerts(start, self._period_used):
            self.ctx.count(f"usage.alerts_{level}")
            part = "all" if level >= 100 else f"{level}%"
            self.ctx.bus.publish(Alert(
                mac="", kind=AlertKind(f"usage-{level}"),
                detail=wording.sentence(f"the household has used {part} of its data for this billing period "
                                        f"({wording.size(self._period_used)} of {wording.size(self.cap.cap)})"),
                data={"used_bytes": self._period_used, "cap_bytes": self.cap.cap, "percent": level}))
        return self._check_limits(ev.mac, max(up, 0) + max(down, 0), now)

    def _on_timezone(self, topic: str, ev) -> None:
        """Hours, days and billing periods by the new zone from now ([usage] timezone, when
        set, still wins)."""
        if self.ctx.config.usage_timezone:
            return
        self.tz = self.book.tz = periods.zone(ev.zone)
        self._period = (0, 0)           # the billing period is read again by the new zone

    def _period_so_far(self, now: float) -> tuple[int, int]:
        """The current billing period; its bytes are re-read when it changes."""
        start, end = self._period
        if not start <= now < end:
            start, end = self._period = periods.month_window(now, self.tz, self.billing_day)
            self._period_used = sum(r[2] + r[3] for r in self.book.rows(start, end))
        return start, end

    # -- reads --------------------------------------------------------------------------------
    def today(self, mac: str) -> int:
        """A device's bytes since local midnight (up and down): the `usage-today` command,
        what the board's panel shows as Today."""
        now = self.ctx.now()
        start, end = periods.day_window(now, self.tz)
        if start != self._today_start:
            self._today = {}
            for row_mac, _hour, up, down in self.book.rows(start, end):
                self._today[row_mac] = self._today.get(row_mac, 0) + up + down
            self._today_start = start
        return self._today.get(mac, 0)

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
                "series": report.group(rows, devices, by, step, self.tz, self.billing_day),
                "steps": report.step_labels(start, now, step, self.tz)}

    def usage_device(self, mac: str, span: str = "day") -> dict:
        """One device's bytes up and down over the last hour (per minute), day (per local
        hour) or month (per local day), for the panel's chart."""
        if span not in report.RANGES:
            raise CommandError(f"usage-device: range must be one of {', '.join(report.RANGES)}, got {span!r}")
        edges = report.range_edges(span, self.ctx.now(), self.tz)
        rows = self.recent.rows(mac) if span == "hour" else self.book.rows(edges[0], edges[-1])
        return report.device_series(mac, span, rows, edges, self.tz)

    def device_sums(self, mac: str) -> dict:
        """One device's bytes up and down today and this week (from Monday), local time: the
        figures of its story (components/identify/story.py)."""
        now = self.ctx.now()
        today, tomorrow = periods.day_window(now, self.tz)
        monday = periods.week_start(now, self.tz)
        return {span: dict(zip(("up", "down"), self.book.device_sum(mac, start, tomorrow), strict=True))
                for span, start in (("today", today), ("week", monday))}

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
            month = periods.label(int(now), self.tz, "month")
        start, end = periods.calendar_month(month, self.tz)
        devices = {d.mac: d for d in self.ctx.state.devices()}
        return export.month_csv(self.book.rows(start, end), devices, self.tz)

    # -- burst alerts ----------------------------------------------------------------------------
    def set_burst(self, mac, size, minutes) -> dict:
        """Tell the household when this device moves more than `size` (bytes, or 500M, 2G)
        within `minutes` (1-60)."""
        burst = parse_burst(mac, size, minutes)
        self.ctx.devices.get(burst.mac)        # a device the router has seen (UnknownDevice: 404)
        self.bursts.set(burst)
        return burst.as_dict()

    def remove_burst(self, mac) -> dict:
        mac = self.ctx.devices.get(mac).mac
        return {"mac": mac, "removed": self.bursts.remove(mac)}

    def _check_burst(self, mac: str, now: float) -> None:
        over = self.bursts.went_over(mac, self.recent, now)
        if over is None:
            return
        burst, total = over
        self.ctx.count("usage.burst_alerts")
        self.ctx.bus.publish(Alert(mac=mac, kind=AlertKind.USAGE_BURST,
                                   detail=wording.sentence(f"{wording.name_of(self.ctx.state, mac)} moved "
                                                           f"{size_text(total)} in the last "
                                                           f"{minutes_text(burst.minutes)}: its alert is for "
                                                           f"{burst.text()}"),
                                   data={"bytes": total, "limit_bytes": burst.bytes, "minutes": burst.minutes}))

    def _on_device(self, topic: str, ev) -> None:
        if ev.reason == "forgotten":         # forgetting a device forgets its alert too
            self.bursts.remove(ev.mac)

    # -- per-device / per-owner limits --------------------------------------------------------
    def limit_window(self, period: str, now: float) -> tuple[int, int]:
        test = self.ctx.config.usage_test_period_seconds
        if test:            # tests only: short periods, so "the next period" comes in seconds
            start = int(now // test * test)
            return start, start + test
        return periods.day_window(now, self.tz) if period == "day" else \
            periods.month_window(now, self.tz, self.billing_day)

    def _owner(self, mac: str) -> str:
        dev = self.ctx.state.get_device(mac)
        return dev.owner if dev else ""

    def _macs(self, target: str) -> list[str]:
        if target.startswith(OWNER):
            return [d.mac for d in self.ctx.state.devices() if d.owner == target[len(OWNER):]]
        return [target]

    def _used(self, target: str, start: int, end: int) -> int:
        macs = set(self._macs(target))
        if self.ctx.config.usage_test_period_seconds:
            return sum(self._short.get((mac, start), 0) for mac in macs)
        return sum(r[2] + r[3] for r in self.book.rows(start, end) if r[0] in macs)

    def _check_limits(self, mac: str, nbytes: int, now: float) -> list:
        decisions = []
        for limit in self.limits.for_device(mac, self._owner(mac)):
            start, end = self.limit_window(limit.period, now)
            # the target's bytes this period, kept in memory: state.db is read only when a
            # period begins (or after a restart or a new limit), never per event
            cached = self._limit_used.get(limit.target)
            if cached is None or cached[0] != start:
                used = self._used(limit.target, start, end)     # already holds this event's bytes
            else:
                used = cached[1] + nbytes
            self._limit_used[limit.target] = (start, used)
            if start in (limit.reached, limit.lifted):
                continue
            if used < limit.allowance:
                continue
            limit.reached = start
            self.limits.save(limit)
            self.ctx.count(f"usage.limit_{limit.action}")
            # applied before the alert, so a device view read for the alert shows it
            if limit.action == "block":
                decisions += self._block(self._macs(limit.target))
            elif limit.action == "slow":
                decisions += self._slow(self._should_slow(now))
            for m in self._macs(limit.target):
                self.ctx.bus.publish(Alert(mac=m, kind=AlertKind.USAGE_LIMIT,
                                           detail=self._limit_words(limit, m, used, end, now),
                                           data={"target": limit.target, "used_bytes": used,
                                                 "allowance_bytes": limit.allowance, "period": limit.period,
                                                 "action": limit.action, "rate_kbit": limit.rate or None,
                                                 "until": end}))
        return decisions

    def _limit_words(self, limit: Limit, mac: str, used: int, end: float, now: float) -> str:
        """"Tom's laptop has used up today's allowance (27.3 MB of 24.8 MB). Its internet is
        off and comes back at midnight." """
        owner = limit.target.startswith(OWNER)
        who = wording.owner_devices(limit.target[len(OWNER):]) if owner else wording.name_of(self.ctx.state, mac)
        span = "today's" if limit.period == "day" else "this month's"
        back = back_at(end, now, self.tz)
        its = "Their" if owner else "Its"
        then = {"block": f"{its} internet is off and comes back {back}.",
                "slow": f"{its} internet is slowed to {wording.rate(limit.rate)}, back to full speed {back}.",
                "notify": "Nothing is cut: the household only wanted to know."}[limit.action]
        return wording.sentence(f"{who} {'have' if owner else 'has'} used up {span} allowance "
                                f"({wording.size(used)} of {wording.size(limit.allowance)})") + " " + then

    def _in_force(self, action: str, now: float) -> list[Limit]:
        """The limits with this action reached this period and not lifted."""
        found = []
        for limit in self.limits.by_target.values():
            start, _end = self.limit_window(limit.period, now)
            if limit.action == action and limit.reached == start and limit.lifted != start:
                found.append(limit)
        return found

    def _should_block(self, now: float) -> list[str]:
        return [mac for limit in self._in_force("block", now) for mac in self._macs(limit.target)]

    def _should_slow(self, now: float) -> dict[str, int]:
        """MAC -> kbit/s; a device under two slow limits (its own, its owner's) gets the lower rate."""
        rates: dict[str, int] = {}
        for limit in self._in_force("slow", now):
            for mac in self._macs(limit.target):
                rates[mac] = min(rates.get(mac, limit.rate), limit.rate)
        return rates

    def _block(self, macs) -> list:
        decisions = []
        for mac in macs:
            lease = self.ctx.leases.get(mac)
            if mac in self.blocked or lease is None or not lease.active or not lease.local:
                continue
            self.blocked[mac] = lease.index
            decisions += block_flows(lease, self._prefix6(lease))
            self.ctx.cutoffs.changed(mac)
        return decisions

    def _cut_off(self, mac: str) -> Cut | None:
        """A device blocked over its allowance: until its period ends."""
        if mac not in self.blocked:
            return None
        now = self.ctx.now()
        for limit in self._in_force("block", now):
            if mac in self._macs(limit.target):
                return Cut(ALLOWANCE, self.limit_window(limit.period, now)[1], limit.period)
        return None

    def _slow(self, rates: dict[str, int]) -> list:
        decisions = []
        for mac, rate in rates.items():
            lease = self.ctx.leases.get(mac)
            if lease is None or not lease.active or not lease.local:
                continue
            old = self.slowed.get(mac)
            if old is not None and old[1] == rate and old[0].same_place(lease):
                continue
            if old is not None:                        # another rate or place: made anew
                decisions += unslow(self.slowed.pop(mac)[0].index)
            self.slowed[mac] = (lease, rate)
            decisions += slow_flows(lease, rate, self._prefix6(lease))
        return decisions

    def _unblock(self, keep: set[str]) -> None:
        gone = [mac for mac in self.blocked if mac not in keep]
        if gone:
            self.ctx.send([unblock(self.blocked.pop(mac)) for mac in gone])
        for mac in gone:
            self.ctx.cutoffs.changed(mac)

    def _unslow(self, keep: set[str]) -> None:
        gone = [mac for mac in self.slowed if mac not in keep]
        if gone:
            self.ctx.send([d for mac in gone for d in unslow(self.slowed.pop(mac)[0].index)])

    def _end_expired_blocks(self) -> None:
        """A new period (or a lift, or a removed limit) ends a block or a slow-down."""
        if self.blocked:
            self._unblock(set(self._should_block(self.ctx.now())))
        if self.slowed:
            self._unslow(set(self._should_slow(self.ctx.now())))

    def _on_lease(self, topic: str, ev) -> list:
        lease = ev.lease
        if lease is None:
            return []
        decisions = []
        if lease.mac in self.blocked:
            decisions += [unblock(self.blocked.pop(lease.mac)), *self._block([lease.mac])]
            self.ctx.cutoffs.changed(lease.mac)
        # the meter and flows move with the lease, go when it ends, and come when a device
        # of an owner over a slow limit gets one
        rate = self._should_slow(self.ctx.now()).get(lease.mac)
        if lease.mac in self.slowed and not (rate and lease.active and lease.local):
            decisions += unslow(self.slowed.pop(lease.mac)[0].index)
        elif rate:
            decisions += self._slow({lease.mac: rate})
        return decisions

    def _facts(self, mac: str) -> dict:
        limits = self.limits.for_device(mac, self._owner(mac))
        return {"usage_blocked": mac in self.blocked,
                "usage_slowed": mac in self.slowed,
                "usage_slow_kbps": self.slowed[mac][1] if mac in self.slowed else 0,
                "usage_limit": limits[0].as_dict() if limits else None,
                "usage_burst": burst.as_dict() if (burst := self.bursts.by_mac.get(mac)) else None}

    def set_limit(self, allowance=None, mac=None, owner=None, period="day", action="block", rate=None) -> dict:
        """Set a device's (mac) or an owner's allowance per day or month (bytes, or e.g. 2G);
        with action slow, the rate it keeps once that is used (e.g. 1mbit; default 1 Mbit/s)."""
        if allowance is None:
            raise CommandError("usage-limit: give the allowance (bytes, or e.g. 2G)")
        limit = parse_limit(parse_target(mac, owner), allowance, period or "day", action or "block", rate)
        self.limits.set(limit)
        self._limit_used.pop(limit.target, None)
        self._end_expired_blocks()
        # an allowance already used up (set below what the device used this period) is in
        # force now, not from the device's next packet: its label and page say so at once
        now, decisions = self.ctx.now(), []
        for target_mac in self._macs(limit.target):
            decisions += self._check_limits(target_mac, 0, now)
        if decisions:
            self.ctx.send(decisions)
        return limit.as_dict()

    def carry_device(self, old: str, new: str) -> list[str]:
        """A device let in as the device it was: its allowance and its burst alert move to it."""
        carried = []
        limit = self.limits.remove(old)
        if limit is not None:
            self.limits.set(dataclasses.replace(limit, target=new))
            self._limit_used.pop(old, None)
            self._end_expired_blocks()
            carried.append("allowance")
        burst = self.bursts.by_mac.get(old)
        if burst is not None:
            self.bursts.set(dataclasses.replace(burst, mac=new))
            self.bursts.remove(old)
            carried.append("burst alert")
        return carried

    def remove_limit(self, mac=None, owner=None) -> dict:
        limit = self.limits.remove(parse_target(mac, owner))
        if limit is None:
            raise CommandError("usage-limit-remove: no limit set for that", 404)
        self._end_expired_blocks()
        return {"removed": limit.target}

    def lift(self, mac=None, owner=None) -> dict:
        """A household member lifts a reached limit until the next period."""
        target = parse_target(mac, owner)
        limits = [self.limits.by_target[target]] if target in self.limits.by_target else \
            [lim for lim in self.limits.for_device(target, self._owner(target))] if not owner else []
        if not limits:
            raise CommandError("usage-lift: no limit set for that", 404)
        for limit in limits:
            limit.lifted = self.limit_window(limit.period, self.ctx.now())[0]
            self.limits.save(limit)
        self._end_expired_blocks()
        return {"lifted": [lim.target for lim in limits]}
