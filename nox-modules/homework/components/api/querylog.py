"""The query log and local names in the ws.v1 API:

    GET /ws.v1/dns/queries?mac=&search=&verdict=&limit=   recent DNS queries, newest first
    GET /ws.v1/dns/queries/summary?top=                   per device: total, blocked; top blocked names
    GET /ws.v1/local-names                                label -> mac, ip (components/localnames)

The query log reads hwdb's DnsQueries (what hwdb_sync writes from dnsd's events), so it
covers the window hwdb's ring holds. Both go through controller commands (`dns-queries`,
`dns-queries-summary`), so `homework queries` on the router shows the same rows. Query
strings are checked here and again by the commands: a bad value is a 400 with the reason.
"""
from __future__ import annotations

import re

from ...commands import CommandError
from ...macaddr import BadMac, normalize
from ...values import BadValue, whole_number
from .model import Model, field
from .routes import Access, RouteGroup, get, needs

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000            # a request for more gets this many
DEFAULT_TOP = 10
MAX_TOP = 100
MAX_SEARCH = 253            # the longest DNS name
VERDICTS = ("allowed", "blocked", "pending", "blacklisted", "bypass", "bogus")   # bogus: failed DNSSEC
OTHER_NAMES = "(other names)"     # hwdb_sync's row for a flood's many names (dns_limiter.py)
SEARCH = re.compile(r"^[A-Za-z0-9_.*-]*$")
QTYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV",
          64: "SVCB", 65: "HTTPS", 255: "ANY"}
LOCAL_NAMES = needs("local-names", "local names are", "localnames")


def _count(text, what: str, default: int, cap: int) -> int:
    if text is None or text == "":
        return default
    try:
        value = whole_number(text, what, 1)
    except BadValue as exc:
        raise CommandError(str(exc)) from None
    return min(value, cap)


def _qtype(value) -> str:
    text = str(value)
    return QTYPES.get(int(text), f"TYPE{text}") if text.isdigit() else text


class QueryLog:
    """Shapes DnsQueries rows for the board, the API and the CLI."""

    def __init__(self, ctx, client_factory):
        self.ctx = ctx
        self.client_factory = client_factory     # () -> the hwdb client factory, None if hwdb is off

    def _query(self, sql: str):
        factory = self.client_factory()
        if factory is None or not self.ctx.config.hwdb_enabled:
            raise CommandError("the query log needs hwdb ([hwdb] enabled = true and the hwdb_sync component)", 503)
        try:
            return factory().query(sql).rows
        except Exception as exc:
            timeout = type(exc).__name__ == "HwdbTimeout"
            raise CommandError(f"hwdb: {getattr(exc, 'message', exc)}", 504 if timeout else 502) from None

    def _names(self) -> dict[str, str]:
        return {d.mac: d.name or d.hostname or "" for d in self.ctx.state.devices()}

    def queries(self, mac=None, search=None, verdict=None, limit=None) -> dict:
        import hwdb_client
        conds = []
        if mac:
            try:
                mac = normalize(mac)
            except BadMac as exc:
                raise CommandError(str(exc)) from None
            conds.append(f"mac = {hwdb_client.quote(mac)}")
        if search:
            if len(search) > MAX_SEARCH or not SEARCH.match(search):
                raise CommandError(f"search: letters, digits, '.', '-', '_' and '*', at most {MAX_SEARCH} "
                                   f"characters, not {search[:40]!r}")
            conds.append(f"name contains {hwdb_client.quote(search.lower())}")
        if verdict:
            if verdict not in VERDICTS:
                raise CommandError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
            conds.append(f"verdict = {hwdb_client.quote(verdict)}")
        limit = _count(limit, "limit", DEFAULT_LIMIT, MAX_LIMIT)
        where = f" where {' and '.join(conds)}" if conds else ""
        rows = self._query(f"select timestamp, mac, name, qtype, verdict, count from DnsQueries{where} "
                           f"order by timestamp desc limit {limit}")
        names = self._names()
        return {"limit": limit, "queries": [
            {"at": row["timestamp"] / 1e9, "mac": row["mac"], "device": names.get(row["mac"], ""),
             "name": row["name"], "type": _qtype(row["qtype"]), "verdict": row["verdict"], "count": row["count"]}
            for row in rows]}

    def summary(self, top=None) -> dict:
        top = _count(top, "top", DEFAULT_TOP, MAX_TOP)
        per_device: dict[str, dict] = {}
        names = self._names()
        for row in self._query("select mac, verdict, sum(count) from DnsQueries group by mac, verdict"):
            mac = row["mac"] or ""
            entry = per_device.setdefault(mac, {"mac": mac, "device": names.get(mac, ""), "total": 0, "blocked": 0})
            entry["total"] += int(row["sum(count)"] or 0)
            if row["verdict"] == "blocked":
                entry["blocked"] += int(row["sum(count)"] or 0)
        blocked = self._query("select name, sum(count) from DnsQueries where verdict = 'blocked' group by name "
                              f"order by sum(count) desc limit {top + 1}")
        top_blocked = [{"name": row["name"], "count": int(row["sum(count)"] or 0)}
                       for row in blocked if row["name"] != OTHER_NAMES][:top]
        devices = sorted(per_device.values(), key=lambda e: (-e["total"], e["mac"]))
        return {"devices": devices, "top_blocked": top_blocked}


class QueriesQuery(Model):
    mac: str = field(optional=True, doc="only this device's queries")
    search: str = field(optional=True, doc="part of a name: letters, digits, '.', '-', '_' and '*'")
    verdict: str = field(optional=True, doc=", ".join(VERDICTS))
    limit: str = field(optional=True, doc=f"1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}); more gets {MAX_LIMIT}")


class SummaryQuery(Model):
    top: str = field(optional=True, doc=f"how many names (default {DEFAULT_TOP}, at most {MAX_TOP})")


class Query(Model):
    at: float = field(doc="epoch seconds")
    mac: str
    device: str = field(doc="the device's name or hostname; '' if it has none")
    name: str
    type: str = field(doc="A, AAAA, HTTPS, ... or TYPEn")
    verdict: str = field(doc=", ".join(VERDICTS))
    count: int = field(doc="queries of this name in a row")


class QueryList(Model):
    """Recent DNS queries, newest first."""
    limit: int
    queries: list[Query]


class DeviceQueries(Model):
    mac: str
    device: str
    total: int
    blocked: int


class BlockedName(Model):
    name: str
    count: int


class QuerySummary(Model):
    """Per device: queries and blocked queries; the most blocked names (over the window hwdb holds)."""
    devices: list[DeviceQueries]
    top_blocked: list[BlockedName]


class LocalName(Model):
    label: str
    name: str = field(doc="<label>.home.arpa (or the first of [dns] local_domains)")
    mac: str
    ip: str


HWDB_ERRORS = {400: "an unknown or repeated parameter, or a bad value", 502: "hwdb refused the query",
               503: "hwdb is not enabled on this router", 504: "hwdb did not answer in time"}


class QueryLogRoutes(RouteGroup):
    tag = "dns"

    def __init__(self, api):
        super().__init__(api)
        log = QueryLog(api.ctx, lambda: api.hwdb_client_factory)
        commands = api.ctx.commands
        if "dns-queries" not in commands.names():      # one controller may build more than one app (tests)
            commands.register("dns-queries", log.queries)
            commands.register("dns-queries-summary", log.summary)

    @get("/dns/queries", Access.READ, "Recent DNS queries from hwdb's DnsQueries, newest first (the Guest Board's "
         "query log)", name="dnsQueries", query=QueriesQuery, answer=QueryList, errors=HWDB_ERRORS, board="queries")
    def queries(self, call, query):
        return self.api.command("dns-queries", **query.given_items())

    @get("/dns/queries/summary", Access.READ, "Per device: queries and blocked queries; the most blocked names "
         "(over the window hwdb holds)", name="dnsQueriesSummary", query=SummaryQuery, answer=QuerySummary,
         errors=HWDB_ERRORS, board="querySummary")
    def summary(self, call, query):
        return self.api.command("dns-queries-summary", **query.given_items())

    @get("/local-names", Access.READ, "The names permitted devices answer to inside the home (<label>.home.arpa "
         "and the other [dns] local_domains; PTR for their address)", name="localNames", answer=list[LocalName],
         needs=LOCAL_NAMES)
    def local_names(self, call):
        return self.api.command("local-names")
