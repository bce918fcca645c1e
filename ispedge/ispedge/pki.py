"""The ISP's certificate authority for households' routers, the way the router pairs its
satellites: the router makes its own key and hands over a certificate request; the ISP
signs it for one household, named in the subject (CN "ispedge-household <name>"). The edge's
control interface accepts only TLS clients with a certificate this CA signed, and a client
speaks only for the household its certificate names. The CA itself (its files, issuing,
the TLS server's context) is the router's (nox-modules/homework/pki.py), with the edge's
names: one home for the project's certificate code."""
from __future__ import annotations

import re
from pathlib import Path

from homework import pki
from homework.pki import PkiError

__all__ = ["EdgeCA", "PkiError", "household_of", "make_request"]

HOUSEHOLD_CN = re.compile(r"^ispedge-household ([a-z0-9][a-z0-9-]{0,31})$")


def make_request(key_path: Path) -> str:
    """A new EC key at key_path (mode 600) and a certificate request for it (PEM): what a
    household's router hands its ISP."""
    return pki.make_request(key_path, "household router")


class EdgeCA(pki.CertificateAuthority):
    """ca.key, ca.crt, edge.key, edge.crt in `directory`, made once."""

    organization = "ISP edge"
    ca_cn = "ISP edge CA"
    server_cn = "ispedge"
    server_file = "edge"
    leaf_years = 5

    def sign_household(self, csr_pem: str, household: str) -> str:
        """A client certificate for the household's router, for the key in the request."""
        cn = f"ispedge-household {household}"
        if not HOUSEHOLD_CN.match(cn):
            raise PkiError(f"not a household name: {household!r}")
        return self.sign_client(csr_pem, cn)


def household_of(peer_cert: dict | None) -> str | None:
    """The household a verified peer certificate (ssl's getpeercert()) was issued for."""
    for rdn in (peer_cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                m = HOUSEHOLD_CN.match(value)
                if m:
                    return m.group(1)
    return None
