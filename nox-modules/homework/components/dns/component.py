"""DNS component: owns the DNS policy and everything around the query path.

The query path itself is homework-dnsd (Rust, dnsd/): OVS sends every device's port-53
traffic, to any address, to the router's stack (priority 50000), nftables hands it to
dnsd, dnsd answers from the policy this component pushes and forwards allowed queries to
the upstream resolvers (dnsmasq for the household's own names and as the fallback). No
query goes through Python; this component

  - stores the rules (SQLite) and serves the commands (CLI, ws.v1 API);
  - tells dnsd which address is which device, its state and mode, and every rule change;
  - turns dnsd's events into `dns_query` / `dns_answer` bus events;
  - runs the reverse check (drop flows at priority 40000 to addresses of blocked names);
  - blocks DNS-over-TLS/QUIC (853) for restricted devices;
  - keeps cut-off devices' web traffic (pending, denied, paused, at bedtime, over their
    allowance: cutoff.py) on the router's page saying why, and their DNS on the router;
  - keeps the validating resolver (unbound, resolver.py) in line with the household's
    settings: DNSSEC on or off, the domains whose validation is off.
"""
from __future__ import annotations

import threading
import time

from ...component import Component
from ...events import DnsAnswer, DnsQuery
from ...flows import ETH_IP, ETH_IPV6, LOCAL, PROTO_TCP, PROTO_UDP, Datapath, FlowDelete, FlowMod, Output
from ...leases import Lease
from ...macaddr import normalize
from ...worker import offload
from ...pipeline import (COOKIE_DNS, COOKIE_DNS_DOT as COOKIE_DOT, COOKIE_DNS_ENCRYPTED, COOKIE_DNS_INTERCEPT as
                         COOKIE_INTERCEPT, COOKIE_MASK_ALL, COOKIE_MASK_OWNER, PRIO_DNS_ENCRYPTED,
                         PRIO_DNS_INTERCEPT as PRIO_INTERCEPT)
from ...interfaces import DnsdReady, DnsLists
from .dnsd_link import DnsdLink
from .lists import DnsListsOffer
from .names import normalize_domain
from .netfilter import DnsNet
from .policy import HOUSEHOLD, MODES, Policy, owner_of
from ... import unbound
from . import probe
from .resolver import Resolver
from .reverse import ReverseCheck
from ..usage.periods import zone

EXPIRE_SECONDS = 60
RESOLV_CHECK_SECONDS = 2     # how soon the resolver follows a WAN lease's new resolvers
PROBE_SECONDS = 30           # how often the upstreams are looked at (reachable over TLS? signatures?)
NFT_SETTLE_SECONDS = 10      # a command waits this long at most for its captive-set change (nft's own timeout)
# dnsd's events come in reads of up to 64 KiB (~1,000 lines); under eventlet a read that
# finds data never yields, so the handler yields itself every EVENT_SLICE lines or a burst
# of new names would hold DHCP, the control socket and the API until it ends.
EVENT_SLICE = 200
CAPTIVE_STATES = ("pending", "denied", "cutoff")     # dnsd answers them with the router, the page says why


def _captive_key(key: str) -> str:
    """A device key (its IPv4 address, or its /64's first address) as a captive set member:
    the key itself (captive6's rules mask a source address to its /64, netfilter.py)."""
    return key


def dot_matches(mac: str) -> list[dict]:
    """DNS-over-TLS (tcp/853) and DNS-over-QUIC (udp/853), both families."""
    return [{"eth_src": mac, "eth_type": eth, "ip_proto": proto, port: 853}
            for eth in (ETH_IP, ETH_IPV6)
            for proto, port in ((PROTO_TCP, "tcp_dst"), (PROTO_UDP, "udp_dst"))]


def router_dot_matches(pool, site=None) -> list[dict]:
    """DNS over TLS to any of the router's gateway addresses: the .1 of every /30 of the
    pool (one masked match: the pool's bits and the last two), and the ::1 of every /64
    of the IPv6 site prefix (its bits and the whole interface identifier)."""
    import ipaddress
    matches = [{"eth_type": ETH_IP, "ip_proto": PROTO_TCP, "tcp_dst": 853,
                "ipv4_dst": (str(pool.network_address + 1), str(ipaddress.IPv4Address(int(pool.netmask) | 3)))}]
    if site is not None:
        mask = int(site.netmask) | ((1 << 64) - 1)
        matches.append({"eth_type": ETH_IPV6, "ip_proto": PROTO_TCP, "tcp_dst": 853,
                        "ipv6_dst": (str(site.network_address + 1), str(ipaddress.IPv6Address(mask)))})
    return matches


# Always shown by dns-stats, also while still 0.
DNS_COUNTERS = ("queries", "answers", "learned", "nft_batches", "nft_failures")


class DnsComponent(Component):
    name = "dns"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._lock = threading.RLock()
        self.policy = Policy(ctx.state, ctx.now, zone(ctx.config.timezone))
        self.reverse = ReverseCheck(ctx.state, ctx.now)
        self.states: dict[str, str] = {}          # mac -> device state
        self.device_lines: dict[str, str] = {}    # ip -> the `device` line dnsd has
        self.captive_ips: set[str] = set()
        self.dot_blocked: set[str] = set()
        config = ctx.config
        dot = config.dns_dot_listen if config.dns_tls_cert else ""
        self.net = (DnsNet(config.bridge, config.dns_listen, ctx.count,
                           listen6=config.dns_listen6 if config.ipv6_enabled else "", dot=dot,
                           dot6=config.dns_dot_listen6 if dot and config.ipv6_enabled else "")
                    if config.dns_intercept else None)
        self.link = DnsdLink(config.dns_control, self._snapshot, self._on_events) if config.dns_control else None
        self.resolver = Resolver(config, ctx.state) if config.dns_resolver else None
        # other components' dnsd lines (blocklists, safe-search), resent on reconnect
        self.snapshot_sources: list = []

    def offer(self, interface: type) -> object:
        if interface is DnsLists:
            return DnsListsOffer(self)
        if interface is DnsdReady:
            return self
        return super().offer(interface)

    def ready(self) -> bool:
        """DnsdReady: homework-dnsd has the policy (connected), or none is used."""
        return self.link is None or self.link.connected.is_set()

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        for device in self.ctx.state.devices():
            self.states[device.mac] = device.state
        self.ctx.bus.subscribe("device", self._on_device)
        self.ctx.health["dnsd"] = lambda: self.link is not None and self.link.connected.is_set()
        self.ctx.bus.subscribe("lease", self._on_lease)
        self.ctx.bus.subscribe("cutoff", self._on_cutoff)
        self.ctx.bus.subscribe("ipv6_plan", self._on_ipv6_plan)
        self._register_commands()
        self.ctx.commands.settlers.append(self.settle)
        if self.net is not None:
            self.net.setup()
        for lease in self.ctx.leases.active():
            self._sync_device(lease.mac, push=False)
        if self.link is not None:
            self.link.start()
        for mac in list(self.states):
            self.reverse.sync(mac, self.policy)
        self.ctx.every(EXPIRE_SECONDS, self._expire)
        if self.resolver is not None:
            self._resolver_apply(self.resolver.load())
            self.ctx.health["resolver"] = lambda: self.resolver is not None and self.resolver.running
            self.ctx.every(RESOLV_CHECK_SECONDS, self._check_upstreams)
            self.ctx.every(PROBE_SECONDS, self._probe)
            self._probe_soon()
        # scheduled rules come and go with their windows; dns-strict windows
        self.ctx.every(self.ctx.config.schedules_check_interval, self._refresh_schedules)
        self.ctx.bus.subscribe("schedule_strict", self._on_strict)
        self.ctx.bus.subscribe("timezone", self._on_timezone)

    def stop(self) -> None:
        if self.link is not None:
            self.link.stop()

    def datapath_up(self, dp: Datapath) -> list:
        decisions: list = [FlowDelete(cookie=COOKIE_DNS, cookie_mask=COOKIE_MASK_OWNER)]
        for eth in (ETH_IP, ETH_IPV6):
            decisions += [
                FlowMod(match={"eth_type": eth, "ip_proto": PROTO_UDP, "udp_dst": 53}, actions=(Output(LOCAL),),
                        priority=PRIO_INTERCEPT, cookie=COOKIE_INTERCEPT),
                FlowMod(match={"eth_type": eth, "ip_proto": PROTO_TCP, "tcp_dst": 53}, actions=(Output(LOCAL),),
                        priority=PRIO_INTERCEPT, cookie=COOKIE_INTERCEPT),
            ]
        decisions += self._router_dot_flows()
        with self._lock:
            self.dot_blocked = set()
            decisions += self._sync_dot()
            decisions += self.reverse.all_flows()
        return decisions

    def _router_dot_flows(self) -> list:
        """The router's own DNS over TLS, for every device: above the drops of a restricted
        device's DNS over TLS to elsewhere (nftables hands it to dnsd). Redone when the
        IPv6 site prefix changes."""
        config = self.ctx.config
        if not (config.dns_dot_listen and config.dns_tls_cert):
            return []
        site = self.ctx.ipv6.site if self.ctx.ipv6 is not None else None
        return [FlowDelete(cookie=COOKIE_DNS_ENCRYPTED, cookie_mask=COOKIE_MASK_ALL)] + [
            FlowMod(match=m, actions=(Output(LOCAL),), priority=PRIO_DNS_ENCRYPTED, cookie=COOKIE_DNS_ENCRYPTED)
            for m in router_dot_matches(config.pool, site)]

    # -- devices and leases ----------------------------------------------------------------
    def _prefix(self, lease: Lease):
        return self.ctx.ipv6.device_prefix(lease.index) if self.ctx.ipv6 is not None and lease.local else None

    def _device_keys(self, lease: Lease) -> list[str]:
        """Where dnsd files the device: its IPv4 address, and its IPv6 /64 (IPv6 on)."""
        prefix = self._prefix(lease)
        return [lease.ip] + ([str(prefix.network_address)] if prefix is not None else [])

    def _dnsd_state(self, mac: str) -> str:
        """The state dnsd answers by: the household's decision, or "cutoff" for a permitted
        device that is paused, at bedtime or over its allowance (cutoff.py)."""
        state = self.states.get(mac, "pending")
        if state == "permitted" and self.ctx.cutoffs.of(mac) is not None:
            return "cutoff"
        return state

    def _device_line(self, lease: Lease, key: str, state: str) -> str:
        """dnsd's line for one of the device's keys; with IPv6, its router address in its
        /64 too (where a cut-off device's AAAA answers point)."""
        line = f"device {key} {lease.mac} {state} {self.policy.mode(lease.mac)} {lease.router}"
        router6 = self.ctx.ipv6.router_address(lease.index) if self.ctx.ipv6 is not None and lease.local else None
        return f"{line} {router6}" if router6 is not None else line

    def _sync_device(self, mac: str, push: bool = True, wait: bool = True) -> None:
        """Bring dnsd's device table and the captive sets in line for one device."""
        lease = self.ctx.leases.get(mac)
        lines = []
        with self._lock:
            if lease and lease.active:
                state = self._dnsd_state(mac)
                for key in self._device_keys(lease):
                    line = self._device_line(lease, key, state)
                    if self.device_lines.get(key) != line:
                        self.device_lines[key] = line
                        lines.append(line)
                    self._set_captive(_captive_key(key), state in CAPTIVE_STATES)
            elif lease:
                for key in self._device_keys(lease):
                    if self.device_lines.pop(key, None) is not None:
                        lines.append(f"nodevice {key}")
                    self._set_captive(_captive_key(key), False)
        if push:
            self._push(lines, wait)

    def _on_ipv6_plan(self, topic: str, ev) -> None:
        """Renumbered: dnsd forgets the old /64s and learns the new ones."""
        old_keys = [k for k in self.device_lines if ":" in k]
        with self._lock:
            for key in old_keys:
                self.device_lines.pop(key, None)
                self._set_captive(_captive_key(key), False)
        self._push([f"nodevice {key}" for key in old_keys], wait=False)
        for lease in self.ctx.leases.active():
            self._sync_device(lease.mac, wait=False)
        self.ctx.send(self._router_dot_flows())

    def _set_captive(self, ip: str, on: bool) -> None:
        if on == (ip in self.captive_ips):
            return
        (self.captive_ips.add if on else self.captive_ips.discard)(ip)
        if self.net is not None:
            self.net.captive(ip, on)

    def _on_device(self, topic: str, ev) -> None:
        """A device seen or decided on: dnsd hears of it without this handler waiting (a
        new device's comes from DHCP's path, where a round trip each held a crowd's leases
        back); a command waits for dnsd once, when it is done (settle)."""
        mac = ev.mac
        if self.states.get(mac) == ev.state and ev.reason != "seen":
            return
        if ev.state is None:          # forgotten: DHCP has already ended its lease
            self.states.pop(mac, None)
            return
        self.states[mac] = ev.state
        self._sync_device(mac, wait=False)
        with self._lock:
            self.ctx.send(self._sync_dot(only=mac))

    def settle(self) -> None:
        """After a command: every change it made applies to dnsd's next query and to the
        device's next connection (a device just let in no longer meets the captive page)."""
        if self.link is not None and not self.link.settle():
            self.log.warning("homework-dnsd did not confirm the change; it will get it on reconnect")
        if self.net is not None and not self.net.flush(timeout=NFT_SETTLE_SECONDS):
            self.log.warning("the captive sets were not updated within %d s; they will be shortly",
                             NFT_SETTLE_SECONDS)

    def _on_cutoff(self, topic: str, ev) -> None:
        """A permitted device was paused, reached bedtime or its allowance, or came back."""
        self._sync_device(ev.mac, wait=False)

    def _on_lease(self, topic: str, ev) -> None:
        # Runs inside the DHCP packet-in: tell dnsd about the device without waiting for
        # its confirmation (the device's first query comes after its ACK anyway).
        self.states.setdefault(ev.mac, ev.state or "pending")
        self._sync_device(ev.mac, wait=False)

    def _snapshot(self) -> list[str]:
        """Everything dnsd needs, for a fresh connection (after `reset`)."""
        with self._lock:
            lines = [f"blocked {self.ctx.config.dns_blocked_answer}"]
            lines += list(self.device_lines.values())
            for owner, table in self.policy.rules.items():
                lines += [f"rule {owner} {domain} {action}" for domain, action in table.items()]
        for source in self.snapshot_sources:
            lines += source()
        return lines

    def push_lines(self, lines: list[str], timeout: float = 30.0) -> bool:
        """For blocklists: send lines whose policy twin the caller has already set,
        then bring every device's flows in line. A list can take dnsd a second to read."""
        ok = self.link.push(lines, timeout=timeout) if self.link is not None else True
        with self._lock:
            decisions = self._sync_dot()
            for mac in list(self.states):
                decisions += self.reverse.sync(mac, self.policy)
        self.ctx.send(decisions)
        return ok

    def _push(self, lines: list[str], wait: bool = True) -> bool:
        if not lines or self.link is None:
            return True
        ok = self.link.push(lines, wait=wait)
        if not ok:
            self.log.warning("homework-dnsd did not confirm the change; it will get it on reconnect")
        return ok

    # -- events from dnsd ----------------------------------------------------------------
    def _on_events(self, lines: list[str]) -> None:
        for start in range(0, len(lines), EVENT_SLICE):
            self._handle_events(lines[start:start + EVENT_SLICE])
            time.sleep(0)      # monkey-patched: a yield to the event loop

    def _handle_events(self, lines: list[str]) -> None:
        publish = self.ctx.bus.publish
        learned = []
        for line in lines:
            parts = line.split(" ")
            if parts[0] == "q" and len(parts) in (6, 7):
                # dnsd merges identical queries of one batch (20 ms) into one line with a count
                _, mac, qtype, verdict, latency, name = parts[:6]
                count = int(parts[6]) if len(parts) == 7 and parts[6].isdigit() else 1
                self.ctx.count("dns.queries", count)
                publish(DnsQuery(mac=None if mac == "-" else mac, name=name,
                                 qtype=int(qtype) if qtype.isdigit() else 0, verdict=verdict,
                                 latency_us=int(latency) if latency.isdigit() else 0, count=count))
            elif parts[0] == "a" and len(parts) in (5, 6):
                self.ctx.count("dns.answers")
                _, mac, ttl, name, addrs = parts[:5]
                chain = parts[5] if len(parts) > 5 else "-"
                addresses = [a for a in addrs.split(",") if a]
                cnames = tuple(c for c in chain.split(",") if c and c != "-")
                learned.append((name, addresses, int(ttl) if ttl.isdigit() else 0, cnames))
                publish(DnsAnswer(mac=mac, name=name, addresses=addresses))
        if learned:
            self._learn(learned)

    def _learn(self, learned: list) -> None:
        """One batch of dnsd's answers: O(log n) per pair, one SQLite write, and drop flows
        re-evaluated only for the addresses whose chains changed."""
        with self._lock:
            for name, addresses, ttl, cnames in learned:
                if self.reverse.learn(name, addresses, ttl, cnames, flush=False):
                    self.ctx.count("dns.learned")
            self.reverse.flush()
            decisions = self._sync_touched()
        self.ctx.send(decisions)

    def _sync_touched(self) -> list:
        """Drop-flow changes for what learning or expiry changed (caller holds the lock)."""
        touched = self.reverse.take_touched()
        if not touched:
            return []
        macs = set(self.policy.restricted_macs(list(self.states))) | set(self.reverse.installed)
        return self.reverse.sync_touched(sorted(macs), self.policy, touched)

    def _expire(self) -> None:
        with self._lock:
            self.reverse.expire()
            decisions = self._sync_touched()
        self.ctx.send(decisions)

    # -- flows that follow the policy -------------------------------------------------------
    def _sync_dot(self, only: str | None = None) -> list:
        """DNS-over-TLS/QUIC drops for every restricted device, or for `only` this one when
        nothing but its state changed (caller holds the lock)."""
        def wanted(mac: str) -> bool:
            state = self.states.get(mac)
            return state is not None and state != "blacklisted" and self.policy.restricted(mac)
        if only is not None:
            want = (self.dot_blocked - {only}) | ({only} if wanted(only) else set())
        else:
            want = {mac for mac in self.states if wanted(mac)}
        decisions: list = []
        for mac in sorted(want - self.dot_blocked):
            decisions += [FlowMod(match=m, actions=(), priority=PRIO_INTERCEPT, cookie=COOKIE_DOT)
                          for m in dot_matches(mac)]
        for mac in sorted(self.dot_blocked - want):
            decisions += [FlowDelete(match=m, cookie=COOKIE_DOT, cookie_mask=COOKIE_MASK_OWNER, table_id=0,
                                     strict=True, priority=PRIO_INTERCEPT) for m in dot_matches(mac)]
        self.dot_blocked = want
        return decisions

    def _policy_changed(self, owner: str, lines: list[str]) -> None:
        """Push a change to dnsd, then bring the flows in line with it."""
        self._push(lines)
        with self._lock:
            macs = list(self.states) if owner == HOUSEHOLD else [owner]
            decisions = self._sync_dot()
            for mac in macs:
                decisions += self.reverse.sync(mac, self.policy)
        self.ctx.send(decisions)

    def _on_timezone(self, topic: str, ev) -> None:
        """Rule windows by the new zone from now."""
        with self._lock:
            self.policy.tz = zone(ev.zone)
        self._refresh_schedules()

    def _refresh_schedules(self) -> None:
        """Push the scheduled rules whose window opened or closed (dnsd gets rule/unrule)."""
        with self._lock:
            changed = self.policy.refresh()
        for owner in {owner for owner, _name, _action in changed}:
            self._policy_changed(owner, [f"rule {o} {n} {a}" if a else f"unrule {o} {n}"
                                         for o, n, a in changed if o == owner])

    def _on_strict(self, topic: str, ev) -> None:
        """A dns-strict window opened or closed: those devices' mode (dnsd's device line)."""
        for mac in sorted(self.policy.set_strict(ev.macs)):
            self._sync_device(mac, wait=False)
            self._policy_changed(mac, [])

    # -- commands (CLI and ws.v1 API) ------------------------------------------------------
    def _owner(self, mac) -> str:
        owner = owner_of(mac)
        if owner != HOUSEHOLD:
            self.ctx.devices.get(owner)   # UnknownDevice -> 404
        return owner

    def set_rules(self, mac, domains, action: str, schedule=None) -> dict:
        if isinstance(domains, str):
            domains = [d for d in domains.replace("\n", ",").split(",") if d.strip()]
        if not isinstance(domains, list) or not domains:
            raise ValueError("give at least one domain")
        if schedule is not None and not isinstance(schedule, str):
            raise ValueError("schedule must be text like 'sun-thu 21:30-07:00'")
        owner = self._owner(mac)
        with self._lock:
            rules = self.policy.set_rules(owner, domains, action, schedule)
        # a rule outside its window is not in force: dnsd must not have it (it may have had it)
        self._policy_changed(owner, [f"rule {owner} {r['domain']} {action}" if r["active"]
                                     else f"unrule {owner} {r['domain']}" for r in rules])
        out = {"owner": "household" if owner == HOUSEHOLD else owner, "action": action,
               "domains": [r["domain"] for r in rules]}
        if schedule:
            out.update(schedule=rules[0]["schedule"], active=rules[0]["active"])
        return out

    def remove_rule(self, mac, domain: str) -> dict:
        owner = self._owner(mac)
        with self._lock:
            found = self.policy.remove_rule(owner, domain)
        if not found:
            raise ValueError(f"no DNS rule for {domain!r} on {'the household' if owner == HOUSEHOLD else owner}")
        self._policy_changed(owner, [f"unrule {owner} {normalize_domain(domain)}"])
        return {"removed": normalize_domain(domain), "owner": "household" if owner == HOUSEHOLD else owner}

    def carry_device(self, old: str, new: str) -> list[str]:
        """A device let in as the device it was: its website rules and mode move to it."""
        carried = []
        rules = self.policy.list_rules(old)
        for r in rules:
            self.set_rules(new, [r["domain"]], r["action"], r["schedule"] or None)
            self.remove_rule(old, r["domain"])
        if rules:
            carried.append("website rules")
        mode = self.policy.modes.get(old)
        if mode:
            self.set_mode(new, mode)
            self.set_mode(old, "denylist")
            carried.append("its website mode")
        return carried

    def set_mode(self, mac: str, mode: str | None = None) -> dict:
        mac = normalize(mac)
        self.ctx.devices.get(mac)
        if mode is not None:
            if mode not in MODES:
                raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
            with self._lock:
                self.policy.set_mode(mac, mode)
            self._sync_device(mac, push=False)
            lease = self.ctx.leases.get(mac)
            lines = ([self.device_lines[k] for k in self._device_keys(lease) if k in self.device_lines]
                     if lease else [])
            self._policy_changed(mac, lines)
        return {"mac": mac, "mode": self.policy.mode(mac)}

    def rules_view(self, mac=None) -> dict:
        if mac is None:
            rules = self.policy.list_rules()
        else:
            rules = self.policy.list_rules(self._owner(mac))
        for r in rules:
            r["owner"] = "household" if r["owner"] == HOUSEHOLD else r["owner"]
        view = {"rules": rules}
        if mac is not None and owner_of(mac) != HOUSEHOLD:
            view["mode"] = self.policy.mode(owner_of(mac))
        else:
            view["modes"] = dict(self.policy.modes)
        return view

    def _register_commands(self) -> None:
        cmd = self.ctx.commands.register
        # schedule: when the rule counts, e.g. "sun-thu 21:30-07:00"; none = always
        cmd("permit-dns", lambda mac, domain, schedule=None: self.set_rules(mac, [domain], "allow", schedule))
        cmd("deny-dns", lambda mac, domain, schedule=None: self.set_rules(mac, [domain], "deny", schedule))
        cmd("household-permit-dns",
            lambda domain, schedule=None: self.set_rules(HOUSEHOLD, [domain], "allow", schedule))
        cmd("household-deny-dns", lambda domain, schedule=None: self.set_rules(HOUSEHOLD, [domain], "deny", schedule))
        cmd("import-dns-rules", lambda domains, mac=None, action="deny", schedule=None:
            self.set_rules(mac, domains, action, schedule))
        cmd("remove-dns-rule", lambda domain, mac=None: self.remove_rule(mac, domain))
        cmd("dns-rules", lambda mac=None: self.rules_view(mac))
        cmd("dns-mode", lambda mac, mode=None: self.set_mode(mac, mode))
        cmd("dns-learned", lambda name=None: self.learned_view(name))
        cmd("dnssec", lambda enabled=None: self._resolver_call("set_dnssec", enabled))   # None: just the view
        cmd("dnssec-insecure-add", lambda domain: self._resolver_call("add_insecure", domain))
        cmd("dnssec-insecure-remove", lambda domain: self._resolver_call("remove_insecure", domain))
        # provider isp|cloudflare|quad9|google|custom, servers (custom: ADDRESS#NAME, ...), fallback plain|none
        cmd("dns-upstream", self.set_upstream)
        cmd("dns-stats", lambda: {"controller": {**dict.fromkeys(DNS_COUNTERS, 0),
                                                 **self.ctx.counters.snapshot().get("dns", {})},
                                  "dnsd": self.link.stats() if self.link else {"connected": False},
                                  "drop_flows": {m: len(a) for m, a in self.reverse.installed.items()},
                                  "dot_blocked": sorted(self.dot_blocked)})

    def _resolver_call(self, method: str, *args) -> dict:
        """A resolver setting: decided and stored here, applied to unbound off the event
        loop (its control socket); then dnsd drops the cached answers the old one made."""
        if self.resolver is None:
            raise ValueError("there is no validating resolver ([dns] resolver is empty)")
        if args and args[0] is not None:
            self._resolver_apply(getattr(self.resolver, method)(*args))   # SettingError: a ValueError, a 400
        return self.resolver.view()

    def _resolver_apply(self, change) -> None:
        if change is None:
            return
        before = (self.resolver.running, self.resolver.last_error)
        changed = offload(self.resolver.apply, change)
        if (self.resolver.running, self.resolver.last_error) != before:
            if self.resolver.running:
                self.log.info("the resolver (unbound) answers on %s", self.ctx.config.dns_resolver_control)
            else:
                self.log.warning("%s; the settings are saved and used when it starts", self.resolver.last_error)
        if changed:
            self._push(["flushcache"])

    def _check_upstreams(self) -> None:
        if self.resolver is not None:
            before = self.resolver.isp
            self._resolver_apply(self.resolver.wan_resolvers(unbound.resolv_servers(self.ctx.config.dns_resolv_file)))
            if self.resolver.isp != before:
                self._probe_soon()    # do the new ones pass signatures on?

    def _probe(self) -> None:
        """Look at the upstreams off the loop (probe.py), then let the resolver follow."""
        r = self.resolver
        if r is None:
            return
        config = self.ctx.config
        servers = r.upstream.tls_servers() if r.upstream.encrypted else None
        plain = r.isp if r.plain else ()      # an encrypted upstream the household chose is not second-guessed

        def look():
            reach = None if servers is None else tuple(probe.tls_reach(s, config.dns_tls_ca_file) for s in servers)
            signed = probe.signatures_pass(plain, probe.anchor_zone(config.dns_trust_anchor)) if plain else None
            return reach, signed
        reach, signed = offload(look)
        self._resolver_apply(r.observe(reach, signed, self.ctx.now()))

    def set_upstream(self, **value) -> dict:
        if self.resolver is None:
            raise ValueError("there is no resolver to choose upstreams for ([dns] resolver is empty)")
        if value:
            self._resolver_apply(self.resolver.set_upstream(value))
            self._probe_soon()       # the status says within seconds whether the new choice works
        return self.resolver.upstream_view()

    def _probe_soon(self) -> None:
        # a thread of its own (a green one in the controller): the caller does not wait
        threading.Thread(target=self._probe, daemon=True, name="dns-probe").start()

    def learned_view(self, name=None) -> dict:
        with self._lock:
            if name:
                name = normalize_domain(name)
                return {name: sorted(self.reverse.addrs_of.get(name, ()))}
            return {n: sorted(a) for n, a in list(self.reverse.addrs_of.items())[:1000]}
