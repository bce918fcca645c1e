"""The resolver behind homework-dnsd in the ws.v1 API (components/dns/resolver.py):

    GET  /ws.v1/dns/dnssec                          {"enabled", "insecure": [domains], "running", "error"?}
    POST /ws.v1/dns/dnssec {enabled}                validation on or off (admin)
    POST /ws.v1/dns/dnssec/insecure {domain}        validation off for one domain (admin)
    POST /ws.v1/dns/dnssec/insecure/{domain}/remove
    GET  /ws.v1/dns/upstream                        where names are looked up, and whether that works
    POST /ws.v1/dns/upstream {provider, servers?, fallback?}   (admin; upstreams.py says what is allowed)

Every route calls a controller command, as `homework dnssec ...` and `homework
dns-upstream ...` do.
"""
from __future__ import annotations

from typing import Any, Literal

from .model import Model, field
from .routes import Access, Param, RouteGroup, get, needs, post

RESOLVER = needs("dnssec", "The resolver's settings are", "dns")
INSECURE_DOMAIN = Param(str, "a domain whose validation is off", example="broken.example")


class Dnssec(Model):
    """DNSSEC validation: the household's setting, and what the resolver does."""
    enabled: bool = field(doc="DNSSEC validation of every answer devices get (the household's setting)")
    validating: bool = field(optional=True, doc="validating now (false while the upstreams strip signatures: "
                                                "see message)")
    message: str = field(optional=True)
    insecure: list[str] = field(doc="domains whose validation is off (negative trust anchors)")
    validator: str = field(optional=True)
    running: bool = field(doc="the resolver answered the last change (false: it applies when the resolver starts)")
    error: str = field(optional=True)


class DnssecBody(Model):
    usage = '{"enabled": true | false}'
    enabled: bool


class InsecureBody(Model):
    usage = '{"domain": "a domain name"}'
    domain: str = field(min_length=1, example="broken.example")


class ServerStatus(Model):
    server: str
    reachable: bool = field(optional=True)
    rtt_ms: float | None = field(optional=True)
    why: str = field(optional=True)


class Upstream(Model):
    """Where names are looked up (plain DNS to the internet provider, or resolvers over TLS), and whether that
    works."""
    provider: Literal["isp", "cloudflare", "quad9", "google", "custom"]
    servers: list[str] = field(doc="ADDRESS#NAME of each encrypted resolver (its certificate must be for NAME)")
    fallback: Literal["plain", "none"]
    chosen: bool = field(doc="false: the default (plain DNS to the internet provider), nobody has chosen yet")
    label: str = field(optional=True)
    plain: bool = field(optional=True, doc="names are looked up in plain DNS now")
    state: Literal["plain", "checking", "encrypted", "fallback", "unreachable"]
    message: str = field(doc="what happens, in a sentence for the household")
    servers_status: list[ServerStatus] = field(optional=True)
    checked: float = field(optional=True, doc="when the upstreams were last looked at (epoch seconds; 0: not yet)")
    running: bool = field(optional=True)
    error: str = field(optional=True)


class UpstreamBody(Model):
    usage = '{"provider": "isp" | "cloudflare" | "quad9" | "google" | "custom", "servers"?: [...], "fallback"?}'
    provider: str = field(min_length=1, doc="isp, cloudflare, quad9, google or custom", example="quad9")
    servers: Any = field(optional=True, doc="with custom: ADDRESS#NAME of each resolver",
                         example=["9.9.9.9#dns.quad9.net"])
    fallback: str | None = field(optional=True, doc="plain or none: what happens when none answers")


class ResolverRoutes(RouteGroup):
    tag = "dns"

    @get("/dns/dnssec", Access.READ, "DNSSEC validation: on or off, and the domains it is off for (read)",
         name="getDnssec", answer=Dnssec, needs=RESOLVER, board="dnssec")
    def dnssec(self, call):
        return self.api.command("dnssec")

    @post("/dns/dnssec", Access.ADMIN, "Turn DNSSEC validation on or off (admin)", name="setDnssec",
          body=DnssecBody, body_required=True, answer=Dnssec, needs=RESOLVER)
    def set_dnssec(self, call, body):
        return self.api.command("dnssec", enabled=body.enabled)

    @post("/dns/dnssec/insecure", Access.ADMIN, "Turn validation off for one domain whose signatures are broken "
          "(a negative trust anchor; admin)", name="addDnssecInsecure", body=InsecureBody, body_required=True,
          answer=Dnssec, needs=RESOLVER, errors={400: "not a domain name, or too many"})
    def insecure_add(self, call, body):
        return self.api.command("dnssec-insecure-add", domain=body.domain)

    @post("/dns/dnssec/insecure/{domain}/remove", Access.ADMIN, "Validate a domain again (admin)",
          name="removeDnssecInsecure", answer=Dnssec, needs=RESOLVER, params={"domain": INSECURE_DOMAIN},
          errors={400: "not a domain without validation"})
    def insecure_remove(self, call, domain):
        return self.api.command("dnssec-insecure-remove", domain=domain)

    @get("/dns/upstream", Access.READ, "Where the router looks names up (plain DNS to the internet provider, or "
         "resolvers over TLS) and whether that works (read)", name="getDnsUpstream", answer=Upstream,
         needs=RESOLVER, board="dnsUpstream")
    def upstream(self, call):
        return self.api.command("dns-upstream")

    @post("/dns/upstream", Access.ADMIN, "Choose where names are looked up (admin): provider isp, cloudflare, "
          "quad9, google, or custom with servers; fallback plain or none", name="setDnsUpstream",
          body=UpstreamBody, body_required=True, answer=Upstream, needs=RESOLVER,
          errors={400: "an unknown provider or fallback, a server that is not ADDRESS#NAME"})
    def set_upstream(self, call, body):
        return self.api.command("dns-upstream", **body.given_items())
