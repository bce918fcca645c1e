"""Schedules ("bedtime") and one-shot pauses.

A schedule is a weekly window (windows.py) for a device or for every device of an owner,
with an action: `pause` cuts the device off the internet (the flows of a usage block,
usage/blockflows.py, under this component's own cookie and priorities) and `dns-strict`
puts it in allow-list DNS mode (the dns component hears it on the bus). A pause is a
one-shot "cut until T"; a resume during a window keeps the device open until the window
ends.

What should hold is recomputed from the wall clock alone, every check_interval seconds
and at once after any change: a clock jump (NTP at boot) is corrected at the next look,
and no state depends on time having passed. Only permitted devices are cut: pending and
denied ones already reach only their gateway, and a blacklisted one nothing.
"""
from __future__ import annotations

import builtins
import threading

from ...commands import CommandError, seen_device
from ...component import Component
from ...cutoff import BEDTIME, PAUSED, Cut
from ...events import Schedule as ScheduleEvent, ScheduleStrict
from ...leases import Lease
from ...macaddr import BadMac, normalize
from ...values import BadValue, row_id, whole_number
from ..usage.blockflows import SCHEDULE, block_flows, forget_all, unblock
from ..usage.periods import zone
from .store import ACTIONS, OWNER, Pause, Schedule, ScheduleStore
from .windows import Window, WindowError

MAX_PAUSE_MINUTES = 7 * 24 * 60


def parse_target(mac=None, owner=None) -> str:
    if bool(mac) == bool(owner):
        raise CommandError("schedule: give either mac or owner")
    if owner:
        if not isinstance(owner, str) or not owner.strip():
            raise CommandError("schedule: owner must be a name")
        return OWNER + owner.strip()
    try:
        return normalize(str(mac))
    except BadMac as exc:
        raise CommandError(f"schedule: {exc}") from None


def parse_minutes(minutes) -> int:
    try:
        return whole_number(minutes, "pause: minutes", 1, MAX_PAUSE_MINUTES)
    except BadValue as exc:
        raise CommandError(str(exc)) from None


class Schedules(Component):
    name = "schedules"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.tz = zone(ctx.config.timezone)
        self.store = ScheduleStore(ctx.state)
        self.paused: dict[str, Lease] = {}       # MAC -> the lease its pause flows are for
        self.strict: frozenset[str] | None = None    # None: not told yet (the first look tells)
        self._cut: set[str] = set()              # the devices `wanted` cut at the last look
        self._lock = threading.RLock()

    # -- life cycle -----------------------------------------------------------------------------
    def start(self) -> None:
        cmd = self.ctx.commands.register
        cmd("schedules", self.list)
        cmd("schedule-add", self.add)
        cmd("schedule-remove", self.remove)
        cmd("pause", self.pause)
        cmd("resume", self.resume)
        self.ctx.bus.subscribe("lease", self._on_change)
        self.ctx.bus.subscribe("device", self._on_change)
        self.ctx.bus.subscribe("ipv6_plan", self._on_ipv6_plan)
        self.ctx.bus.subscribe("timezone", self._on_timezone)
        self.ctx.device_facts.append(self._facts)
        self.ctx.cutoffs.add_source(self._cut_off)     # the page and DNS of a paused device
        # the first look runs after every component has started (and so subscribed)
        self.ctx.every(self.ctx.config.schedules_check_interval, self.check)

    def datapath_up(self, dp) -> list:
        """Stale pause flows of an earlier run go; the ones due now come back."""
        with self._lock:
            self.paused.clear()
            return [forget_all(SCHEDULE), *self._reconcile(self.ctx.now())]

    def _on_ipv6_plan(self, topic: str, ev) -> list:
        return self.datapath_up(self.ctx.datapath) if self.ctx.datapath is not None else []

    def _on_timezone(self, topic: str, ev) -> list:
        """The household set another zone: windows open and close by its clock from now."""
        with self._lock:
            self.tz = zone(ev.zone)
            return self._reconcile(self.ctx.now())

    def _on_change(self, topic: str, ev) -> list:
        """A lease moved or ended, a device was permitted or denied, an owner renamed."""
        mac = ev.mac
        if mac not in self.paused and (getattr(ev, "reason", None) == "seen" or topic == "lease"):
            device = self.ctx.state.get_device(mac) if mac else None
            if device is None or device.state != "permitted":
                return []        # a new or pending device (a DHCP flood brings thousands): never ours to cut
        with self._lock:
            return self._reconcile(self.ctx.now())

    def check(self) -> None:
        with self._lock:
            decisions = self._reconcile(self.ctx.now())
        self.ctx.send(decisions)

    # -- what should hold now --------------------------------------------------------------------
    def _macs(self, target: str, devices) -> list[str]:
        if target.startswith(OWNER):
            owner = target[len(OWNER):]
            return [d.mac for d in devices if d.owner == owner]
        return [target]

    def wanted(self, now: float) -> tuple[set[str], set[str]]:
        """(devices to cut off, devices in allow-list DNS mode), from the clock alone."""
        if not self.store.schedules and not self.store.pauses:     # the usual case: nothing to read
            return set(), set()
        devices = self.ctx.state.devices()
        paused: set[str] = set()
        strict: set[str] = set()
        for schedule in self.store.schedules.values():
            if schedule.window.is_open(now, self.tz):
                (paused if schedule.action == "pause" else strict).update(self._macs(schedule.target, devices))
        for mac, one in self.store.pauses.items():
            if one.holds(now):
                (paused.add if one.kind == "pause" else paused.discard)(mac)
        permitted = {d.mac for d in devices if d.state == "permitted"}
        return paused & permitted, strict

    def _reconcile(self, now: float) -> list:
        """Decisions bringing the switch in line with `wanted` (caller holds the lock)."""
        paused, strict = self.wanted(now)
        before = self._cut
        self._cut = set(paused)
        decisions: list = []
        for mac in [m for m in self.paused if m not in paused]:
            decisions.append(unblock(self.paused.pop(mac).index, SCHEDULE))
        for mac in sorted(paused):
            lease = self.ctx.leases.get(mac)
            old = self.paused.get(mac)
            if lease is None or not lease.active or not lease.local:
                if old is not None:
                    decisions.append(unblock(self.paused.pop(mac).index, SCHEDULE))
                continue
            if old is not None and old.same_place(lease):
                continue
            if old is not None:
                decisions.append(unblock(old.index, SCHEDULE))
            self.paused[mac] = lease
            prefix6 = self.ctx.ipv6.device_prefix(lease.index) if self.ctx.ipv6 is not None else None
            decisions += block_flows(lease, prefix6, SCHEDULE)
        if self.strict != frozenset(strict):
            changed = strict ^ (self.strict or frozenset())
            self.strict = frozenset(strict)
            self.ctx.bus.publish(ScheduleStrict(macs=sorted(strict)))
        else:
            changed = set()
        # the board's labels ("paused until ...", "bedtime") follow
        for mac in sorted((paused ^ before) | changed):
            self.ctx.bus.publish(ScheduleEvent(mac=mac))
        # why they are cut off (a pause made longer moves its end): the page and DNS follow
        for mac in sorted(paused | before):
            self.ctx.cutoffs.changed(mac)
        return decisions

    def _apply(self) -> None:
        with self._lock:
            decisions = self._reconcile(self.ctx.now())
        self.ctx.send(decisions)

    # -- device views ---------------------------------------------------------------------------
    def _facts(self, mac: str) -> dict:
        """`paused`: cut off now; `paused_by`: 'pause' (one-shot) or 'schedule' ('' = not cut);
        `paused_until`: epoch second the cut ends (0 = not cut); `in_schedule`: the action
        of a window open now for the device ('' = none). What holds, by the clock (the
        flows follow it, also when the switch is not connected yet)."""
        now = self.ctx.now()
        open_now = self._open_for(mac, now)
        one = self.store.pauses.get(mac)
        one = one if one is not None and one.holds(now) else None
        device = self.ctx.state.get_device(mac)
        by, until = "", 0.0
        if device is not None and device.state == "permitted":
            if one is not None and one.kind == "pause":
                by, until = "pause", one.until
            elif one is None and any(s.action == "pause" for s in open_now):
                by = "schedule"
                until = max(s.window.end_after(now, self.tz) for s in open_now if s.action == "pause")
        in_schedule = "pause" if any(s.action == "pause" for s in open_now) else \
            (open_now[0].action if open_now else "")
        return {"paused": bool(by), "paused_by": by, "paused_until": until, "in_schedule": in_schedule}

    def _cut_off(self, mac: str) -> Cut | None:
        """Why the device is cut off, as far as this component is concerned (the clock's
        answer, as the device view's)."""
        facts = self._facts(mac)
        if facts["paused_by"] == "pause":
            return Cut(PAUSED, facts["paused_until"])
        if facts["paused_by"] == "schedule":
            return Cut(BEDTIME, facts["paused_until"])
        return None

    def _open_for(self, mac: str, now: float) -> list[Schedule]:
        """The windows of the device and of its owner open at `now`."""
        device = self.ctx.state.get_device(mac)
        targets = {mac, OWNER + device.owner} if device and device.owner else {mac}
        return [s for s in self.store.schedules.values() if s.target in targets and s.window.is_open(now, self.tz)]

    # -- commands (CLI and ws.v1 API) ------------------------------------------------------------
    def list(self, mac=None) -> list[dict]:
        rows = sorted(self.store.schedules.values(), key=lambda s: s.id)
        if mac:
            mac = parse_target(mac=mac)
            device = self.ctx.state.get_device(mac)
            targets = {mac, OWNER + device.owner} if device and device.owner else {mac}
            rows = [s for s in rows if s.target in targets]
        return [s.as_dict() for s in rows]

    def add(self, days=None, start=None, end=None, action="pause", mac=None, owner=None, **kw) -> dict:
        """A weekly window for a device (mac) or an owner's devices: days e.g. mon-fri,
        start/end HH:MM local time (end before start: the next morning); action pause or
        dns-strict. A window overlapping one of the same target and action is refused."""
        start = kw.pop("from", start)
        end = kw.pop("to", end)
        if kw:
            raise CommandError(f"schedule-add: unknown argument(s) {', '.join(sorted(kw))}")
        target = parse_target(mac, owner)
        action = action or "pause"
        if action not in ACTIONS:
            raise CommandError(f"schedule-add: action must be pause or dns-strict, got {action!r}")
        try:
            window = Window.make(days, start, end)
        except WindowError as exc:
            raise CommandError(f"schedule-add: {exc}") from None
        if not target.startswith(OWNER) and self.ctx.state.get_device(target) is None:
            raise CommandError(f"no device with MAC {target} has been seen", 404)
        with self._lock:
            for other in self.store.schedules.values():
                if other.target == target and other.action == action and other.window.overlaps(window):
                    raise CommandError(f"schedule-add: {window.text()} overlaps schedule {other.id} "
                                       f"({other.window.text()}, {other.action}) of the same "
                                       f"{'owner' if target.startswith(OWNER) else 'device'}")
            schedule = self.store.add(target, window, action, self.ctx.now())
        self._apply()
        return schedule.as_dict()

    def carry_device(self, old: str, new: str) -> builtins.list[str]:   # (`list` is a command here)
        """A device let in as the device it was: its own schedules move to it (its owner's
        apply to it through its owner, which the join carries)."""
        with self._lock:
            mine = [s for s in self.store.schedules.values() if s.target == old]
            for s in mine:
                self.store.add(new, s.window, s.action, self.ctx.now())
                self.store.remove(s.id)
        if not mine:
            return []
        self._apply()
        return ["schedules"]

    def remove(self, id=None) -> dict:
        try:
            schedule_id = row_id(id, "schedule")
        except BadValue as exc:
            raise CommandError(f"schedule-remove: {exc}") from None
        with self._lock:
            schedule: Schedule | None = self.store.remove(schedule_id)
        if schedule is None:
            raise CommandError(f"schedule-remove: no schedule {schedule_id}", 404)
        self._apply()
        return {"removed": schedule_id}

    def pause(self, mac=None, minutes=60) -> dict:
        """Cut the device off for `minutes` from now (the board's one tap: 60)."""
        mac = seen_device(self.ctx.state, mac)
        now = self.ctx.now()
        with self._lock:
            self.store.set_pause(Pause(mac, "pause", now, now + 60 * parse_minutes(minutes)))
        self._apply()
        return {"mac": mac, **self._facts(mac)}

    def resume(self, mac=None) -> dict:
        """End a pause now; inside a pause window, stay open until that window ends."""
        mac = seen_device(self.ctx.state, mac)
        now = self.ctx.now()
        ends = [s.window.end_after(now, self.tz) for s in self._open_for(mac, now) if s.action == "pause"]
        with self._lock:
            if ends:
                self.store.set_pause(Pause(mac, "resume", now, max(ends)))
            else:
                self.store.clear_pause(mac)
        self._apply()
        return {"mac": mac, **self._facts(mac)}
