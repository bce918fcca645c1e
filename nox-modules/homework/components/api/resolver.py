"""The resolver behind homework-dnsd in the ws.v1 API (components/dns/resolver.py):

    GET  /ws.v1/dns/dnssec                          {"enabled", "insecure": [domains], "running", "error"?}
    POST /ws.v1/dns/dnssec {enabled}                validation on or off (admin)
    POST /ws.v1/dns/dnssec/insecure {domain}        validation off for one domain (admin)
    POST /ws.v1/dns/dnssec/insecure/{domain}/remove
    GET  /ws.v1/dns/upstream                        where names are looked up, and whether that works
    POST /ws.v1/dns/upstream {provider, servers?, fallback?}   (admin; upstreams.py says what is allowed)

Every route calls a controller command, as `homework dnssec ...` and `homework
dns-upstream ...` do; without the dns component (which registers them) each answers 503 with
the reason, as the DNS rules' routes do.
"""
from __future__ import annotations


def add_routes(app) -> None:
    """Called once from ApiApp.__init__."""
    from .app import ApiError, json_response

    def need_resolver() -> None:
        if "dns-upstream" not in app.ctx.commands.names():
            raise ApiError(503, "The resolver's settings are not available: the dns component is not loaded "
                                "(add \"dns\" to [controller] components)")

    def dnssec(call):
        need_resolver()
        if call.req.method == "GET":
            return json_response(app.command("dnssec"))
        body = app.fields(call, {"enabled"})
        if not isinstance(body.get("enabled"), bool):
            raise ApiError(400, "enabled must be true or false")
        return json_response(app.command("dnssec", enabled=body["enabled"]))

    def insecure_add(call):
        need_resolver()
        body = app.fields(call, {"domain"})
        if not body.get("domain"):
            raise ApiError(400, "missing field: domain")
        return json_response(app.command("dnssec-insecure-add", domain=body["domain"]))

    def insecure_remove(call, domain):
        need_resolver()
        return json_response(app.command("dnssec-insecure-remove", domain=domain))

    def upstream(call):
        need_resolver()
        if call.req.method == "GET":
            return json_response(app.command("dns-upstream"))
        body = app.fields(call, {"provider", "servers", "fallback"})
        if not body.get("provider"):
            raise ApiError(400, "missing field: provider (isp, cloudflare, quad9, google or custom)")
        return json_response(app.command("dns-upstream", **body))

    app._add("GET", "/dns/upstream/?", upstream, "read")
    app._add("POST", "/dns/upstream/?", upstream, "admin")
    app._add("GET", "/dns/dnssec/?", dnssec, "read")
    app._add("POST", "/dns/dnssec/?", dnssec, "admin")
    app._add("POST", "/dns/dnssec/insecure/?", insecure_add, "admin")
    app._add("POST", r"/dns/dnssec/insecure/(?P<domain>[^/]+)/remove/?", insecure_remove, "admin")
