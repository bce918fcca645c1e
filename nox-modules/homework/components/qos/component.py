"""Priorities and shaping: three classes per direction, fair among devices
inside each, set per device and per application, optionally only in a weekly window.

The router shapes just below the line's rates, so the queue builds here and not in the
modem: upload on the WAN interface, download on the LAN bridge's LOCAL port (packets from
the internet leave the router's stack there, after NAT, with the device's address).
nftables sets each packet's class (plan.py), so a new flow needs no controller round
trip. Every change (a rule, a class, a lease, a window opening or closing) rebuilds the
plan and applies it in the background within a second; `replace` everywhere and one
atomic nftables transaction mean running flows are not disturbed, only moved.

Every second the leaves' counters are read (stats.py): the `qos` bus events (hwdb's
QosRates), GET /ws.v1/qos/stats, and an alert when the high class drops packets (at
most one a minute).
"""
from __future__ import annotations

import threading

from ...commands import CommandError, seen_device
from ...component import Component
from ...conntrack import ConntrackReader
from ...ispedge_client import EdgeClient, EdgeEndpoint
from ...events import Alert, AlertKind, AppTuple, QosApp, QosAppRate, QosDevice, QosRate
from ...worker import BatchWorker
from ..usage.periods import zone
from . import apply as applying
from . import stats as counters
from .edge import EdgePlacer, device_lookup, wanted_placements
from .hostapps import HostApps, parse_app, parse_flows
from .plan import CLASSES, AppRule, Member, Side, build, nft_learned
from .rules import (MAX_APPS, matches, parse_bool, parse_class, parse_domains, parse_kbit, parse_name,
                    parse_ports, parse_share, parse_window, window_view)
from .store import DeviceRule, QosStore

LEARNED_SECONDS = 1800       # how long a learned address of an app's domain counts (refreshed by answers)
MAX_LEARNED = 4096           # addresses per app (a CDN answers with many; the oldest expire)
ALERT_EVERY = 60.0
RETRY_SECONDS = 10.0         # a plan that failed is tried again this often


class Qos(Component):
    name = "qos"

    def __init__(self, ctx):
        super().__init__(ctx)
        cfg = ctx.config
        self.tz = zone(cfg.timezone)
        self.store = QosStore(ctx.state)
        self.wan = cfg.qos_wan_interface or cfg.wanwatch_interface
        self.lan = cfg.qos_lan_interface or cfg.bridge
        self.shaper = applying.Shaper()
        self.leaf: str | None = None        # chosen at the first apply
        self.active = False
        self.leaves: dict = {}              # (direction, minor) -> (class, mac) of the plan in force
        self.learned: dict[int, dict[str, float]] = {}     # app id -> address -> expiry (epoch)
        self._open_sig: tuple | None = None
        self._sample: counters.Sample | None = None
        self._summary: dict = {"at": 0.0, "classes": [], "devices": []}
        self._high_drops: int | None = None
        self._alerted_at = -ALERT_EVERY
        self._lock = threading.RLock()
        self._worker = BatchWorker("qos-apply", self._apply_batch)
        self._started_clean = False
        self._attempted_at = 0.0
        self._applied_members: tuple = ()
        # The ISP's edge ([isp] edge): the same priorities placed past the router (edge.py)
        self.edge: EdgePlacer | None = None
        self._edge_error = ""
        self._edge_drops: int | None = None
        self._edge_alert: int = 0           # packets the edge's high queue dropped, to tell
        self._edge_alerted_at = -ALERT_EVERY
        self._edge_worker = BatchWorker("qos-edge", self._edge_round)
        self._conntrack = ConntrackReader()
        self.hostapps = HostApps(ctx.state)       # computers' agents and their applications' priorities
        if cfg.isp_edge:
            try:
                self.edge = EdgePlacer(EdgeClient(EdgeEndpoint(cfg.isp_edge, cfg.isp_ca, cfg.isp_cert, cfg.isp_key)),
                                       cfg.isp_edge)
            except (OSError, ValueError) as exc:      # a missing or unreadable certificate or key
                self._edge_error = f"the ISP edge is configured but its certificate cannot be used: {exc}"
                self.log.warning("%s", self._edge_error)

    # -- life cycle -----------------------------------------------------------------------------
    def start(self) -> None:
        cmd = self.ctx.commands.register
        cmd("qos", self.show)
        cmd("qos-link", self.set_link)
        cmd("qos-device", self.set_device)
        cmd("qos-app", self.set_app)
        cmd("qos-app-delete", self.delete_app)
        cmd("qos-stats", self.stats)
        cmd("qos-edge", self.edge_status)
        cmd("qos-agent-add", self.add_agent)
        cmd("qos-agent-remove", self.remove_agent)
        cmd("qos-agent-report", self.agent_report)
        cmd("qos-host-apps", self.host_apps)
        cmd("qos-host-app", self.set_host_app)
        for topic in ("lease", "ipv6_plan"):
            self.ctx.bus.subscribe(topic, self._on_change)
        self.ctx.bus.subscribe("dns_answer", self._on_dns_answer)
        self.ctx.device_facts.append(self._facts)
        self.ctx.every(1, self.tick)
        self.reapply()

    def stop(self) -> None:
        self._worker.flush()
        with self._lock:
            if self._started_clean:
                self.shaper.remove([self.wan, self.lan])

    # -- what holds now -------------------------------------------------------------------------
    def link(self) -> dict:
        cfg = self.ctx.config
        out = {"enabled": cfg.qos_enabled, "down_kbit": cfg.qos_down_kbit, "up_kbit": cfg.qos_up_kbit,
               "high_share": cfg.qos_high_share}
        out.update(self.store.link())       # set at run time: wins over the file
        return out

    def _open(self, window) -> bool:
        return window is None or window.is_open(self.ctx.now(), self.tz)

    def device_classes(self) -> dict[str, str]:
        return {mac: r.cls for mac, r in self.store.devices.items() if self._open(r.window)}

    def open_apps(self) -> list:
        return [a for a in self.store.apps.values() if self._open(a.window)]

    def _signature(self) -> tuple:
        return (tuple(sorted(self.device_classes().items())), tuple(a.id for a in self.open_apps()))

    def members(self) -> list[Member]:
        out = []
        for lease in self.ctx.leases.active():
            if not lease.network:
                continue
            prefix6 = self.ctx.ipv6.device_prefix(lease.index) if self.ctx.ipv6 is not None else None
            out.append(Member(lease.mac, lease.index, lease.network, str(prefix6) if prefix6 else None))
        return out

    def sides(self, link: dict) -> list[Side]:
        out = []
        if link["up_kbit"]:
            out.append(Side("up", self.wan, link["up_kbit"]))
        if link["down_kbit"]:
            out.append(Side("down", self.lan, link["down_kbit"]))
        return out

    def app_rules(self, now: float) -> list[AppRule]:
        rules = []
        for app in self.open_apps():
            learned = self.learned.get(app.id, {})
            live = {a: t - now for a, t in learned.items() if t > now}
            rules.append(AppRule(app.id, app.cls, app.ports,
                                 {a: s for a, s in live.items() if ":" not in a},
                                 {a: s for a, s in live.items() if ":" in a}, bool(app.domains)))
        return rules

    # -- applying -------------------------------------------------------------------------------
    def reapply(self) -> None:
        """Rebuild and apply in the background (changes within a second coalesce)."""
        self._worker.put(True)

    def _apply_batch(self, jobs: list) -> None:
        """Jobs: True = rebuild everything; text = learned addresses to add in place (a
        rebuild includes them anyway)."""
        if True not in jobs:
            if self.active:
                self.shaper.learn("".join(jobs))
            return
        with self._lock:
            self._attempted_at = self.ctx.now()
            link = self.link()
            sides = self.sides(link) if link["enabled"] else []
            if not sides:
                if self._started_clean:
                    self.shaper.remove([self.wan, self.lan])
                    self._started_clean = False
                self.active, self.leaves = False, {}
                return
            if not self._started_clean:     # an earlier run's tree and table go
                self.shaper.reset([self.wan, self.lan])
                self._started_clean = True
            self._open_sig = self._signature()
            self._applied_members = tuple(self.members())
            plan = self._plan(link, sides)
            devs = {s.direction: s.dev for s in sides}
            ok = self.shaper.apply(plan, devs)
            if self.leaf is None and ok:
                self.leaf = applying.choose_leaf(sides[0].dev)
                self.log.info("shaping with HTB and %s leaves", self.leaf)
                if self.leaf != "bfifo":
                    # every leaf changes kind: `replace` cannot do that in place, so the
                    # trees are built afresh (a moment without shaping, once per start)
                    self.shaper.installed.clear()
                    plan = self._plan(link, sides)
                    ok = self.shaper.apply(plan, devs)
            self.active, self.leaves = ok, plan.leaves
            self.ctx.count("qos.applied" if ok else "qos.apply_failed")

    def _plan(self, link: dict, sides: list[Side]):
        return build(sides, self.members(), self.device_classes(), self.app_rules(self.ctx.now()),
                     self.ctx.config.qos_shape_percent, link["high_share"], self.leaf or "bfifo",
                     self.ctx.config.qos_down_percent)

    def flush(self) -> None:
        """Wait until every change so far is applied (tests)."""
        self._worker.flush()

    def _on_change(self, topic: str, ev) -> list:
        # a renewal changes no member: rebuilding would only reset the app counters
        if self.link()["enabled"] and tuple(self.members()) != self._applied_members:
            self.reapply()
        return []

    def _on_dns_answer(self, topic: str, ev) -> list:
        name, addrs = ev.name or "", ev.addresses or []
        if not addrs or not self.store.apps:
            return []
        now = self.ctx.now()
        text = ""
        for app in list(self.store.apps.values()):
            if app.domains and matches(name, app.domains):
                known = self.learned.setdefault(app.id, {})
                if len(known) >= MAX_LEARNED:
                    for a in [a for a, t in known.items() if t <= now]:
                        del known[a]
                fresh = [a for a in addrs if a in known or len(known) < MAX_LEARNED]
                for a in fresh:
                    known[a] = now + LEARNED_SECONDS
                text += nft_learned(app.id, fresh, LEARNED_SECONDS)
        if text and self.active:
            self._worker.put(text)      # off the event path: nft runs in the worker
        return []

    # -- every second: windows and counters -------------------------------------------------------
    def tick(self) -> None:
        if self.edge is not None:
            self._edge_worker.put(True)
            self._tell_edge_drops()
        if not self.link()["enabled"]:
            return
        now = self.ctx.now()
        if self._open_sig is not None and self._signature() != self._open_sig:
            self.reapply()          # a window opened or closed
        elif not self.active and now - self._attempted_at >= RETRY_SECONDS:
            self.reapply()          # e.g. the WAN interface was not there yet
        if self.active:
            self.read_counters()

    def read_counters(self) -> None:
        leaves = dict(self.leaves)
        sample = counters.Sample(self.ctx.now(), {})
        devs = {"up": self.wan, "down": self.lan}
        for direction in sorted({d for (d, _minor) in leaves}):
            for minor, counter in counters.parse(self.shaper.counters(devs[direction])).items():
                sample.leaves[(direction, minor)] = counter
        if self.store.apps:
            sample.apps.update(counters.parse_app_counters(self.shaper.app_counters()))
        names = {app.id: (app.name, app.cls) for app in self.store.apps.values()}
        summary = counters.summarize(sample, self._sample, leaves, names)
        self._sample, self._summary = sample, summary
        for row in summary["classes"]:
            self.ctx.bus.publish(QosRate(mac=None, direction=row["direction"], class_=row["class"], bytes=row["bytes"],
                                         packets=row["packets"], drops=row["drops"], rate_bps=row["rate_bps"]))
        for row in summary["devices"]:
            if row["rate_bps"]:
                self.ctx.bus.publish(QosRate(mac=row["mac"], direction=row["direction"], class_=row["class"],
                                             bytes=row["bytes"], packets=row["packets"], drops=row["drops"],
                                             rate_bps=row["rate_bps"]))
        for row in summary["apps"]:
            self.ctx.bus.publish(QosAppRate(name=row["name"], direction=row["direction"], class_=row["class"],
                                            rate_bps=row["rate_bps"], bytes=row["bytes"], packets=row["packets"]))
        self._check_drops(summary)

    def _check_drops(self, summary: dict) -> None:
        drops = counters.high_drops(summary)
        before, self._high_drops = self._high_drops, drops
        now = self.ctx.now()
        if before is None or drops <= before or now - self._alerted_at < ALERT_EVERY:
            return
        self._alerted_at = now
        self.ctx.count("qos.high_drop_alerts")
        self.ctx.bus.publish(Alert(mac="", kind=AlertKind.QOS_HIGH_DROPS,
                                   detail=f"High-priority traffic lost {drops - before} packets while the line was "
                                          "busy: more is set to High than its share of the line holds. Set fewer "
                                          "devices or applications to High, or give High a larger share.",
                                   data={"dropped_packets": drops - before}))

    # -- the ISP's edge ----------------------------------------------------------------------------
    def _edge_round(self, jobs: list) -> None:
        """In the worker: the prioritised connections now (conntrack), placed at the edge."""
        assert self.edge is not None
        entries = self._conntrack.dump_translated() if self._conntrack.available else []
        now = self.ctx.now()
        with self._lock:
            wanted = wanted_placements(entries, device_lookup(self.members()), self.device_classes(),
                                       {a.id: a.cls for a in self.open_apps()},
                                       lambda mac, flow: self._host_class(mac, flow, now))
        self.edge.sync(wanted)
        drops = self.edge.high_drops()
        if drops is not None:
            if self._edge_drops is not None and drops > self._edge_drops:
                self._edge_alert += drops - self._edge_drops
            self._edge_drops = drops

    def _tell_edge_drops(self) -> None:
        """On the event loop: the edge's high queue dropped packets since the last alert."""
        now = self.ctx.now()
        if not self._edge_alert or now - self._edge_alerted_at < ALERT_EVERY:
            return
        lost, self._edge_alert, self._edge_alerted_at = self._edge_alert, 0, now
        self.ctx.count("qos.edge_drop_alerts")
        self.ctx.bus.publish(Alert(mac="", kind=AlertKind.ISP_HIGH_DROPS,
                                   detail=f"Your internet provider's fast lane for this home lost {lost} packets: "
                                          "more is set to High than the line's guaranteed rate carries. Set fewer "
                                          "devices or applications to High, or ask your provider for a larger "
                                          "guaranteed rate.",
                                   data={"dropped_packets": lost}))

    def _host_class(self, mac: str, flow: tuple, now: float) -> str:
        app = self.hostapps.app_of(mac, flow, now)
        return self.hostapps.classes.get((mac, app), "default") if app else "default"

    # -- computers' agents (hostapps.py) -----------------------------------------------------------
    def add_agent(self, mac=None) -> dict:
        mac = seen_device(self.ctx.state, mac)
        with self._lock:
            token = self.hostapps.add_agent(mac, self.ctx.now())
        return {"mac": mac, "token": token,
                "note": "Put this secret in the agent's /etc/homework-agent.conf on that computer; it is shown "
                        "only now. Adding the agent again makes a new one and the old one stops working."}

    def remove_agent(self, mac=None) -> dict:
        mac = seen_device(self.ctx.state, mac)
        with self._lock:
            self.hostapps.remove_agent(mac)
        return self.host_apps(mac)

    def agent_report(self, token=None, caller_mac=None, flows=None) -> dict:
        """A report from a computer's agent: refused (403) unless the secret is an agent's
        and the report comes from that agent's computer."""
        mac = self.hostapps.agent_of(token) if isinstance(token, str) else None
        if mac is None:
            self.ctx.count("qos.agent_refused")
            raise CommandError("unknown agent: add it for its computer on the Priorities page first", 403)
        if caller_mac != mac:
            self.ctx.count("qos.agent_refused")
            raise CommandError("an agent speaks only for its own computer: this report does not come from it", 403)
        parsed = parse_flows(flows)
        own = device_lookup(m for m in self.members() if m.mac == mac)
        if any(own(t[1]) != mac for t, _ in parsed):
            raise CommandError("a report names only the computer's own connections (its own addresses as src)")
        with self._lock:
            fresh = self.hostapps.report(mac, parsed, self.ctx.now())
        self.ctx.count("qos.agent_reports")
        for (proto, src, sport, dst, dport), app in fresh[:256]:
            self.ctx.bus.publish(AppTuple(mac=mac, app=app, proto=proto, src=src, sport=sport, dst=dst, dport=dport))
        if self.edge is not None and fresh:
            self._edge_worker.put(True)     # a new connection of a prioritised application: place it now
        return {"mac": mac, "connections": len(parsed)}

    def host_apps(self, mac=None) -> dict:
        mac = seen_device(self.ctx.state, mac)
        return self.hostapps.view(mac, self.ctx.now())

    def set_host_app(self, mac=None, name=None, cls=None, **kw) -> dict:
        cls = kw.pop("class", cls)
        if kw:
            raise CommandError(f"qos-host-app: unknown argument(s) {', '.join(sorted(kw))}")
        mac, name, cls = seen_device(self.ctx.state, mac), parse_app(name), parse_class(cls)
        with self._lock:
            self.hostapps.set_class(mac, name, cls)
        if self.edge is not None:
            self._edge_worker.put(True)     # move its running connections now
        return self.hostapps.view(mac, self.ctx.now())

    def edge_status(self) -> dict:
        if self.edge is None:
            return {"configured": bool(self._edge_error), "error": self._edge_error, "edge": self.ctx.config.isp_edge}
        return dict(self.edge.status)

    def flush_edge(self) -> None:
        """Wait for the edge round in progress (tests)."""
        self._edge_worker.flush()

    # -- device views ---------------------------------------------------------------------------
    def _facts(self, mac: str) -> dict:
        return {"priority": self.device_classes().get(mac, "default")}

    # -- commands (CLI and ws.v1 API) ------------------------------------------------------------
    def show(self) -> dict:
        link = self.link()
        return {**link, "classes": list(CLASSES),
                "devices": {mac: {"class": r.cls, "window": window_view(r.window)}
                            for mac, r in sorted(self.store.devices.items())},
                "apps": [self._app_view(a) for a in sorted(self.store.apps.values(), key=lambda a: a.name)],
                "active": self.active, "leaf": self.leaf or "bfifo",
                "shape_percent": self.ctx.config.qos_shape_percent,
                "down_percent": self.ctx.config.qos_down_percent, "wan_interface": self.wan,
                "lan_interface": self.lan, "agents": sorted(self.hostapps.agents)}

    @staticmethod
    def _app_view(app) -> dict:
        return {"name": app.name, "class": app.cls, "ports": [p.text() for p in app.ports],
                "domains": list(app.domains), "window": window_view(app.window)}

    def set_link(self, enabled=None, down_kbit=None, up_kbit=None, high_share=None) -> dict:
        """Any subset; everything is checked before anything is stored."""
        values: dict[str, int | bool] = {}
        if enabled is not None:
            values["enabled"] = parse_bool(enabled, "enabled")
        if down_kbit is not None:
            values["down_kbit"] = parse_kbit(down_kbit, "down_kbit")
        if up_kbit is not None:
            values["up_kbit"] = parse_kbit(up_kbit, "up_kbit")
        if high_share is not None:
            values["high_share"] = parse_share(high_share)
        if not values:
            raise CommandError("qos-link: give at least one of enabled, down_kbit, up_kbit, high_share")
        with self._lock:
            self.store.set_link(values)
        self.reapply()
        return self.show()

    def carry_device(self, old: str, new: str) -> list[str]:
        """A device let in as the device it was: its priority moves to it. (An end-host
        agent is not carried: its secret was given for the old address; it pairs again.)"""
        rule = self.store.devices.get(old)
        if rule is None:
            return []
        with self._lock:
            self.store.set_device(DeviceRule(new, rule.cls, rule.window))
            self.store.clear_device(old)
        self.reapply()
        self.ctx.bus.publish(QosDevice(mac=new, class_=rule.cls))
        self.ctx.bus.publish(QosDevice(mac=old, class_="default"))
        return ["priority"]

    def set_device(self, mac=None, cls=None, window=None, **kw) -> dict:
        """A device's whole traffic in a class ("default" removes its rule), optionally only
        in a weekly window."""
        cls = kw.pop("class", cls)
        if kw:
            raise CommandError(f"qos-device: unknown argument(s) {', '.join(sorted(kw))}")
        cls = parse_class(cls)
        window = parse_window(window)
        mac = seen_device(self.ctx.state, mac)
        with self._lock:
            if cls == "default":
                self.store.clear_device(mac)
            else:
                self.store.set_device(DeviceRule(mac, cls, window))
        self.reapply()
        self.ctx.bus.publish(QosDevice(mac=mac, class_=cls))
        return self.show()

    def set_app(self, name=None, cls=None, ports=None, domains=None, window=None, **kw) -> dict:
        """Create or replace an application by name: ports and/or domains, a class, a window."""
        cls = kw.pop("class", cls)
        if kw:
            raise CommandError(f"qos-app: unknown argument(s) {', '.join(sorted(kw))}")
        name = parse_name(name)
        cls = parse_class(cls)
        ports, domains, window = parse_ports(ports), parse_domains(domains), parse_window(window)
        if not ports and not domains:
            raise CommandError("qos-app: give ports and/or domains, or the app matches nothing")
        with self._lock:
            if name not in self.store.apps and len(self.store.apps) >= MAX_APPS:
                raise CommandError(f"qos-app: at most {MAX_APPS} applications")
            app = self.store.set_app(name, cls, ports, domains, window)
            self.learned.pop(app.id, None)      # its domains may have changed: learn afresh
        self.reapply()
        view = self._app_view(app)
        self.ctx.bus.publish(QosApp(name=view["name"], class_=view["class"], ports=view["ports"],
                                    domains=view["domains"], window=view["window"]))
        return self.show()

    def delete_app(self, name=None) -> dict:
        if not isinstance(name, str):
            raise CommandError("qos-app-delete: give the application's name")
        with self._lock:
            app = self.store.remove_app(name.strip())
            if app is None:
                raise CommandError(f"qos-app-delete: no application named {name!r}", 404)
            self.learned.pop(app.id, None)
        self.reapply()
        self.ctx.bus.publish(QosApp(name=app.name, class_="", ports=[], domains=[], window=None))
        return self.show()

    def stats(self) -> dict:
        return self._summary
