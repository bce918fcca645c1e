"""The household's certificate authority for satellite switches.

The controller makes it on first start, in the state directory: an EC P-256 key and a
self-signed CA certificate, and from it the controller's own TLS certificate. A satellite
makes its key itself (`ovs-pki req`: the key never leaves it) and hands over a
certificate request; pairing signs it for that satellite's datapath id, written into the
subject (CN "homework-satellite <16 hex digits>"). At the TLS handshake the controller
accepts only certificates this CA signed, and a satellite is driven only as the datapath
its certificate names, so a switch cannot pass itself off as another. No password ever
crosses the wire. Uses the `cryptography` package (Debian's python3-cryptography), which
the settings backup already relies on.

The one home of the project's certificate code: `CertificateAuthority` is the CA itself
(files, issuing, the TLS server's context), which the ISP edge's CA (ispedge/pki.py) is
too, with its own names."""
from __future__ import annotations

import datetime
import hashlib
import os
import re
import secrets
import ssl
from pathlib import Path
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SATELLITE_CN = re.compile(r"^homework-satellite ([0-9a-f]{16})$")
CONTROLLER_CN = "homework-controller"
CA_YEARS = 20
LEAF_YEARS = 10


class PkiError(ValueError):
    pass


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write(path: Path, data: bytes, private: bool) -> None:
    """Written whole or not at all (a power cut leaves the old file or the new one); a
    private key readable by its owner alone from the first byte."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def load_request(csr_pem: str) -> x509.CertificateSigningRequest:
    """A well-formed, self-consistent certificate request (PEM), or PkiError."""
    try:
        csr = x509.load_pem_x509_csr(str(csr_pem).encode())
    except ValueError as exc:
        raise PkiError(f"not a PEM certificate request: {exc}") from None
    if not csr.is_signature_valid:
        raise PkiError("the certificate request's signature is not valid")
    return csr


def make_request(key_path: Path, cn: str) -> str:
    """A new EC key at key_path (mode 600) and a certificate request for it (PEM): what a
    client hands the CA that is to sign it (the key never leaves it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    _write(Path(key_path), _pem_key(key), private=True)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    csr = x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, hashes.SHA256())
    return csr.public_bytes(serialization.Encoding.PEM).decode()


class CertificateAuthority:
    """An EC P-256 certificate authority kept in `directory`: ca.key and ca.crt, and its
    owner's own server certificate (SERVER_FILE.key, SERVER_FILE.crt), made once. It signs
    client certificates whose subject it names itself; the TLS server it gives accepts
    only clients it signed. The household's CA for satellites (HouseholdCA below) and the
    ISP edge's for households' routers (ispedge/pki.py) are two of these."""

    organization = "Homework household"
    ca_cn = "Homework household CA"
    server_cn = CONTROLLER_CN
    server_file = "controller"
    leaf_years = LEAF_YEARS

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.ca_key_path = self.dir / "ca.key"
        self.ca_cert_path = self.dir / "ca.crt"
        self.key_path = self.dir / f"{self.server_file}.key"
        self.cert_path = self.dir / f"{self.server_file}.crt"

    def _name(self, cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, self.organization),
                          x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def ensure(self) -> Self:
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if not (self.ca_key_path.exists() and self.ca_cert_path.exists()):
            key = ec.generate_private_key(ec.SECP256R1())
            name = self._name(self.ca_cn)
            cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                    .public_key(key.public_key()).serial_number(x509.random_serial_number())
                    .not_valid_before(_now() - datetime.timedelta(days=1))
                    .not_valid_after(_now() + datetime.timedelta(days=365 * CA_YEARS))
                    .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                    .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                 content_commitment=False, key_encipherment=False,
                                                 data_encipherment=False, key_agreement=False,
                                                 encipher_only=False, decipher_only=False), critical=True)
                    .sign(key, hashes.SHA256()))
            _write(self.ca_key_path, _pem_key(key), private=True)
            _write(self.ca_cert_path, cert.public_bytes(serialization.Encoding.PEM), private=False)
            for stale in (self.key_path, self.cert_path):     # signed by a CA that is gone
                stale.unlink(missing_ok=True)
        if not (self.key_path.exists() and self.cert_path.exists()):
            key = ec.generate_private_key(ec.SECP256R1())
            _write(self.key_path, _pem_key(key), private=True)
            _write(self.cert_path, self._issue(key.public_key(), self.server_cn, ExtendedKeyUsageOID.SERVER_AUTH)
                   .public_bytes(serialization.Encoding.PEM), private=False)
        return self

    def ca_pem(self) -> str:
        return self.ca_cert_path.read_text()

    def sign_client(self, csr_pem: str, cn: str) -> str:
        """A client certificate named `cn`, for the key in the request (PEM). The
        request's own subject is ignored: the name is the CA's to give."""
        cert = self._issue(load_request(csr_pem).public_key(), cn, ExtendedKeyUsageOID.CLIENT_AUTH)
        return cert.public_bytes(serialization.Encoding.PEM).decode()

    def _issue(self, public_key, cn: str, usage: x509.ObjectIdentifier) -> x509.Certificate:
        ca_key = serialization.load_pem_private_key(self.ca_key_path.read_bytes(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)      # the CA this class made
        ca_cert = x509.load_pem_x509_certificate(self.ca_cert_path.read_bytes())
        return (x509.CertificateBuilder().subject_name(self._name(cn)).issuer_name(ca_cert.subject)
                .public_key(public_key).serial_number(int.from_bytes(secrets.token_bytes(16), "big") >> 1)
                .not_valid_before(_now() - datetime.timedelta(days=1))
                .not_valid_after(_now() + datetime.timedelta(days=365 * self.leaf_years))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .sign(ca_key, hashes.SHA256()))

    def server_context(self) -> ssl.SSLContext:
        """The server's side of a TLS session: its own certificate, and a client
        certificate this CA signed required."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(str(self.cert_path), str(self.key_path))
        ctx.load_verify_locations(str(self.ca_cert_path))
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


class HouseholdCA(CertificateAuthority):
    """The household's CA for satellite switches: ca.key, ca.crt, controller.key and
    controller.crt in `directory`."""

    def sign_satellite(self, csr_pem: str, dpid: int) -> str:
        """A certificate for the satellite with this datapath id, for the key in the
        request (PEM)."""
        if not 0 < dpid < 1 << 64:
            raise PkiError(f"datapath id must be 1 to 16 hex digits, not zero: {dpid:x}")
        return self.sign_client(csr_pem, f"homework-satellite {dpid:016x}")


def satellite_dpid(cert_der: bytes | None) -> int | None:
    """The datapath id a peer certificate (DER, already verified by the TLS handshake)
    was issued for, or None if it is not a satellite certificate."""
    if not cert_der:
        return None
    try:
        cert = x509.load_der_x509_certificate(cert_der)
    except ValueError:
        return None
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    m = SATELLITE_CN.match(str(names[0].value)) if names else None
    return int(m.group(1), 16) if m else None


def certificate_serial(cert_pem: str) -> int:
    return x509.load_pem_x509_certificate(cert_pem.encode()).serial_number


def request_fingerprint(csr_pem: str) -> str:
    """SHA-256 (hex) of the request's public key, after checking it is a well-formed,
    self-consistent request: its first digits are the pairing code both ends show."""
    der = load_request(csr_pem).public_key().public_bytes(serialization.Encoding.DER,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def peer_identity(cert_der: bytes | None) -> tuple[int | None, int | None]:
    """(datapath id, serial) of a peer certificate the TLS handshake verified; (None, None)
    for none or one that is not a satellite's."""
    dpid = satellite_dpid(cert_der)
    if dpid is None or cert_der is None:
        return None, None
    return dpid, x509.load_der_x509_certificate(cert_der).serial_number


def client_context(ca_file: str, cert_file: str, key_file: str) -> ssl.SSLContext:
    """A satellite's side: its own certificate, and the router's checked against the
    household CA. The router is reached by address, so no host name is checked; the
    server-auth purpose is, so another satellite's (client-only) certificate cannot pose
    as the router."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    ctx.check_hostname = False
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx
