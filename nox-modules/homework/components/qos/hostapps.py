"""The end-host agent's side in the router (the seed's data-collecting daemon; the agent
itself is hostagent/ in this repository): agents a household added per computer, what each
reports (which application owns which of that computer's connections: the seed's
Application tuple table), and the priorities set per application on a computer (its
Application priorities). A priority set here follows the application's connections: they
are placed at the ISP's edge like a device's (edge.py).

An agent is known by a secret made when the household adds it (only its SHA-256 is kept),
and speaks only for its computer: the report's source address must be that device's.
Framework-free (unit tested)."""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from dataclasses import dataclass

from ...commands import CommandError

APP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+-]{0,39}$")
MAX_FLOWS = 4096          # connections in one report
MAX_APPS = 256            # applications remembered per computer
REPORT_SECONDS = 30.0     # a report older than this no longer names its connections
PROTOS = ("tcp", "udp")
ANY = "*"

Tuple5 = tuple[str, str, int, str, int]      # proto, src, sport, dst, dport as the computer sees it


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return "hwa_" + secrets.token_urlsafe(24)


def parse_app(name) -> str:
    if not isinstance(name, str) or not APP_NAME.match(name.strip()):
        raise CommandError("an application's name is 1 to 40 letters, digits, spaces or . _ + -, "
                           f"starting with a letter or digit, got {name!r}")
    return name.strip()


def parse_flows(flows) -> list[tuple[Tuple5, str]]:
    """A report's connections: [{"proto", "src", "sport", "dst", "dport", "app"}]; a 400 naming
    the first bad one."""
    if not isinstance(flows, list) or len(flows) > MAX_FLOWS:
        raise CommandError(f"flows must be a list of at most {MAX_FLOWS} connections")
    out = []
    for i, f in enumerate(flows):
        if not isinstance(f, dict):
            raise CommandError(f"flows[{i}] must be an object")
        try:
            proto = f["proto"]
            src = str(ipaddress.ip_address(f["src"]))
            # "*" and port 0: an unconnected UDP socket (sendto), any peer
            dst = ANY if f["dst"] == ANY else str(ipaddress.ip_address(f["dst"]))
            sport, dport = f["sport"], f["dport"]
        except (KeyError, ValueError, TypeError):
            raise CommandError(f"flows[{i}] needs proto, src, sport, dst, dport and app") from None
        if proto not in PROTOS or not all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 65536
                                          for p in (sport, dport)) or sport == 0 or (dport == 0) != (dst == ANY):
            raise CommandError(f"flows[{i}]: proto tcp or udp, ports 1 to 65535 (dst \"*\" with dport 0: any peer)")
        out.append(((proto, src, sport, dst, dport), parse_app(f.get("app"))))
    return out


@dataclass
class Report:
    at: float
    flows: dict[Tuple5, str]


class HostApps:
    def __init__(self, state):
        self.state = state
        self.agents = {r["mac"]: r["token_hash"] for r in state.execute("SELECT mac, token_hash FROM qos_agents")}
        self.classes: dict[tuple[str, str], str] = {
            (r["mac"], r["name"]): r["class"] for r in state.execute("SELECT mac, name, class FROM qos_host_apps")}
        self.reports: dict[str, Report] = {}
        self.seen: dict[str, dict[str, float]] = {}       # mac -> application -> last reported

    def add_agent(self, mac: str, now: float) -> str:
        token = new_token()
        self.state.execute("INSERT INTO qos_agents (mac, token_hash, created) VALUES (?, ?, ?) ON CONFLICT (mac) "
                           "DO UPDATE SET token_hash=excluded.token_hash, created=excluded.created",
                           (mac, token_hash(token), now))
        self.agents[mac] = token_hash(token)
        return token

    def remove_agent(self, mac: str) -> None:
        self.state.execute("DELETE FROM qos_agents WHERE mac=?", (mac,))
        self.agents.pop(mac, None)
        self.reports.pop(mac, None)

    def agent_of(self, token: str) -> str | None:
        """The computer this secret was made for, or None."""
        want = token_hash(token or "")
        return next((mac for mac, h in self.agents.items() if hmac.compare_digest(h, want)), None)

    def report(self, mac: str, flows: list[tuple[Tuple5, str]], now: float) -> list[tuple[Tuple5, str]]:
        """Store a report; returns the connections not in the previous one (new tuples)."""
        before = self.reports.get(mac)
        old = before.flows if before else {}
        self.reports[mac] = Report(now, dict(flows))
        apps = self.seen.setdefault(mac, {})
        for _, app in flows:
            apps[app] = now
        if len(apps) > MAX_APPS:
            for app in sorted(apps, key=apps.__getitem__)[:len(apps) - MAX_APPS]:
                del apps[app]
        return [(t, a) for t, a in flows if old.get(t) != a]

    def set_class(self, mac: str, name: str, cls: str) -> None:
        if cls == "default":
            self.state.execute("DELETE FROM qos_host_apps WHERE mac=? AND name=?", (mac, name))
            self.classes.pop((mac, name), None)
        else:
            self.state.execute("INSERT INTO qos_host_apps (mac, name, class) VALUES (?, ?, ?) ON CONFLICT (mac, name) "
                               "DO UPDATE SET class=excluded.class", (mac, name, cls))
            self.classes[(mac, name)] = cls

    def app_of(self, mac: str, flow: Tuple5, now: float) -> str | None:
        """The application the computer's agent says owns this connection (as it sees it)."""
        rep = self.reports.get(mac)
        if rep is None or now - rep.at > REPORT_SECONDS:
            return None
        proto, src, sport, _, _ = flow
        return rep.flows.get(flow) or rep.flows.get((proto, src, sport, ANY, 0))

    def view(self, mac: str, now: float) -> dict:
        rep = self.reports.get(mac)
        apps = self.seen.get(mac, {})
        names = sorted(set(apps) | {n for (m, n) in self.classes if m == mac})
        return {"mac": mac, "agent": mac in self.agents,
                "reported_at": rep.at if rep else None, "reporting": bool(rep and now - rep.at <= REPORT_SECONDS),
                "apps": [{"name": n, "class": self.classes.get((mac, n), "default"), "last_seen": apps.get(n),
                          "connections": sum(1 for a in (rep.flows.values() if rep else ()) if a == n)}
                         for n in names]}
