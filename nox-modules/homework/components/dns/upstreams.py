"""Where the router's resolver asks: the household's choice of upstream resolvers.

    provider  "isp"        plain DNS to the resolvers of the WAN lease (the default until
                           the household picks; what every router does)
              "cloudflare", "quad9", "google"
                           that provider's resolvers over TLS (DNS over TLS, port 853),
                           each checked against the name its certificate must carry
              "custom"     the household's own list, ADDRESS[:PORT]#NAME each
    fallback  "plain"      while no encrypted resolver can be reached: plain DNS to the
                           WAN lease's resolvers, until one can be reached again
              "none"       while none can be reached, names do not resolve (nothing goes
                           out unencrypted)

Stored as JSON in dns_options under "upstream"; `parse_upstream` is the one validator the
API, the CLI and a restored backup go through.
"""
from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass

KEY_UPSTREAM = "upstream"
DOT_PORT = 853
MAX_SERVERS = 8
PROVIDERS = ("isp", "cloudflare", "quad9", "google", "custom")
FALLBACKS = ("plain", "none")
NAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


@dataclass(frozen=True)
class TlsServer:
    address: str
    name: str                   # what its certificate must say
    port: int = DOT_PORT

    def text(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}{'' if self.port == DOT_PORT else f':{self.port}'}#{self.name}"


PRESETS: dict[str, tuple[str, tuple[TlsServer, ...]]] = {
    "cloudflare": ("Cloudflare (1.1.1.1)", tuple(TlsServer(a, "cloudflare-dns.com") for a in (
        "1.1.1.1", "1.0.0.1", "2606:4700:4700::1111", "2606:4700:4700::1001"))),
    "quad9": ("Quad9 (9.9.9.9, blocks known malware domains)", tuple(TlsServer(a, "dns.quad9.net") for a in (
        "9.9.9.9", "149.112.112.112", "2620:fe::fe", "2620:fe::9"))),
    "google": ("Google Public DNS (8.8.8.8)", tuple(TlsServer(a, "dns.google") for a in (
        "8.8.8.8", "8.8.4.4", "2001:4860:4860::8888", "2001:4860:4860::8844"))),
}


class UpstreamError(ValueError):
    pass


@dataclass(frozen=True)
class Upstream:
    provider: str = "isp"
    servers: tuple[TlsServer, ...] = ()      # custom only; presets come from PRESETS
    fallback: str = "plain"
    chosen: bool = False                     # has the household picked (else: the default)

    @property
    def encrypted(self) -> bool:
        return self.provider != "isp"

    def tls_servers(self) -> tuple[TlsServer, ...]:
        return PRESETS[self.provider][1] if self.provider in PRESETS else self.servers

    def label(self) -> str:
        if self.provider == "isp":
            return "your internet provider's resolvers (plain DNS)"
        if self.provider in PRESETS:
            return PRESETS[self.provider][0] + " over TLS"
        return "the resolvers you gave, over TLS"

    def as_dict(self) -> dict:
        return {"provider": self.provider, "servers": [s.text() for s in self.tls_servers()],
                "fallback": self.fallback, "chosen": self.chosen}

    def stored(self) -> str:
        return json.dumps({"provider": self.provider, "servers": [s.text() for s in self.servers],
                           "fallback": self.fallback})


def parse_server(text) -> TlsServer:
    """'9.9.9.9#dns.quad9.net', '[2620:fe::fe]:853#dns.quad9.net' -> TlsServer."""
    if not isinstance(text, str) or "#" not in text:
        raise UpstreamError(f"an encrypted resolver is ADDRESS#NAME (the name its certificate carries, e.g. "
                            f"9.9.9.9#dns.quad9.net), not {text!r}")
    where, _, name = text.strip().rpartition("#")
    name = name.strip().lower().rstrip(".")
    if not NAME.match(name):
        raise UpstreamError(f"{name!r} is not a host name for the certificate check")
    port = DOT_PORT
    if where.startswith("["):
        host, _, rest = where[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                raise UpstreamError(f"cannot read {where!r}: expected [IPv6]:PORT")
            port = _port(rest[1:])
    elif where.count(":") == 1:
        host, _, port_text = where.partition(":")
        port = _port(port_text)
    else:
        host = where
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise UpstreamError(f"{host!r} is not an IP address (the resolver is asked by address; "
                            "its name is what its certificate is checked for)") from None
    if address.is_loopback or address.is_unspecified or address.is_multicast:
        raise UpstreamError(f"{address} cannot be an upstream resolver")
    return TlsServer(str(address), name, port)


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise UpstreamError(f"{text!r} is not a port number")
    return int(text)


def parse_upstream(value, chosen: bool = True) -> Upstream:
    """The setting from the API/CLI (a dict) or from state.db/a backup (its JSON text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise UpstreamError("the upstream setting is not valid JSON") from None
    if not isinstance(value, dict):
        raise UpstreamError("the upstream setting is an object: {provider, servers?, fallback?}")
    unknown = set(value) - {"provider", "servers", "fallback", "chosen"}
    if unknown:
        raise UpstreamError(f"unknown field(s) {', '.join(sorted(unknown))} (known: provider, servers, fallback)")
    provider = value.get("provider", "isp")
    if provider not in PROVIDERS:
        raise UpstreamError(f"provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")
    fallback = value.get("fallback", "plain")
    if fallback not in FALLBACKS:
        raise UpstreamError(f"fallback must be 'plain' (your provider's resolvers while the encrypted ones "
                            f"cannot be reached) or 'none', not {fallback!r}")
    servers = value.get("servers") or []
    if isinstance(servers, str):
        servers = [s for s in re.split(r"[\s,]+", servers) if s]
    if not isinstance(servers, list):
        raise UpstreamError("servers must be a list of ADDRESS#NAME")
    if provider == "custom":
        if not servers:
            raise UpstreamError("a custom choice needs at least one resolver, ADDRESS#NAME")
        if len(servers) > MAX_SERVERS:
            raise UpstreamError(f"at most {MAX_SERVERS} resolvers")
        parsed = tuple(dict.fromkeys(parse_server(s) for s in servers))
    elif servers:
        raise UpstreamError(f"servers are given only with provider 'custom' ({provider!r} has its own)")
    else:
        parsed = ()
    return Upstream(provider, parsed, fallback, chosen)
