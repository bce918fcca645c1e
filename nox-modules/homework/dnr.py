"""The router's encrypted DNS announced the way phones and laptops look for it without
asking first (RFC 9463, Discovery of Network-designated Resolvers): DHCPv4 option 162,
DHCPv6 option 144 and the Router Advertisement option 144. Each lists the router's
DNS-over-TLS and DNS-over-HTTPS endpoints (the same as homework-dnsd's DDR answer,
dnsd/src/ddr.rs): the router's name ([dns] resolver_name, the name of its certificate),
the device's own gateway address, and the service parameters of RFC 9460 (alpn, port,
dohpath). Pure encoding; the DHCP server and the Router Advertisements add the options.
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

OPT_V4_DNR = 162
OPT_V6_DNR = 144
RA_OPT_DNR = 144
KEY_ALPN, KEY_PORT, KEY_DOHPATH = 1, 3, 7
DOH_PATH = "/dns-query{?dns}"


def _name(name: str) -> bytes:
    out = b""
    for label in name.strip(".").split("."):
        raw = label.encode("ascii")
        if not 0 < len(raw) < 64:
            raise ValueError(f"bad name {name!r}")
        out += bytes([len(raw)]) + raw
    return out + b"\0"


def _param(key: int, value: bytes) -> bytes:
    return struct.pack("!HH", key, len(value)) + value


@dataclass(frozen=True)
class Endpoints:
    name: str                 # the router's name (ADN), e.g. "homework.home.arpa"
    dot: bool                 # DNS over TLS, port 853
    doh: bool                 # DNS over HTTPS, port 443, /dns-query

    @classmethod
    def of(cls, config) -> Endpoints | None:
        """What [dns] says the router serves; None when it serves no encrypted DNS."""
        dot = bool(config.dns_dot_listen and config.dns_tls_cert and config.dns_tls_key)
        doh = bool(config.dns_doh_socket)
        return cls(config.dns_resolver_name.strip(".").lower(), dot, doh) if dot or doh else None

    def instances(self) -> list[tuple[int, bytes]]:
        """(service priority, SvcParams) of each endpoint: DoT first."""
        out = []
        if self.dot:
            out.append(_param(KEY_ALPN, b"\x03dot") + _param(KEY_PORT, struct.pack("!H", 853)))
        if self.doh:
            out.append(_param(KEY_ALPN, b"\x02h2") + _param(KEY_PORT, struct.pack("!H", 443))
                       + _param(KEY_DOHPATH, DOH_PATH.encode()))
        return list(enumerate(out, start=1))

    def dhcpd_args(self) -> list[str]:
        """homework-dhcpd's `--dnr PRIORITY:ADN:PARAMS` (hex) per endpoint: it builds option
        162 the same way, with each device's gateway (dhcpd/src/dhcp.rs dnr_value)."""
        adn = _name(self.name).hex()
        return [a for priority, params in self.instances() for a in ("--dnr", f"{priority}:{adn}:{params.hex()}")]

    def v4_option(self, router: str) -> list[tuple[int, bytes]]:
        """DHCPv4 option 162 (RFC 9463 5.1): the instances in one option value, as a
        (code, value) pair for message.build (which splits a value past 255 bytes into
        repeated options, RFC 3396)."""
        adn, addr = _name(self.name), ipaddress.IPv4Address(router).packed
        value = b""
        for priority, params in self.instances():
            data = struct.pack("!HB", priority, len(adn)) + adn + bytes([len(addr)]) + addr + params
            value += struct.pack("!H", len(data)) + data
        return [(OPT_V4_DNR, value)]

    def v6_options(self, router: ipaddress.IPv6Address) -> bytes:
        """DHCPv6 option 144 (RFC 9463 5.2), one per instance, code and length included."""
        adn = _name(self.name)
        out = b""
        for priority, params in self.instances():
            body = struct.pack("!HH", priority, len(adn)) + adn + struct.pack("!H", 16) + router.packed + params
            out += struct.pack("!HH", OPT_V6_DNR, len(body)) + body
        return out

    def ra_options(self, router: ipaddress.IPv6Address, lifetime: int) -> bytes:
        """Router Advertisement option 144 (RFC 9463 6.1), one per instance, padded to 8 octets."""
        adn = _name(self.name)
        out = b""
        for priority, params in self.instances():
            body = (struct.pack("!HIH", priority, lifetime, len(adn)) + adn + struct.pack("!H", 16) + router.packed
                    + struct.pack("!H", len(params)) + params)
            body += b"\0" * (-(2 + len(body)) % 8)
            out += struct.pack("!BB", RA_OPT_DNR, (2 + len(body)) // 8) + body
        return out
