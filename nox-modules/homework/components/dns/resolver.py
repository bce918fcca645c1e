"""The household's resolver settings, and unbound kept in line with them.

Settings (state.db's dns_options, so a backup carries them):
  - dnssec: "on" | "off"      validation (the config file's [dns] dnssec until set);
  - dnssec_insecure: JSON     domains whose validation is off (negative trust anchors,
                              RFC 7646), for a domain whose signatures are broken;
  - upstream: JSON            where the resolver asks: the WAN lease's resolvers in plain
                              DNS (the default), or resolvers over TLS, with the fallback
                              the household chose for when none of those can be reached
                              (upstreams.py).

What the resolver does also follows two looks the controller takes (probe.py, every
PROBE_SECONDS and after every change): can the encrypted upstreams be reached (if none
can and the household chose the plain fallback, the WAN lease's resolvers are used until
one can), and do the upstreams pass DNSSEC signatures on (if they strip them, every
answer would fail validation: validation pauses, with a message saying so, until they do;
an encrypted upstream of the household's choice cannot be stripped on the way).

Every change is written to household.conf (homework/unbound.py), so unbound starts with it, and
applied to the running unbound over its control socket without losing its cache (a
negative trust anchor: insecure_add plus flushing that zone; validation: the
val-permissive-mode option). A change made while unbound is down is kept and used when it
starts.

Two halves, for the controller's event loop: a setting is checked, stored and decided on
the loop (`set_dnssec`, `add_insecure`, ...: state.db, no blocking), which returns a
Change; `apply(change)` writes the file and talks to unbound's control socket, a blocking
call the dns component runs off the loop (`offload`). After each change the component has
homework-dnsd drop its cached answers, which the old setting made.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from collections.abc import Callable

from ... import rowcheck
from ...worker import os_lock
from ... import unbound
from .names import normalize_domain
from .options import DnsOptions
from .probe import Reach
from .upstreams import KEY_UPSTREAM, Upstream, UpstreamError, parse_upstream

log = logging.getLogger("homework.dns.resolver")

KEY_DNSSEC = "dnssec"
KEY_INSECURE = "dnssec_insecure"
MAX_INSECURE = 200
# unbound remembers an upstream that failed (its infrastructure cache: timeouts, a TLS
# handshake refused) across a reload and waits out its back-off before asking it again:
# a household that mends a mistyped name, or an upstream that answers again, would see
# names fail for up to 15 minutes more. So a new choice, or a recovery the controller's
# own look saw, forgets those failures.
FORGET_FAILURES = "flush_infra all"


class SettingError(ValueError):
    pass


# -- one validator per value (commands, API, CLI and a restored backup alike) ---------------
def parse_dnssec(value) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("on", "off"):
        return value == "on"
    raise SettingError(f"DNSSEC validation is on or off, not {value!r}")


def insecure_domain(value) -> str:
    try:
        return normalize_domain(value)
    except ValueError as exc:
        raise SettingError(str(exc)) from None


def parse_insecure(text) -> tuple[str, ...]:
    """The stored list (JSON): every entry a domain name, at most MAX_INSECURE."""
    try:
        items = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        raise SettingError("the domains without validation must be a JSON list of names") from None
    if not isinstance(items, list) or len(items) > MAX_INSECURE:
        raise SettingError(f"the domains without validation must be a list of at most {MAX_INSECURE} names")
    return tuple(sorted({insecure_domain(d) for d in items}))


def _check_upstream(text):
    try:
        return parse_upstream(text)
    except UpstreamError as exc:
        raise SettingError(str(exc)) from None


def _safe_search(value) -> None:
    if value not in ("on", "off"):
        raise SettingError(f"safe_search is on or off, not {value!r}")


# dns_options' keys and their validators (safe_search: the blocklists component's switch)
OPTION_CHECKS: dict[str, Callable] = {KEY_DNSSEC: parse_dnssec, KEY_INSECURE: parse_insecure,
                                      KEY_UPSTREAM: _check_upstream, "safe_search": _safe_search}


def option_row(r: dict) -> None:
    """A dns_options row of a backup being restored: the same validator as the API's; a key
    nobody sets is refused."""
    rowcheck.option(r)
    check = OPTION_CHECKS.get(r["key"])
    if check is None:
        raise ValueError(f"unknown DNS option {r['key']!r}")
    check(r["value"])


@dataclass(frozen=True)
class Change:
    """What applying a decision takes: household.conf's new text, then these control
    commands (or a reload, when only a restart of the resolver's configuration will do)."""
    household: str
    commands: tuple[str, ...] = ()


class Resolver:
    def __init__(self, config, state, control: Callable[[str, str], str] = unbound.control):
        self.config = config
        self.options = DnsOptions(state)
        self._control = control
        self._apply_lock = os_lock()
        self.dnssec = bool(config.dns_dnssec)
        self.insecure: tuple[str, ...] = ()
        self.upstream = Upstream()
        self.isp: tuple[str, ...] = ()
        self.running = False          # did unbound answer the last command?
        self.last_error = ""
        # what the last looks found (probe.py)
        self.reach: tuple[Reach, ...] = ()
        self.checked = 0.0            # when (epoch); 0: not yet since the last change
        self.fallen_back = False      # no encrypted upstream answers: the fallback applies
        self.stripped = False         # the upstreams strip DNSSEC signatures: validation paused

    # -- on the loop: settings ------------------------------------------------------------
    def load(self) -> Change:
        """The stored settings (at start, after a restore too); the change makes unbound
        use them, reloading it only if its file changes."""
        stored = self.options.get(KEY_DNSSEC)
        try:
            if stored is not None:
                self.dnssec = parse_dnssec(stored)
            self.insecure = parse_insecure(self.options.get(KEY_INSECURE) or "[]")
            stored = self.options.get(KEY_UPSTREAM)
            if stored is not None:
                self.upstream = parse_upstream(stored)
        except (SettingError, UpstreamError) as exc:      # a hand-edited database: keep the defaults, say why
            log.error("stored resolver settings ignored: %s", exc)
        self.isp = unbound.resolv_servers(self.config.dns_resolv_file)
        return Change(self._household(), ("reload-if-changed",))

    @property
    def validating(self) -> bool:
        return self.dnssec and not self.stripped

    @property
    def plain(self) -> bool:
        """Is the resolver asking the WAN lease's resolvers in plain DNS now?"""
        return not self.upstream.encrypted or (self.fallen_back and self.upstream.fallback == "plain")

    def plan(self) -> unbound.Plan:
        if self.plain:
            forwards = tuple(unbound.Forward(s) for s in self.isp) or unbound.default_plan(self.config).forwards
            tls = False
        else:
            forwards = tuple(unbound.Forward(s.address, s.port, s.name) for s in self.upstream.tls_servers())
            tls = True
        notes = (f"upstream: {self.upstream.label()}",) + (
            ("the plain fallback: no encrypted upstream answers",) if self.plain and self.upstream.encrypted else ())
        return unbound.Plan(forwards=forwards, tls=tls, validate=self.validating, insecure=self.insecure,
                            notes=notes)

    def _household(self) -> str:
        return unbound.household_conf(self.plan())

    def view(self) -> dict:
        """DNSSEC: the household's setting, and what the resolver does."""
        out = {"enabled": self.dnssec, "validating": self.validating, "insecure": list(self.insecure),
               "validator": "unbound", "running": self.running}
        if self.dnssec and self.stripped:
            asked = self.upstream.label() if not self.plain else "your internet provider's"
            out["message"] = ("DNSSEC validation is paused: the resolvers this router asks now ("
                              f"{asked})"
                              " do not pass DNSSEC signatures on, so every answer would fail. Choose an encrypted "
                              "resolver to have it back.")
        if self.last_error:
            out["error"] = self.last_error
        return out

    def upstream_view(self) -> dict:
        """Where names are looked up, and whether that works: the settings page's status."""
        up = self.upstream
        out = {**up.as_dict(), "label": up.label(), "plain": self.plain, "running": self.running,
               "checked": self.checked, "servers_status": [r.as_dict() for r in self.reach]}
        if not up.encrypted:
            out["state"] = "plain"
            out["message"] = ("Names are looked up at your internet provider's resolvers in plain DNS" +
                              (", as you chose." if up.chosen else ", which anyone on the way can read or "
                               "change. Choose an encrypted resolver to change that."))
        elif not self.checked:
            out["state"], out["message"] = "checking", f"Checking {up.label()} ..."
        elif not self.fallen_back:
            reachable = sum(r.ok for r in self.reach)
            out["state"] = "encrypted"
            out["message"] = (f"Names are looked up at {up.label()}: nobody on the way can read or change "
                              f"them ({reachable} of {len(self.reach)} resolvers answering).")
        else:
            reasons = "; ".join(f"{r.server} {r.why}" for r in self.reach if not r.ok)
            if up.fallback == "plain":
                out["state"] = "fallback"
                out["message"] = (f"{up.label()} cannot be reached ({reasons}). Names are looked up at your "
                                  "internet provider's resolvers in plain DNS until it can, as you chose.")
            else:
                out["state"] = "unreachable"
                out["message"] = (f"{up.label()} cannot be reached ({reasons}). Names do not resolve until "
                                  "it can: you chose no unencrypted fallback.")
        if self.last_error:
            out["error"] = self.last_error
        return out

    def set_dnssec(self, enabled) -> Change:
        enabled = parse_dnssec(enabled)
        self.options.set(KEY_DNSSEC, "on" if enabled else "off")
        self.dnssec = enabled
        log.info("DNSSEC validation %s", "on" if enabled else "off")
        # permissive mode still checks, but hands bogus answers out; the cached bogus
        # answers are dropped either way (they were kept as SERVFAILs)
        return Change(self._household(), (f"set_option val-permissive-mode: {'no' if enabled else 'yes'}",
                                          "flush_bogus"))

    def add_insecure(self, domain) -> Change:
        name = insecure_domain(domain)
        if name not in self.insecure:
            if len(self.insecure) >= MAX_INSECURE:
                raise SettingError(f"at most {MAX_INSECURE} domains may go without validation")
            self.insecure = tuple(sorted((*self.insecure, name)))
            self.options.set(KEY_INSECURE, json.dumps(list(self.insecure)))
        log.info("DNSSEC validation off for %s", name)
        return Change(self._household(), (f"insecure_add {name}", f"flush_zone {name}", "flush_bogus"))

    def remove_insecure(self, domain) -> Change:
        name = insecure_domain(domain)
        if name not in self.insecure:
            raise SettingError(f"{name} is not among the domains without validation")
        self.insecure = tuple(d for d in self.insecure if d != name)
        self.options.set(KEY_INSECURE, json.dumps(list(self.insecure)))
        log.info("DNSSEC validation on again for %s", name)
        return Change(self._household(), (f"insecure_remove {name}", f"flush_zone {name}"))

    def set_upstream(self, value) -> Change:
        """The household picked where names are looked up."""
        try:
            upstream = parse_upstream(value)
        except UpstreamError as exc:
            raise SettingError(str(exc)) from None
        self.options.set(KEY_UPSTREAM, upstream.stored())
        self.upstream = upstream
        self.fallen_back, self.reach, self.checked = False, (), 0.0
        log.info("resolver upstream: %s (fallback %s)", upstream.label(), upstream.fallback)
        return Change(self._household(), ("reload-if-changed", FORGET_FAILURES))

    def observe(self, reach: tuple[Reach, ...] | None, signed: bool | None, now: float) -> Change | None:
        """What the looks found (probe.py): reach is None when the upstream is not
        encrypted (nothing to reach over TLS); signed is None when nothing answered."""
        before = self._household()
        recovered = False
        if reach is not None and self.upstream.encrypted:
            self.reach, self.checked = reach, now
            down = not any(r.ok for r in reach)
            if down != self.fallen_back:
                log.warning("encrypted upstream %s: %s", self.upstream.label(),
                            f"none answers; the fallback ({self.upstream.fallback}) applies" if down
                            else "answering again")
            recovered = self.fallen_back and not down
            self.fallen_back = down
        elif not self.upstream.encrypted:
            self.reach, self.checked, self.fallen_back = (), now, False
        if not self.plain:
            # an encrypted upstream the household chose is trusted to pass signatures on:
            # only the plain path can have them stripped on the way
            signed = True
        if signed is not None and signed == self.stripped:
            self.stripped = not signed
            log.warning("DNSSEC: the upstreams %s", "strip signatures: validation paused" if self.stripped
                        else "pass signatures on: validating")
        after = self._household()
        if recovered:        # answering again: unbound is to try it now, not after its back-off
            return Change(after, ("reload-if-changed", FORGET_FAILURES))
        return None if after == before else Change(after, ("reload-if-changed",))

    def wan_resolvers(self, servers: tuple[str, ...]) -> Change | None:
        """The WAN lease named other resolvers: forward to those (a reload)."""
        if servers == self.isp:
            return None if self.running else Change(self._household(), ("status",))
        self.isp = servers
        log.info("resolver: the WAN lease's resolvers are now %s", ", ".join(servers) or "none")
        return Change(self._household(), ("reload-if-changed",))

    # -- off the loop: unbound --------------------------------------------------------------
    def apply(self, change: Change) -> bool:
        """Write household.conf and run the commands; "reload-if-changed" reloads unbound
        only when the file changed (else just checks it is there). True when unbound's
        answers may have changed. Runs in an OS thread (offload): it logs nothing and takes
        only a real lock, since the loop's logging and locks are green ones; the caller
        says what happened (`running`, `last_error`)."""
        with self._apply_lock:
            changed = unbound.write_main(self.config)        # gone with a wiped state dir? written again
            changed = self._write(change.household) or changed
            commands = [("reload" if changed else "status") if c == "reload-if-changed" else c
                        for c in change.commands]
            try:
                for command in commands:
                    self._control(self.config.dns_resolver_control, command)
            except unbound.ControlError as exc:
                self.running, self.last_error = False, str(exc)
                return changed
            self.running, self.last_error = True, ""
            return changed or any(c != "status" for c in commands)

    def _write(self, text: str) -> bool:
        path = unbound.resolver_dir(self.config) / "household.conf"
        try:
            if path.read_text() == text:
                return False
        except OSError:
            pass
        unbound.write_household_text(self.config, text)
        return True
