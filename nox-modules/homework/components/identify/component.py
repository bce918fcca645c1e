"""The identify component: gathers what each device says about itself (fingerprint events:
DHCP and DHCPv6 options, mDNS and SSDP announcements, the names it looks up in its first
minute), keeps it, classifies it against the catalog, and adds the guess to the device's
view (`identity`). The household's correction outranks the guess and is kept.

A guess never decides anything: nothing here permits, denies or names a device.

Cost: the DHCP path only publishes what it parsed anyway; here a device's evidence is
compared with what it said before and, when it is new, classified (a few dozen regular
expressions, microseconds) and queued for the state db (`defer`, written behind).
"""
from __future__ import annotations

import json

from ...commands import CommandError
from ...component import Component
from ...events import Identity
from ...macaddr import BadMac, normalize
from ...oui import default_table, is_private
from . import catalog, correction
from .classify import Guess, classify

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

    # -- start and stop --------------------------------------------------------------------
    def start(self) -> None:
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
        bus = self.ctx.bus
        bus.subscribe("fingerprint", self._on_fingerprint)
        bus.subscribe("device", self._on_device)
        bus.subscribe("dns_query", self._on_query)
        self.ctx.device_facts.append(self._facts)
        cmd = self.ctx.commands
        cmd.register("identity", self.identity)
        cmd.register("identify-correct", self.correct)
        cmd.register("identify-clear", self.clear)
        cmd.register("identify-catalog", self.catalog)

    # -- evidence in -----------------------------------------------------------------------
    def _on_fingerprint(self, topic: str, ev) -> None:
        self.add(ev.mac, ev.evidence)

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
        self.evidence[mac] = merged
        self.ctx.count("identify.evidence")
        self.ctx.state.defer("INSERT OR REPLACE INTO device_evidence (mac, evidence, updated) VALUES (?, ?, ?)",
                             (mac, json.dumps(merged, sort_keys=True), self.ctx.now()))
        self._classify(mac)

    def _classify(self, mac: str) -> None:
        before = self.guesses.get(mac)
        guess = classify(self.evidence.get(mac, {}), self.rules)
        self.ctx.count("identify.classified")
        self.guesses[mac] = guess
        if before is None or before.as_dict() != guess.as_dict():
            self._tell(mac)

    def _tell(self, mac: str) -> None:
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
            self.evidence.pop(ev.mac, None)
            self.guesses.pop(ev.mac, None)
            self.fixes.pop(ev.mac, None)
            self._first_seen.pop(ev.mac, None)
            self.ctx.state.defer("DELETE FROM device_evidence WHERE mac=?", (ev.mac,))
            self.ctx.state.defer("DELETE FROM device_identity WHERE mac=?", (ev.mac,))
        elif ev.reason == "seen" and ev.mac not in self._first_seen and ev.mac not in self.evidence:
            self._first_seen[ev.mac] = self.ctx.now()

    # -- views out -------------------------------------------------------------------------
    def view(self, mac: str) -> dict:
        """What the device is, as the board shows it: the guess, or the household's word."""
        guess = self.guesses.get(mac) or Guess()
        out = guess.as_dict()
        out["corrected"] = False
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
        if mac not in self.guesses and mac not in self.fixes:
            return {"identity": None}
        return {"identity": self.view(mac)}

    # -- commands --------------------------------------------------------------------------
    def identity(self, mac: str) -> dict:
        """`identity`: what the device is, why, and everything it said about itself."""
        mac = self._known(mac)
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
