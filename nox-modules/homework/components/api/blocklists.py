"""Blocklist subscriptions and safe-search in the ws.v1 API:

    GET  /ws.v1/blocklists                      subscriptions: rules, blocked queries, last fetch, error
    POST /ws.v1/blocklists {url, owner?, allow_local?}   subscribe (admin): fetched first; a bad URL, a 404 or
                                                a file that is not a list is a 400 and nothing is stored
    POST /ws.v1/blocklists/{id}/refresh         fetch again now (400 with the reason; old names stay)
    POST /ws.v1/blocklists/{id}/remove
    GET  /ws.v1/dns/safe-search                 {"enabled": bool}
    POST /ws.v1/dns/safe-search {enabled}

Every route calls a controller command (components/blocklists), as `homework blocklist ...`.
"""
from __future__ import annotations

ADD_FIELDS = {"url", "owner", "allow_local"}


def add_routes(app) -> None:
    """Called once from ApiApp.__init__."""
    from .app import ApiError, json_response

    def available() -> None:
        if "blocklists" not in app.ctx.commands.names():
            raise ApiError(503, "blocklists are not available: the blocklists component is not loaded "
                                "(add \"blocklists\" to [controller] components)")

    def fields(call, allowed: set[str], required: tuple = ()) -> dict:
        body = app.fields(call, allowed)
        missing = [f for f in required if body.get(f) in (None, "")]
        if missing:
            raise ApiError(400, f"missing field(s): {', '.join(missing)}")
        return body

    def list_all(call):
        available()
        return json_response(app.command("blocklists"))

    def add(call):
        available()
        body = fields(call, ADD_FIELDS, ("url",))
        return json_response(app.command("blocklist-add", url=body["url"], owner=body.get("owner"),
                                          allow_local=body.get("allow_local", False)), 201)

    def refresh(call, list_id):
        available()
        return json_response(app.command("blocklist-refresh", id=list_id))

    def remove(call, list_id):
        available()
        return json_response(app.command("blocklist-remove", id=list_id))

    def safe_search(call):
        available()
        if call.req.method == "GET":
            return json_response(app.command("safe-search"))
        body = fields(call, {"enabled"}, ("enabled",))
        if not isinstance(body["enabled"], bool):
            raise ApiError(400, "enabled must be true or false")
        return json_response(app.command("safe-search", enabled=body["enabled"]))

    ident = r"(?P<list_id>[^/]+)"
    app._add("GET", "/blocklists/?", list_all, "read")
    app._add("POST", "/blocklists/?", add, "admin")
    app._add("POST", f"/blocklists/{ident}/refresh/?", refresh, "admin")
    app._add("POST", f"/blocklists/{ident}/remove/?", remove, "admin")
    app._add("GET", "/dns/safe-search/?", safe_search, "read")
    app._add("POST", "/dns/safe-search/?", safe_search, "admin")
