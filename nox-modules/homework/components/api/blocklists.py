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

from .model import Model, field
from .routes import Access, Param, RouteGroup, get, needs, post

BLOCKLISTS = needs("blocklists", "blocklists are", "blocklists")
LIST_ID = Param(str, "a blocklist's id", example="1")
NO_LIST = {404: "no such blocklist"}


class Blocklist(Model):
    """A blocklist subscription and how it fares."""
    id: int
    url: str
    owner: str = field(doc="'household', or the owner whose devices it is for")
    enabled: bool
    added: float = field(doc="epoch seconds")
    fetched: float | None = field(doc="last successful fetch (the names in force are from then)")
    checked: float | None = field(doc="last attempt, successful or not")
    rules: int = field(doc="blocked names")
    exceptions: int = field(doc="@@||name^ exceptions kept")
    skipped: int = field(doc="lines a resolver cannot enforce (cosmetic, URL rules)")
    error: str = field(doc="why the last attempt failed; '' = it worked")
    blocked_queries: int = field(doc="queries it blocked since the resolver started")
    devices: list[str] | None = field(doc="an owner's list: the MACs it applies to; null for the household")
    allow_local: bool = field(doc="the household allowed a list served on its own network or by the router")


class Blocklists(Model):
    blocklists: list[Blocklist]
    safe_search: bool


class AddBody(Model):
    url: str = field(doc="hosts-file, ||domain^ or plain domain lines", example="https://example.net/hosts.txt")
    owner: str | None = field(optional=True, doc="a devices' owner name (default: the household)")
    allow_local: bool = field(False, doc="the household allows a list served on its own network or by the router")


class ListRemoved(Model):
    removed: int
    url: str


class SafeSearch(Model):
    enabled: bool


class SafeSearchBody(Model):
    enabled: bool


class BlocklistRoutes(RouteGroup):
    tag = "dns"

    @get("/blocklists", Access.READ, "Blocklist subscriptions: rules, blocked queries, last fetch, last error; and "
         "whether safe-search is on", name="listBlocklists", answer=Blocklists, needs=BLOCKLISTS, board="blocklists")
    def list_all(self, call):
        return self.api.command("blocklists")

    @post("/blocklists", Access.ADMIN, "Subscribe to a blocklist (admin): hosts-file, ||domain^ or plain domain "
          "lines, fetched now; owner: a devices' owner name (default: the household)", name="addBlocklist",
          body=AddBody, body_required=True, answer=Blocklist, status=201, needs=BLOCKLISTS,
          errors={400: "a bad URL, the URL did not answer 200, the file is not a blocklist or too large, or "
                       "already subscribed: nothing stored"})
    def add(self, call, body):
        return self.api.command("blocklist-add", url=body.url, owner=body.owner, allow_local=body.allow_local)

    @post("/blocklists/{list_id}/refresh", Access.ADMIN, "Fetch a blocklist again now (admin); on failure the "
          "previous names stay in force", name="refreshBlocklist", answer=Blocklist, needs=BLOCKLISTS,
          params={"list_id": LIST_ID}, errors=NO_LIST)
    def refresh(self, call, list_id):
        return self.api.command("blocklist-refresh", id=list_id)

    @post("/blocklists/{list_id}/remove", Access.ADMIN, "Unsubscribe (admin)", name="removeBlocklist",
          answer=ListRemoved, needs=BLOCKLISTS, params={"list_id": LIST_ID}, errors=NO_LIST)
    def remove(self, call, list_id):
        return self.api.command("blocklist-remove", id=list_id)

    @get("/dns/safe-search", Access.READ, "Whether safe-search is enforced (Google, Bing, DuckDuckGo, YouTube "
         "answered with their safe hosts)", name="getSafeSearch", answer=SafeSearch, needs=BLOCKLISTS)
    def safe_search(self, call):
        return self.api.command("safe-search")

    @post("/dns/safe-search", Access.ADMIN, "Turn safe-search on or off (admin)", name="setSafeSearch",
          body=SafeSearchBody, body_required=True, answer=SafeSearch, needs=BLOCKLISTS)
    def set_safe_search(self, call, body):
        return self.api.command("safe-search", enabled=body.enabled)
