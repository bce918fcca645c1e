"""What each device is (components/identify) in the ws.v1 API:

    GET  /ws.v1/identity/{mac}              the guess (type, os, os_version, model, label, confidence,
                                            level, why) or the household's correction, and the evidence
    POST /ws.v1/identity/{mac}              {"type"?, "os"?, "label"?}: the household says what it is
    POST /ws.v1/identity/{mac}/clear        back to the router's guess
    POST /ws.v1/identity/{mac}/join         {"as": MAC}: a pending device with a new private address that
                                            looks like that permitted device is let in as it (409 when it
                                            does not look like it)
    GET  /ws.v1/identity-catalog            how many fingerprint rules, and their sources

A correction changes what the board calls the device, never its access: a guess decides
nothing. Still, a device may not correct itself (it would be telling the board what to
call it). A bad type or an over-long label is a 400 naming it; nothing is stored.
"""
from __future__ import annotations

from typing import Literal

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
          body_required=True, answer=Identity, needs=IDENTIFY, params={"mac": KNOWN_MAC}, own_access="mac",
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
