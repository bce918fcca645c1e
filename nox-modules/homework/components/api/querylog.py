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
QUERY_PARAMS = {"mac", "search", "verdict", "limit"}
SUMMARY_PARAMS = {"top"}


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


def add_routes(app) -> None:
    """Called once from ApiApp.__init__: the routes, and the commands the CLI shares."""
    from .app import ApiError, json_response
    log = QueryLog(app.ctx, lambda: app.hwdb_client_factory)
    commands = app.ctx.commands
    if "dns-queries" not in commands.names():      # one controller may build more than one app (tests)
        commands.register("dns-queries", log.queries)
        commands.register("dns-queries-summary", log.summary)

    def only(call, allowed: set[str]) -> dict:
        params = call.req.GET
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise ApiError(400, f"unknown parameter(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
        for key in params:
            if len(params.getall(key)) > 1:
                raise ApiError(400, f"parameter {key} given more than once")
        return {key: params[key] for key in params}

    def queries(call):
        return json_response(app.command("dns-queries", **only(call, QUERY_PARAMS)))

    def summary(call):
        return json_response(app.command("dns-queries-summary", **only(call, SUMMARY_PARAMS)))

    def local_names(call):
        if "local-names" not in commands.names():
            raise ApiError(503, "local names are not available: the localnames component is not loaded "
                                "(add \"localnames\" to [controller] components)")
        return json_response(app.command("local-names"))

    app._add("GET", "/dns/queries/?", queries, "read")
    app._add("GET", "/dns/queries/summary/?", summary, "read")
    app._add("GET", "/local-names/?", local_names, "read")
