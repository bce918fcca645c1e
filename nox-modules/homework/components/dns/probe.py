"""Looks the controller takes at the resolver's upstreams (blocking network calls: the dns
component runs them off the event loop), with dnspython (Debian's python3-dnspython):

  - can each encrypted upstream be reached over TLS, its certificate valid for the name
    the household gave, and does it answer DNS? (the settings page's status, and when the
    household's fallback applies);
  - do the WAN lease's resolvers pass DNSSEC signatures on? Asked directly, for the
    trust anchor's keys: a resolver that strips them (or refuses DNSSEC questions) would
    make every answer fail validation.
"""
from __future__ import annotations

import errno
import ssl
import time
from dataclasses import dataclass

from .upstreams import TlsServer

TIMEOUT = 3.0


@dataclass(frozen=True)
class Reach:
    server: str              # as the household wrote it: ADDRESS#NAME
    ok: bool
    rtt_ms: float = 0.0
    why: str = ""            # a sentence's end: "9.9.9.9 ..." + why

    def as_dict(self) -> dict:
        return {"server": self.server, "reachable": self.ok,
                **({"rtt_ms": round(self.rtt_ms, 1)} if self.ok else {"why": self.why})}


def tls_context(ca_file: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file or None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def _dns():
    """dnspython, imported when first needed: its query module pulls in an HTTP stack
    (~0.7 s here), which the controller's start need not wait for."""
    import dns.exception
    import dns.flags
    import dns.message
    import dns.query
    import dns.rdatatype
    return dns


def tls_reach(server: TlsServer, ca_file: str, timeout: float = TIMEOUT) -> Reach:
    """One DNS question to `server` over TLS, its certificate checked for server.name."""
    dns = _dns()
    query = dns.message.make_query(".", dns.rdatatype.NS)
    t0 = time.monotonic()
    try:
        dns.query.tls(query, server.address, timeout=timeout, port=server.port,
                      ssl_context=tls_context(ca_file), server_hostname=server.name)
    except ssl.SSLCertVerificationError as exc:
        if exc.verify_code == 62:       # X509_V_ERR_HOSTNAME_MISMATCH
            why = f"presents a certificate that is not for {server.name}"
        else:
            why = f"presents a certificate this router does not trust ({exc.verify_message})"
        return Reach(server.text(), False, why=why)
    except (dns.exception.Timeout, TimeoutError):
        return Reach(server.text(), False, why=f"does not answer on port {server.port} within {timeout:.0f} s")
    except ConnectionRefusedError:
        return Reach(server.text(), False, why=f"refuses connections on port {server.port}")
    except ssl.SSLError as exc:
        return Reach(server.text(), False, why=f"failed the TLS handshake ({exc.reason or exc})")
    except OSError as exc:
        if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL):
            return Reach(server.text(), False, why="cannot be reached from here (no route: is the internet "
                                                   "connection up, and does it have IPv6 for an IPv6 address?)")
        return Reach(server.text(), False, why=f"cannot be reached ({exc.strerror or exc})")
    except dns.exception.DNSException as exc:
        return Reach(server.text(), False, why=f"answered with something that is not DNS ({exc})")
    return Reach(server.text(), True, rtt_ms=(time.monotonic() - t0) * 1000)


def signatures_pass(servers: tuple[str, ...], zone: str, timeout: float = TIMEOUT) -> bool | None:
    """Do these plain DNS resolvers (the WAN lease's) give `zone`'s DNSKEY records with
    their signatures? True if one does; False if they answer without them, or refuse (such
    a resolver cannot support validation); None if none answers at all (the line is down:
    nothing to conclude)."""
    dns = _dns()
    query = dns.message.make_query(zone, dns.rdatatype.DNSKEY, want_dnssec=True)
    query.flags |= dns.flags.CD
    answered = False
    for server in servers:
        try:
            answer = dns.query.udp(query, server, timeout=timeout)
            if answer.flags & dns.flags.TC:
                answer = dns.query.tcp(query, server, timeout=timeout)
        except (dns.exception.DNSException, OSError):
            continue
        answered = True
        types = {rrset.rdtype for rrset in answer.answer}
        if answer.rcode() == 0 and dns.rdatatype.RRSIG in types and dns.rdatatype.DNSKEY in types:
            return True
    return False if answered else None


def anchor_zone(trust_anchor_file: str) -> str:
    """The zone whose keys the trust anchor holds: the root's, or the owner of the first
    record in the file ([dns] trust_anchor)."""
    if not trust_anchor_file:
        return "."
    try:
        with open(trust_anchor_file) as fh:
            for line in fh:
                words = line.split()
                if words and not words[0].startswith((";", "$")):
                    return words[0]
    except OSError:
        pass
    return "."
