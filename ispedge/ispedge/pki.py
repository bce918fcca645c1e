"""The ISP's certificate authority for households' routers, the way the router pairs its
satellites: the router makes its own key and hands over a certificate request; the ISP
signs it for one household, named in the subject (CN "ispedge-household <name>"). The edge's
control interface accepts only TLS clients with a certificate this CA signed, and a client
speaks only for the household its certificate names. Uses `cryptography` (Debian's
python3-cryptography)."""
from __future__ import annotations

import datetime
import os
import re
import secrets
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HOUSEHOLD_CN = re.compile(r"^ispedge-household ([a-z0-9][a-z0-9-]{0,31})$")
EDGE_CN = "ispedge"


class PkiError(ValueError):
    pass


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ISP edge"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(path: Path, data: bytes, private: bool) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_request(key_path: Path) -> str:
    """A new EC key at key_path (mode 600) and a certificate request for it (PEM): what a
    household's router hands its ISP."""
    key = ec.generate_private_key(ec.SECP256R1())
    _write(Path(key_path), _pem_key(key), private=True)
    csr = x509.CertificateSigningRequestBuilder().subject_name(_name("household router")).sign(key, hashes.SHA256())
    return csr.public_bytes(serialization.Encoding.PEM).decode()


class EdgeCA:
    """ca.key, ca.crt, edge.key, edge.crt in `directory`, made once."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.ca_key_path, self.ca_cert_path = self.dir / "ca.key", self.dir / "ca.crt"
        self.key_path, self.cert_path = self.dir / "edge.key", self.dir / "edge.crt"

    def ensure(self) -> EdgeCA:
        self.dir.mkdir(parents=True, exist_ok=True)
        if not (self.ca_key_path.exists() and self.ca_cert_path.exists()):
            key = ec.generate_private_key(ec.SECP256R1())
            name = _name("ISP edge CA")
            cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                    .public_key(key.public_key()).serial_number(x509.random_serial_number())
                    .not_valid_before(_now() - datetime.timedelta(days=1))
                    .not_valid_after(_now() + datetime.timedelta(days=365 * 20))
                    .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                    .sign(key, hashes.SHA256()))
            _write(self.ca_key_path, _pem_key(key), private=True)
            _write(self.ca_cert_path, cert.public_bytes(serialization.Encoding.PEM), private=False)
            self.key_path.unlink(missing_ok=True)
        if not (self.key_path.exists() and self.cert_path.exists()):
            key = ec.generate_private_key(ec.SECP256R1())
            _write(self.key_path, _pem_key(key), private=True)
            _write(self.cert_path, self._issue(key.public_key(), EDGE_CN, ExtendedKeyUsageOID.SERVER_AUTH)
                   .public_bytes(serialization.Encoding.PEM), private=False)
        return self

    def sign_household(self, csr_pem: str, household: str) -> str:
        """A client certificate for the household's router, for the key in the request;
        the request's own subject is ignored (the name is the ISP's to give)."""
        if not HOUSEHOLD_CN.match(f"ispedge-household {household}"):
            raise PkiError(f"not a household name: {household!r}")
        try:
            csr = x509.load_pem_x509_csr(csr_pem.encode())
        except ValueError as exc:
            raise PkiError(f"not a PEM certificate request: {exc}") from None
        if not csr.is_signature_valid:
            raise PkiError("the certificate request's signature is not valid")
        cert = self._issue(csr.public_key(), f"ispedge-household {household}", ExtendedKeyUsageOID.CLIENT_AUTH)
        return cert.public_bytes(serialization.Encoding.PEM).decode()

    def _issue(self, public_key, cn: str, usage) -> x509.Certificate:
        ca_key = serialization.load_pem_private_key(self.ca_key_path.read_bytes(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        ca = x509.load_pem_x509_certificate(self.ca_cert_path.read_bytes())
        return (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject)
                .public_key(public_key).serial_number(int.from_bytes(secrets.token_bytes(16), "big") >> 1)
                .not_valid_before(_now() - datetime.timedelta(days=1))
                .not_valid_after(_now() + datetime.timedelta(days=365 * 5))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .sign(ca_key, hashes.SHA256()))

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(str(self.cert_path), str(self.key_path))
        ctx.load_verify_locations(str(self.ca_cert_path))
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


def household_of(peer_cert: dict | None) -> str | None:
    """The household a verified peer certificate (ssl's getpeercert()) was issued for."""
    for rdn in (peer_cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                m = HOUSEHOLD_CN.match(value)
                if m:
                    return m.group(1)
    return None
