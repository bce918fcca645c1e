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

from ... import cutoff_pages
from ..usage.periods import zone

MEDIA_TYPE = "application/captive+json"


def add_routes(app) -> None:
    from webob import Response

    ctx = app.ctx
    tz = zone(ctx.config.timezone)

    def who(call) -> tuple[str | None, str]:
        mac = call.client_mac
        device = ctx.state.get_device(mac) if mac else None
        return mac, (device.name or device.hostname) if device is not None else ""

    def portal_api(call):
        mac, _name = who(call)
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

    def page(call):
        mac, name = who(call)
        cut = ctx.cutoffs.of(mac) if mac else None
        text = cutoff_pages.render(cut, mac, name, ctx.now(), tz) if cut is not None else \
            cutoff_pages.render_not_cut(name)
        resp = Response(body=text.encode(), content_type="text/html", charset="utf-8")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    app._add("GET", "/captive-portal/?", portal_api, "caller")
    app._add("GET", "/captive-portal/page/?", page, "caller")
