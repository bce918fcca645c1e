"""What a cut-off device is told, through the captive pages' server:

    GET /ws.v1/captive-portal        (caller)  the captive portal API of RFC 8908, about the
                                               caller: {"captive", "user-portal-url",
                                               "seconds-remaining", "can-extend-session"}
                                               (application/captive+json)
    GET /ws.v1/captive-portal/page   (caller)  the page saying why (cutoff_pages.py)

Access "caller": no credentials, any device on the LAN in any state, and the answer is
about the caller only (which device is asking comes from its address: its IPv4 address or
any address in its /64). The captive pages' server (conf/lighttpd-captive.conf) sends
every URL a cut-off device asks for to the page, over HTTP and HTTPS, IPv4 and IPv6; the
network announces the API's URL (DHCP option 114, the RA option of RFC 8910), so phones
open their own "sign in to network" sheet on it.
"""
from __future__ import annotations

import json

from webob import Response

from ... import cutoff_pages
from ..usage.periods import zone
from .model import Model, field
from .routes import Access, RouteGroup, get

MEDIA_TYPE = "application/captive+json"


class CaptiveState(Model):
    """RFC 8908's answer about the calling device."""
    captive: bool = field(doc="true while the device is cut off (pending, denied, paused, bedtime, allowance)")
    user_portal_url: str | None = field(optional=True, key="user-portal-url",
                                        doc="the page saying why (only while captive)")
    seconds_remaining: int | None = field(optional=True, key="seconds-remaining",
                                          doc="until the cut-off ends by itself (a pause, a bedtime)")
    can_extend_session: bool | None = field(optional=True, key="can-extend-session")


class CaptiveRoutes(RouteGroup):
    tag = "captive"
    description = "What a cut-off device is told: RFC 8908's API and the page saying why"

    def who(self, call) -> tuple[str | None, str]:
        mac = call.client_mac
        device = self.api.ctx.state.get_device(mac) if mac else None
        return mac, (device.name or device.hostname) if device is not None else ""

    @get("/captive-portal", Access.CALLER, "The captive portal API (RFC 8908) about the calling device: whether "
         "it is cut off, and the page that says why", name="captivePortal", answer=CaptiveState,
         content_type=MEDIA_TYPE)
    def portal_api(self, call):
        ctx = self.api.ctx
        mac, _name = self.who(call)
        cut = ctx.cutoffs.of(mac) if mac else None
        body: dict = {"captive": cut is not None}
        if cut is not None:
            host = call.req.host or ""
            body["user-portal-url"] = f"https://{host}/" if host else "/"
            body["can-extend-session"] = False
            if cut.until:
                body["seconds-remaining"] = max(0, int(cut.until - ctx.now()))
        resp = Response(body=json.dumps(body).encode(), content_type=MEDIA_TYPE, charset=None)
        resp.headers["Cache-Control"] = "no-store"
        return resp

    @get("/captive-portal/page", Access.CALLER, "The page telling the calling device why it is cut off, in the "
         "household's words (or that it is not)", name="captivePage", answer=str, content_type="text/html")
    def page(self, call):
        ctx = self.api.ctx
        mac, name = self.who(call)
        cut = ctx.cutoffs.of(mac) if mac else None
        text = cutoff_pages.render(cut, mac, name, ctx.now(), zone(ctx.config.timezone)) if cut is not None else \
            cutoff_pages.render_not_cut(name)
        resp = Response(body=text.encode(), content_type="text/html", charset="utf-8")
        resp.headers["Cache-Control"] = "no-store"
        return resp
