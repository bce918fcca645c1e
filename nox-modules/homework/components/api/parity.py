"""API parity with the CLI and group decisions in the ws.v1 API:

    POST /ws.v1/permit | /deny | /blacklist | /forget   {"macs": [...]} or a bare JSON list
         -> {"decision", "results": [one device view per MAC]}; all or nothing: one bad,
            unforgettable or self MAC is a 400/403/404/409 naming it and nothing changes.
    GET  /ws.v1/dns-mode/{mac}                 -> {"mac", "mode"}
    POST /ws.v1/dns-mode/{mac}                 {"mode": "allowlist" | "denylist"}

Household DNS rules use the existing routes with the literal `household` in place of a
MAC (app.py: /permit-dns/household/{domain}, /dns-rules/household, ...). A MAC never
seen is pre-approved by /permit/{mac}, /deny/{mac} and /blacklist/{mac} (devices.py).
"""
from __future__ import annotations

from ...macaddr import BadMac, normalize
from ...values import BadValue, parse_json

GROUP = ("permit", "deny", "blacklist", "forget")


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module
    mac = r"(?P<mac>[^/]+)"

    def group_macs(call) -> list:
        raw = call.req.body
        if not raw:
            raise ApiError(400, "send the MACs as JSON: {\"macs\": [\"aa:bb:cc:dd:ee:ff\", ...]} or a bare list")
        try:
            data = parse_json(raw)
        except BadValue as exc:
            raise ApiError(400, str(exc)) from None
        if isinstance(data, dict):
            unknown = set(data) - {"macs"}
            if unknown:
                raise ApiError(400, f"unknown field(s) {', '.join(sorted(unknown))} (allowed: macs)")
            data = data.get("macs")
        if not isinstance(data, list) or not data:
            raise ApiError(400, "macs must be a non-empty list of MAC addresses")
        return data

    def group(decision: str):
        def handler(call):
            macs = group_macs(call)
            # The caller's own MAC anywhere in the list refuses the whole list (not_self).
            for text in macs:
                try:
                    app.not_self(call, normalize(text) if isinstance(text, str) else text)
                except BadMac:
                    pass            # decide-group names it, with nothing applied
            results = app.command("decide-group", decision=decision, macs=macs)
            return json_response({"decision": decision, "results": results})
        handler.__name__ = f"group_{decision}"
        return handler

    def need_dns() -> None:
        if "dns-mode" not in app.ctx.commands.names():
            raise ApiError(503, "DNS rules are not available: the dns component is not loaded "
                                "(add \"dns\" to [controller] components)")

    def dns_mode(call, mac: str):
        need_dns()
        mac = app.known_mac(mac)
        if call.req.method == "GET":
            return json_response(app.command("dns-mode", mac=mac))
        app.not_self(call, mac)
        data = app.body(call)
        if set(data) != {"mode"} or not isinstance(data["mode"], str):
            raise ApiError(400, "send {\"mode\": \"allowlist\" | \"denylist\"} and nothing else")
        return json_response(app.command("dns-mode", mac=mac, mode=data["mode"]))

    for decision in GROUP:
        app._add("POST", f"/{decision}/?", group(decision), "admin")
    app._add("GET", f"/dns-mode/{mac}/?", dns_mode, "read")
    app._add("POST", f"/dns-mode/{mac}/?", dns_mode, "admin")
