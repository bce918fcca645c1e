"""What each device is (components/identify) in the ws.v1 API:

    GET  /ws.v1/identity/{mac}              the guess (type, os, os_version, model, label, confidence,
                                            level, why) or the household's correction, and the evidence
    POST /ws.v1/identity/{mac}              {"type"?, "os"?, "label"?}: the household says what it is
    POST /ws.v1/identity/{mac}/clear        back to the router's guess
    POST /ws.v1/identity/{mac}/join         {"as": MAC}: a pending device with a new private address that
                                            looks like that permitted device is let in as it (409 when it
                                            does not look like it)
    GET  /ws.v1/identity-catalog            how many fingerprint rules, and their sources
    GET  /ws.v1/identity/{mac}/story        the device's story: first seen, who let it in and when, ports and
                                            radios, top names today, usage today and this week, alerts, and
                                            a timeline of events; ?format=csv: the timeline as a CSV download

A correction changes what the board calls the device, never its access: a guess decides
nothing. Still, a device may not correct itself (it would be telling the board what to
call it). A bad type or an over-long label is a 400 naming it; nothing is stored.
"""
from __future__ import annotations

from typing import Literal

from webob import Response

from ..identify.catalog import TYPES
from ..identify.correction import LABEL_MAX
from .devices import KNOWN_MAC, NOT_SEEN
from .model import Model, field
from .routes import Access, RouteGroup, get, needs, post
from .views import IdentityView

IDENTIFY = needs("identity", "device identification is", "identify")
Type = Literal[("", *TYPES)]   # type: ignore[valid-type]


class Identity(IdentityView):
    """What the device is (the router's guess with its confidence and reasons, or the household's
    correction), and what it said about itself."""
    mac: str
    evidence: dict[str, str] = field(doc="what the device said about itself (docs/identify.md)")


class Joined(Identity):
    """The device after the join, and what the other components carried over to it."""
    carried: list[str] = field(doc="the settings carried from the device it was, in words "
                                   "(\"website rules\", \"priority\")")


class CorrectionBody(Model):
    usage = '{"type"?: "phone" | "laptop" | ..., "os"?: "...", "label"?: "..."}'
    type: Type = field(optional=True, doc="what kind of device it is ('' leaves the guess's)")
    os: str = field(optional=True, max_length=LABEL_MAX, enforce=False)
    label: str = field(optional=True, max_length=LABEL_MAX, enforce=False, example="Tom's iPhone")


class JoinBody(Model):
    usage = '{"as": "the MAC of the permitted device it looks like"}'
    as_: str = field(key="as", doc="the MAC of the device it looks like", example="02:68:77:01:00:01")


class Catalog(Model):
    """The fingerprint rules the router knows."""
    rules: int
    sources: dict[str, str] = field(doc="where the rules come from")


class StoryQuery(Model):
    extra = "ignore"
    format: Literal["", "json", "csv"] = field("", doc="csv: the story as CSV, one row per event")


class StoryApproved(Model):
    at: float
    by: str = field(doc="who let it in, in words ('' when not known)")


class StoryName(Model):
    name: str
    count: int


class StoryUsageSpan(Model):
    extra = "allow"
    words: str = field(doc="the amount in the household's words")


class StoryUsage(Model):
    today: StoryUsageSpan
    week: StoryUsageSpan


class StoryAlert(Model):
    at: float
    kind: str
    title: str
    detail: str


class StoryEvent(Model):
    extra = "allow"
    at: float
    kind: str = field(doc="first seen, joined, decision, place, alert")
    words: str


class Story(Model):
    """The device's story, oldest event first (docs/identify.md)."""
    mac: str
    name: str
    label: str
    state: str
    first_seen: float | None
    approved: StoryApproved | None
    places: list[str]
    names_today: list[StoryName] | None = field(doc="null when the names are not known (names_note says why)")
    names_note: str
    usage_: StoryUsage | None = field(key="usage", doc="null without the usage component")
    alerts: list[StoryAlert]
    events: list[StoryEvent]
    at: float


class IdentifyRoutes(RouteGroup):
    tag = "identify"

    @get("/identity/{mac}", Access.READ, "What the device is: the router's guess with its confidence and reasons, "
         "or the household's correction; and the evidence (read)", name="getIdentity", answer=Identity,
         needs=IDENTIFY, params={"mac": KNOWN_MAC}, errors={404: NOT_SEEN})
    def identity(self, call, mac):
        return self.api.command("identity", mac=mac)

    @post("/identity/{mac}", Access.ADMIN, "The household says what the device is (admin; never the device "
          "itself). Changes what the board calls it, never its access", name="correctIdentity",
          body=CorrectionBody, body_required=True, answer=Identity, needs=IDENTIFY, params={"mac": KNOWN_MAC},
          own_access="mac", errors={400: "an unknown type, an over-long label, or nothing said", 404: NOT_SEEN})
    def correct(self, call, mac, body):
        return self.api.command("identify-correct", mac=mac, **body.given_items())

    @post("/identity/{mac}/clear", Access.ADMIN, "Back to the router's guess (admin)", name="clearIdentity",
          answer=Identity, needs=IDENTIFY, params={"mac": KNOWN_MAC}, own_access="mac", errors={404: NOT_SEEN})
    def clear(self, call, mac):
        return self.api.command("identify-clear", mac=mac)

    @post("/identity/{mac}/join", Access.ADMIN, "Let a pending device with a new private address in as the "
          "permitted device it looks like (admin; a person's tap, never automatic): it takes that device's name, "
          "owner, type and decision; the old address is forgotten", name="joinIdentity", body=JoinBody,
          body_required=True, answer=Joined, needs=IDENTIFY, params={"mac": KNOWN_MAC}, own_access="mac",
          errors={404: NOT_SEEN, 409: "it does not look like that device (or is not pending with a private "
                                      "address)"})
    def join(self, call, mac, body):
        twin = self.api.known_mac(body.as_)
        self.api.not_self(call, twin)
        return self.api.command("identify-join", mac=mac, as_mac=twin)

    @get("/identity-catalog", Access.READ, "How many fingerprint rules the router has, and their sources (read)",
         name="getIdentityCatalog", answer=Catalog, needs=IDENTIFY)
    def catalog(self, call):
        return self.api.command("identify-catalog")

    @get("/identity/{mac}/story", Access.READ, "The device's story (read): first seen, who let it in and "
         "when, where it has been, the names it looked up most today, its usage today and this week, its "
         "alerts and its events; as CSV (one row per event) with format=csv", name="getStory", query=StoryQuery,
         answer=Story, also="text/csv", needs=IDENTIFY, params={"mac": KNOWN_MAC},
         errors={400: "format is neither json nor csv", 404: NOT_SEEN}, board="story")
    def story(self, call, mac, query):
        told = self.api.command("device-story", mac=mac, format=query.format or "json")
        if query.format != "csv":
            return told
        resp = Response(told["csv"], content_type="text/csv", charset="utf-8")
        resp.headers["Content-Disposition"] = f'attachment; filename="{told["filename"]}"'
        return resp
