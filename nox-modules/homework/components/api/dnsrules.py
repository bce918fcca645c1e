"""Website (DNS) rules and a device's DNS mode (components/dns):

    POST /ws.v1/permit-dns/{mac}/{domain}   [{"schedule": "sun-thu 21:30-07:00"}]
    POST /ws.v1/deny-dns/{mac}/{domain}     [{"schedule": ...}]
    POST /ws.v1/remove-dns-rule/{mac}/{domain}
    GET  /ws.v1/dns-rules/{mac}             -> {"rules": [...], "mode"} ("modes" for the household)
    GET  /ws.v1/dns-mode/{mac}              -> {"mac", "mode"}
    POST /ws.v1/dns-mode/{mac}              {"mode": "allowlist" | "denylist"}

`household` in place of a MAC: the rules of every device.
"""
from __future__ import annotations

import re
from typing import Annotated, Literal

from .http import ApiError
from .model import Field, Model, field
from .routes import MAC_PATTERN, Access, Param, RouteGroup, get, needs, post
from .views import DnsRules

DOMAIN = re.compile(r"^(?=.{1,253}$)(\*\.)?([A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)"
                    r"(\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$")
DNS = needs("dns-rules", "DNS rules are", "dns")
DNS_MODE = needs("dns-mode", "DNS rules are", "dns")
NOT_SEEN = "no device with that MAC has been seen"


def read_domain(api, text: str) -> str:
    if not DOMAIN.match(text):
        raise ApiError(400, f"not a domain name: {text!r}")
    return text.lower().rstrip(".")


RULES_OWNER = Param(Annotated[str, Field(pattern=r"^([0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\2[0-9a-fA-F]{2}){4}"
                                                 r"|[Hh][Oo][Uu][Ss][Ee][Hh][Oo][Ll][Dd])$")],
                    "MAC address, ':' or '-' separated, or `household` for the household-wide rules",
                    read=lambda api, text: api.rules_owner(text), example="02:68:77:01:00:01")
DOMAIN_PARAM = Param(Annotated[str, Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?"
                                                  r"(\.[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?){1,3}$")],
                     "a domain name; a rule covers its subdomains (*.example.com too)", read=read_domain,
                     example="example.com")
KNOWN_MAC = Param(Annotated[str, Field(pattern=MAC_PATTERN)], "MAC address of a device the router has seen",
                  read=lambda api, text: api.known_mac(text), example="02:68:77:01:00:01")
RULE_PARAMS = {"mac": RULES_OWNER, "domain": DOMAIN_PARAM}


class RuleBody(Model):
    """When the rule counts (none: always)."""
    extra = "ignore"
    schedule: str | None = field(optional=True, doc="days and a window, e.g. 'sun-thu 21:30-07:00' or "
                                                    "'daily 00:00-24:00'", example="sun-thu 21:30-07:00")


class RuleChange(Model):
    """The rule as stored."""
    owner: str = field(doc="the device's MAC, or 'household'")
    action: Literal["allow", "deny"]
    domains: list[str]
    schedule: str = field(optional=True, doc="with a schedule: as stored")
    active: bool = field(optional=True, doc="with a schedule: whether it counts now")


class RuleRemoved(Model):
    removed: str = field(doc="the domain")
    owner: str


class DnsMode(Model):
    mac: str
    mode: Literal["denylist", "allowlist"]


class ModeBody(Model):
    usage = '{"mode": "allowlist" | "denylist"} and nothing else'
    mode: str = field(doc="allowlist (only its allowed names resolve) or denylist", example="allowlist")


class DnsRuleRoutes(RouteGroup):
    tag = "dns"

    def set_rule(self, command: str, mac: str, domain: str, body: RuleBody):
        extra = {"schedule": body.schedule} if body.schedule else {}
        return self.api.command(command, mac=mac, domain=domain, **extra)

    @post("/permit-dns/{mac}/{domain}", Access.ADMIN, "Permit access to domain d by client e", name="permit_dns",
          body=RuleBody, answer=RuleChange, own_access="mac", needs=DNS, params=RULE_PARAMS,
          errors={404: NOT_SEEN}, board="permitDns")
    def permit_dns(self, call, mac, domain, body):
        return self.set_rule("permit-dns", mac, domain, body)

    @post("/deny-dns/{mac}/{domain}", Access.ADMIN, "Deny access to domain d by client e", name="deny_dns",
          body=RuleBody, answer=RuleChange, own_access="mac", needs=DNS, params=RULE_PARAMS,
          errors={404: NOT_SEEN}, board="denyDns")
    def deny_dns(self, call, mac, domain, body):
        return self.set_rule("deny-dns", mac, domain, body)

    @post("/remove-dns-rule/{mac}/{domain}", Access.ADMIN, "Remove client e's rule for domain d",
          name="remove_dns_rule", answer=RuleRemoved, own_access="mac", needs=DNS, params=RULE_PARAMS,
          errors={404: NOT_SEEN}, board="removeDnsRule")
    def remove_dns_rule(self, call, mac, domain):
        return self.api.command("remove-dns-rule", mac=mac, domain=domain)

    @get("/dns-rules/{mac}", Access.READ, "Client e's DNS rules (its own, its owner's and the household's)",
         name="dns_rules", answer=DnsRules, needs=DNS, params={"mac": RULES_OWNER}, errors={404: NOT_SEEN})
    def dns_rules(self, call, mac):
        return self.api.command("dns-rules", mac=mac)

    @get("/dns-mode/{mac}", Access.READ, "A device's DNS mode (allowlist: only its allowed names resolve)",
         name="dns_mode", answer=DnsMode, needs=DNS_MODE, params={"mac": KNOWN_MAC}, errors={404: NOT_SEEN})
    def dns_mode(self, call, mac):
        return self.api.command("dns-mode", mac=mac)

    @post("/dns-mode/{mac}", Access.ADMIN, "Set a device's DNS mode (the CLI's dns-mode)", name="set_dns_mode",
          body=ModeBody, body_required=True, answer=DnsMode, own_access="mac", needs=DNS_MODE,
          params={"mac": KNOWN_MAC}, errors={404: NOT_SEEN})
    def set_dns_mode(self, call, mac, body):
        return self.api.command("dns-mode", mac=mac, mode=body.mode)
