"""The identify component: gathers what each device says about itself (its DHCP and
DHCPv6 messages, mDNS and SSDP announcements, the names it looks up in its first minute),
keeps it, classifies it against the catalog, and adds the guess to the device's view
(`identity`). The household's correction outranks the guess and is kept.

A guess never decides anything: nothing here permits, denies or names a device.

Cost: nothing on the DHCP path but a dict store. dhcp and routing hand a message's raw
bytes to the inbox (inbox.py, offered to them as interfaces.DeviceSays); every
DRAIN_SECONDS the timer reads a batch (fingerprint.py), compares each with what the
device said before and, when it is new, classifies it (the few rules the catalog's index
picks) and queues it for the state db (`defer`, written behind), then tells the board (an
`identity` event). The IEEE registry is read in a real OS thread at start (oui.py), the
catalog once at construction, before the switch connects.
"""
from __future__ import annotations

import collections
import json
import threading

from ...commands import CommandError
from ... import wording
from ...component import Component
from ...events import Identity
from ...interfaces import DeviceSays
from ...macaddr import BadMac, normalize
from ...oui import default_table, is_private
from ...worker import offload
from ..usage.periods import day_window, zone
from . import announce, catalog, correction, story
from .classify import Guess, classify
from .history import DeviceHistory
from .inbox import Inbox

DRAIN_SECONDS = 0.25         # what devices said is read and classified this often (the board learns it then)
HEARD_MAX = 1024             # ... at most this many waiting (the listener drops the rest)
FIRST_MINUTE = 60.0          # the names a device looks up this long after it is first seen
NAMES_MAX = 24               # ... at most this many
TEXT_MAX = 64


class IdentifyComponent(Component):
    name = "identify"

    def __init__(self, ctx, oui=None):
        super().__init__(ctx)
        self.rules, self.sources = catalog.load()
        self.oui = oui or default_table()
        self.evidence: dict[str, dict[str, str]] = {}
        self.guesses: dict[str, Guess] = {}
        self.fixes: dict[str, dict] = {}
        self._first_seen: dict[str, float] = {}      # devices still in their first minute
        # (address, source, evidence) the announcement listener heard, for the hub to take
        self._heard: collections.deque = collections.deque(maxlen=HEARD_MAX)
        self.inbox = Inbox()        # DHCP messages as they came (dhcp and routing put, the timer reads)
        self.listener: announce.Listener | None = None
        self._dirty: set[str] = set()                # said something new, not classified yet
        self._by_mark: dict[tuple[str, ...], set[str]] = {}   # looks_like's index: mark -> MACs
        self.history = DeviceHistory(ctx)
        self.tz = zone(ctx.config.timezone)
        self._hwdb = None

    def offer(self, interface: type) -> object:
        if interface is DeviceSays:
            return self.inbox
        return super().offer(interface)

    # -- start and stop --------------------------------------------------------------------
    def start(self) -> None:
        # the IEEE registry (tens of thousands of lines) is read now, off the loop, so the
        # first device's timer pass finds it read
        threading.Thread(target=self.oui.load, daemon=True, name="identify-oui").start()
        for row in self.ctx.state.execute("SELECT mac, evidence FROM device_evidence"):
            try:
                evidence = json.loads(row["evidence"])
            except ValueError:
                continue
            if isinstance(evidence, dict):
                self.evidence[row["mac"]] = {str(k): str(v) for k, v in evidence.items()}
        for row in self.ctx.state.execute("SELECT mac, type, os, label, corrected FROM device_identity"):
            self.fixes[row["mac"]] = dict(row)
        self.guesses = {mac: classify(ev, self.rules) for mac, ev in self.evidence.items()}
        for mac, ev in self.evidence.items():
            self._index(mac, None, ev)
        bus = self.ctx.bus
        bus.subscribe("device", self._on_device)
        bus.subscribe("dns_query", self._on_query)
        bus.subscribe("timezone", self._on_timezone)
        self.history.start()
        self.ctx.device_facts.append(self._facts)
        cmd = self.ctx.commands
        cmd.register("identity", self.identity)
        cmd.register("identify-correct", self.correct)
        cmd.register("identify-clear", self.clear)
        cmd.register("identify-catalog", self.catalog)
        cmd.register("identify-join", self.join)
        cmd.register("device-story", self.device_story)
        # mDNS and SSDP announcements, pending devices' too, reach the router's stack
        # (routing's announcement flows); a real switch's bridge only (not the unit tests')
        groups = {announce.MDNS[0], announce.SSDP[0]}
        ipv6 = self.ctx.config.ipv6_enabled
        if ipv6:
            groups.add(announce.MDNS6)
        self.ctx.announcement_groups.update(groups)
        self.ctx.router_groups.update(groups)
        if self.ctx.switch_is_real:
            self.listener = announce.Listener(self.ctx.config.bridge, self._heard_one, ipv6=ipv6)
            try:
                self.listener.start()
            except OSError as exc:
                self.log.error("cannot hear mDNS/SSDP announcements on %s (%s): devices are identified "
                               "by their DHCP only", self.ctx.config.bridge, exc)
                self.listener = None
        self.ctx.every(DRAIN_SECONDS, self.drain)

    def stop(self) -> None:
        if self.listener is not None:
            self.listener.stop()

    # -- announcements (the listener's thread queues, the hub takes) ------------------------
    def _heard_one(self, address: str, source: str, evidence: dict) -> None:
        self._heard.append((address, source, evidence))

    def drain(self) -> None:
        """The timer's pass: the DHCP messages waiting in the inbox (a batch), read; the
        announcements heard since the last time, each to the device holding its address;
        then every device that said something new is classified and the board told (settle)."""
        for mac, _source, evidence in self.inbox.read():
            self.add(mac, evidence)
        if self.inbox.dropped:
            self.ctx.count("identify.inbox_full", self.inbox.dropped)
            self.inbox.dropped = 0
        while self._heard:
            address, source, evidence = self._heard.popleft()
            if address.startswith(announce.MAC_SOURCE):     # mDNS over IPv6: the frame's MAC
                lease = self.ctx.leases.get(address.removeprefix(announce.MAC_SOURCE))
            else:
                lease = self.ctx.leases.by_address(address)
            if lease is None:
                self.ctx.count("identify.unknown_announcer")
                continue
            self.ctx.count(f"identify.{source}")
            self.add(lease.mac, evidence)
        self.settle()

    # -- evidence in -----------------------------------------------------------------------
    def add(self, mac: str, evidence: dict) -> None:
        """Evidence about `mac` (field -> text); classified again when it says something new."""
        known = self.evidence.get(mac)
        if known is None:
            known = {}
            vendor = "" if is_private(mac) else self.oui.vendor(mac)
            if vendor:
                known["oui"] = vendor[:TEXT_MAX]
            self._first_seen[mac] = self.ctx.now()
        merged = {**known, **{k: str(v)[:TEXT_MAX * 4] for k, v in evidence.items() if v}}
        if merged == self.evidence.get(mac):
            return
        self._index(mac, self.evidence.get(mac), merged)
        self.evidence[mac] = merged
        self.ctx.count("identify.evidence")
        self._dirty.add(mac)

    def settle(self) -> None:
        """Classify the devices that said something new since the last pass, and keep what
        they said: on a timer, not in the handler of the packet that said it (a DHCP
        request's handler only stores its bytes in the inbox)."""
        dirty, self._dirty = self._dirty, set()
        for mac in dirty:
            evidence = self.evidence.get(mac)
            if evidence is None:            # forgotten meanwhile
                continue
            self.ctx.state.defer("INSERT OR REPLACE INTO device_evidence (mac, evidence, updated) VALUES (?, ?, ?)",
                                 (mac, json.dumps(evidence, sort_keys=True), self.ctx.now()))
            self._classify(mac)

    def _classify(self, mac: str) -> None:
        before = self.guesses.get(mac)
        guess = classify(self.evidence.get(mac, {}), self.rules)
        self.ctx.count("identify.classified")
        self.guesses[mac] = guess
        if before is None or before.as_dict() != guess.as_dict():
            self._tell(mac)

    def _tell(self, mac: str) -> None:
        if self.ctx.bus.heard("identity"):       # the board's stream (api); a view costs a lookup or two
            self.ctx.bus.publish(Identity(mac=mac, identity=self.view(mac)))

    def _on_query(self, topic: str, ev) -> None:
        """The names a device looks up in its first minute (a console's own service, a
        phone's connectivity check) are evidence too."""
        mac = ev.mac
        since = self._first_seen.get(mac) if mac else None
        if since is None:
            return
        if self.ctx.now() - since > FIRST_MINUTE:
            del self._first_seen[mac]
            return
        name = ev.name.rstrip(".").lower()[:TEXT_MAX * 2]
        names = self.evidence.get(mac, {}).get("names", "")
        listed = names.split(",") if names else []
        if name and name not in listed and len(listed) < NAMES_MAX:
            self.add(mac, {"names": ",".join([*listed, name])})

    def _on_device(self, topic: str, ev) -> None:
        if ev.state is None:                 # forgotten: if it comes back, it is new
            self._index(ev.mac, self.evidence.pop(ev.mac, None), None)
            self.inbox.forget(ev.mac)
            self.guesses.pop(ev.mac, None)
            self.fixes.pop(ev.mac, None)
            self._first_seen.pop(ev.mac, None)
            self._dirty.discard(ev.mac)
            self.ctx.state.defer("DELETE FROM device_evidence WHERE mac=?", (ev.mac,))
            self.ctx.state.defer("DELETE FROM device_identity WHERE mac=?", (ev.mac,))
            self.ctx.state.defer("DELETE FROM device_joins WHERE mac=?", (ev.mac,))
        elif ev.reason == "seen" and ev.mac not in self._first_seen and ev.mac not in self.evidence:
            self._first_seen[ev.mac] = self.ctx.now()

    # -- views out -------------------------------------------------------------------------
    def view(self, mac: str) -> dict:
        """What the device is, as the board shows it: the guess, or the household's word."""
        guess = self.guesses.get(mac) or Guess()
        out = guess.as_dict()
        out["corrected"] = False
        twin = self.looks_like(mac)
        if twin is not None:
            name = wording.name_of(self.ctx.state, twin)
            out["looks_like"] = {"mac": twin, "name": name,
                                 "text": f"looks like {name} with a new private address"}
        fix = self.fixes.get(mac)
        if fix:
            out["guess"] = guess.as_dict()
            out.update({k: fix[k] for k in ("type", "os", "label") if fix[k]})
            if fix["os"] and fix["os"] != guess.os:
                out["os_version"] = ""
            if not fix["label"]:
                out["label"] = " ".join(w for w in (fix["os"], fix["type"]) if w) if not guess.label else guess.label
            out.update(corrected=True, confidence=1.0, level="household", why=["the household said so"])
        return out

    def _facts(self, mac: str) -> dict:
        """The device's view (the board's list, a device event): what is known at the last
        timer pass. Never classifies here: a new device's event is made on its DISCOVER's
        path, and the timer's `identity` event brings the guess a moment later."""
        if mac not in self.guesses and mac not in self.fixes:
            return {"identity": None}
        return {"identity": self.view(mac)}

    # -- a randomised MAC's return ---------------------------------------------------------
    @staticmethod
    def _marks(evidence: dict[str, str]) -> set[tuple[str, ...]]:
        """What makes two devices one: the same DHCP fingerprint and host name, or the same
        mDNS name."""
        marks: set[tuple[str, ...]] = set()
        if evidence.get("prl") and evidence.get("hostname"):
            marks.add(("dhcp", evidence["prl"], evidence.get("vendor", ""), evidence["hostname"]))
        if evidence.get("mdns_name"):
            marks.add(("mdns", evidence["mdns_name"]))
        return marks

    def looks_like(self, mac: str) -> str | None:
        """The permitted device a pending device with a private (randomised) MAC looks like,
        if one does: a phone that came back with a new private address. Only a person's tap
        makes them one device (`identify-join`). An index of the marks (`_by_mark`) keeps
        it a few lookups whatever the number of devices."""
        if not is_private(mac) or self.ctx.state.device_state(mac) != "pending":
            return None
        for mark in self._marks(self.evidence.get(mac, {})):
            for other in sorted(self._by_mark.get(mark, ())):
                if other != mac and self.ctx.state.device_state(other) == "permitted":
                    return other
        return None

    def _index(self, mac: str, before: dict[str, str] | None, after: dict[str, str] | None) -> None:
        for mark in self._marks(before or {}):
            macs = self._by_mark.get(mark)
            if macs is not None:
                macs.discard(mac)
                if not macs:
                    del self._by_mark[mark]
        for mark in self._marks(after or {}):
            self._by_mark.setdefault(mark, set()).add(mac)

    def join(self, mac: str, as_mac: str) -> dict:
        """`identify-join`: the household taps "let it in as Tom's iPhone": the new address
        becomes that device (its name, owner, type, what the household said it is, its
        decision: permitted, and every component's settings for it: `carried`), the old
        address is forgotten, and the join is kept
        (device_joins) so the device's story reads both addresses' history as one."""
        mac, as_mac = self._known(mac), self._known(as_mac)
        self._read_now(mac, as_mac)
        if self.looks_like(mac) != as_mac:
            raise CommandError(f"{wording.name_of(self.ctx.state, mac)} does not look like "
                               f"{wording.name_of(self.ctx.state, as_mac)}: nothing was changed", 409)
        old = self.ctx.state.get_device(as_mac)
        assert old is not None
        self.ctx.devices.set_meta(mac, name=old.name or old.hostname, owner=old.owner, type=old.type)
        fix = self.fixes.get(as_mac)
        if fix:
            self.ctx.state.execute("INSERT OR REPLACE INTO device_identity (mac, type, os, label, corrected) "
                                   "VALUES (?, ?, ?, ?, ?)", (mac, fix["type"], fix["os"], fix["label"],
                                                              fix["corrected"]))
            self.fixes[mac] = {**fix, "mac": mac}
        self.ctx.state.execute("INSERT OR REPLACE INTO device_joins (mac, was, joined) VALUES (?, ?, ?)",
                               (mac, as_mac, self.ctx.now()))
        self.ctx.devices.permit(mac)
        # what other components keep per device (website rules, priority, schedules, ...)
        # moves too, before the old address is forgotten (Component.carry_device)
        carried = self.ctx.carry_device(as_mac, mac)
        self.ctx.devices.forget(as_mac)
        self.ctx.count("identify.joins")
        self._tell(mac)
        return {**self.identity(mac), "carried": carried}

    # -- each device's story (story.py) ----------------------------------------------------
    def _on_timezone(self, topic: str, ev) -> None:
        self.tz = zone(ev.zone)

    def device_story(self, mac: str, format: str = "json"):
        """`device-story`: the device's story (format "json"), or its CSV download ("csv":
        {"filename", "csv"}). The facts are read here; the words are made off the loop."""
        if format not in ("json", "csv"):
            raise CommandError(f"format must be json or csv, not {str(format)[:20]!r}", 400)
        facts = self.story_facts(self._known(mac))
        told = offload(story.assemble, facts)
        if format == "json":
            return told
        return {"filename": story.filename(facts.name), "csv": offload(story.csv_text, told, self.tz)}

    def story_facts(self, mac: str) -> story.Facts:
        state = self.ctx.state
        device = state.get_device(mac)
        assert device is not None
        view = self.view(mac) if mac in self.guesses or mac in self.fixes else {}
        was = [(r["was"], r["joined"]) for r in state.execute(
            "SELECT was, joined FROM device_joins WHERE mac=? ORDER BY joined", (mac,))]
        macs = [mac, *(w for w, _ in was)]
        marks = ",".join("?" * len(macs))
        decisions = [dict(r) for r in state.execute(
            f"SELECT at, state, was, by FROM device_decisions WHERE mac IN ({marks}) ORDER BY at DESC LIMIT ?",
            (*macs, story.HISTORY_MAX))][::-1]
        places = [(r["at"], r["place"]) for r in state.execute(
            f"SELECT at, place FROM device_places WHERE mac IN ({marks}) ORDER BY at DESC LIMIT ?",
            (*macs, story.HISTORY_MAX))][::-1]
        alerts = [dict(r) for r in state.execute(
            f"SELECT at, kind, title, detail FROM notifications WHERE mac IN ({marks}) AND kind LIKE 'alert-%' "
            "ORDER BY at DESC LIMIT ?",
            (*macs, story.ALERTS_MAX))][::-1]
        usage = (self.ctx.commands.call("usage-device-sums", mac=mac)
                 if "usage-device-sums" in self.ctx.commands.names() else None)
        names, note = self._names_today(mac)
        return story.Facts(mac=mac, name=wording.name_of(state, mac), state=device.state, first_seen=device.first_seen,
                           hostname=device.hostname, label=view.get("label", ""), was=was, decisions=decisions,
                           places=places, alerts=alerts, names_today=names, names_note=note, usage=usage,
                           now=self.ctx.now())

    def _names_today(self, mac: str) -> tuple[list[tuple[str, int]] | None, str]:
        """The names the device looked up most since local midnight (hwdb's DnsQueries, as
        far back as its ring holds), or None and why not."""
        cfg = self.ctx.config
        if not cfg.hwdb_enabled:
            return None, "the query log is off ([hwdb] enabled = false)"
        try:
            import hwdb_client
        except ImportError:
            return None, "the query log is not available (no hwdb client)"
        if self._hwdb is None:
            self._hwdb = hwdb_client.Client(cfg.hwdb_host, cfg.hwdb_port, timeout=3.0)
        midnight, _ = day_window(self.ctx.now(), self.tz)
        try:
            rows = self._hwdb.query(f"select name, sum(count) from DnsQueries [since @{int(midnight * 1e9):016x}@] "
                                    f"where mac = {hwdb_client.quote(mac)} group by name "
                                    f"order by sum(count) desc limit {story.NAMES_TOP + 1}").rows
        except Exception as exc:        # a slow or stopped hwdb: the rest of the story still told
            return None, f"the query log did not answer ({getattr(exc, 'message', exc)})"
        return [(r["name"], int(r["sum(count)"] or 0)) for r in rows], ""

    # -- commands --------------------------------------------------------------------------
    def identity(self, mac: str) -> dict:
        """`identity`: what the device is, why, and everything it said about itself."""
        mac = self._known(mac)
        self._read_now(mac)
        return {"mac": mac, **self.view(mac), "evidence": dict(self.evidence.get(mac, {}))}

    def correct(self, mac: str, type: str = "", os: str = "", label: str = "") -> dict:
        """`identify-correct`: the household says what the device is; kept until cleared or
        the device is forgotten."""
        mac = self._known(mac)
        try:
            type_, os_, label_ = correction.check(type, os, label)
        except ValueError as exc:
            raise CommandError(str(exc), 400) from None
        row = {"mac": mac, "type": type_, "os": os_, "label": label_, "corrected": self.ctx.now()}
        self.ctx.state.execute("INSERT OR REPLACE INTO device_identity (mac, type, os, label, corrected) "
                               "VALUES (:mac, :type, :os, :label, :corrected)", row)
        self.fixes[mac] = row
        self.ctx.count("identify.corrections")
        self._tell(mac)
        return self.identity(mac)

    def clear(self, mac: str) -> dict:
        """`identify-clear`: back to the router's guess."""
        mac = self._known(mac)
        self.ctx.state.execute("DELETE FROM device_identity WHERE mac=?", (mac,))
        self.fixes.pop(mac, None)
        self._tell(mac)
        return self.identity(mac)

    def _read_now(self, *macs: str) -> None:
        """A command asking about devices is never behind what they said: their waiting
        messages are read and they are classified now (the others wait for the timer)."""
        for mac in macs:
            for _mac, _source, evidence in self.inbox.read_device(mac):
                self.add(mac, evidence)
        if self._dirty.intersection(macs):
            self.settle()

    def catalog(self) -> dict:
        """`identify-catalog`: the rules' count and their sources."""
        return {"rules": len(self.rules), "sources": dict(self.sources)}

    def _known(self, mac: str) -> str:
        try:
            mac = normalize(mac)
        except BadMac as exc:
            raise CommandError(str(exc), 400) from None
        if self.ctx.state.get_device(mac) is None:
            raise CommandError(f"no device {mac} is known to the router", 404)
        return mac
