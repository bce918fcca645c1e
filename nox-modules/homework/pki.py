"""The household's certificate authority for satellite switches.

The controller makes it on first start, in the state directory: an EC P-256 key and a
self-signed CA certificate, and from it the controller's own TLS certificate. A satellite
makes its key itself (`ovs-pki req`: the key never leaves it) and hands over a
certificate request; pairing signs it for that satellite's datapath id, written into the
subject (CN "homework-satellite <16 hex digits>"). At the TLS handshake the controller
accepts only certificates this CA signed, and a satellite is driven only as the datapath
its certificate names, so a switch cannot pass itself off as another. No password ever
crosses the wire. Uses the `cryptography` package (Debian's python3-cryptography), which
the settings backup already relies on."""
from __future__ import annotations

import datetime
import hashlib
import os
import re
import secrets
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SATELLITE_CN = re.compile(r"^homework-satellite ([0-9a-f]{16})$")
CONTROLLER_CN = "homework-controller"
CA_YEARS = 20
LEAF_YEARS = 10


class PkiError(ValueError):
    pass


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Homework household"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write_private(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _write_public(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class HouseholdCA:
    """ca.key, ca.crt, controller.key and controller.crt in `directory`, made once."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.ca_key_path = self.dir / "ca.key"
        self.ca_cert_path = self.dir / "ca.crt"
        self.key_path = self.dir / "controller.key"
        self.cert_path = self.dir / "controller.crt"

    def ensure(self) -> HouseholdCA:
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if not (self.ca_key_path.exists() and self.ca_cert_path.exists()):
            key = ec.generate_private_key(ec.SECP256R1())
            name = _name("Homework household CA")
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
            _write_private(self.ca_key_path, key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
            _write_public(self.ca_cert_path, cert.public_bytes(serialization.Encoding.PEM))
            for stale in (self.key_path, self.cert_path):     # signed by a CA that is gone
                stale.unlink(missing_ok=True)
        if not (self.key_path.exists() and self.cert_path.exists()):
            key = ec.generate_private_key(ec.SECP256R1())
            _write_private(self.key_path, key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
            _write_public(self.cert_path, self._issue(key.public_key(), CONTROLLER_CN, server=True)
                          .public_bytes(serialization.Encoding.PEM))
        return self

    def ca_pem(self) -> str:
        return self.ca_cert_path.read_text()

    def sign_satellite(self, csr_pem: str, dpid: int) -> str:
        """A certificate for the satellite with this datapath id, for the key in the
        request (PEM). The request's own subject is ignored: the name is ours to give."""
        if not 0 < dpid < 1 << 64:
            raise PkiError(f"datapath id must be 1 to 16 hex digits, not zero: {dpid:x}")
        try:
            csr = x509.load_pem_x509_csr(csr_pem.encode())
        except ValueError as exc:
            raise PkiError(f"not a PEM certificate request: {exc}") from None
        if not csr.is_signature_valid:
            raise PkiError("the certificate request's signature is not valid")
        cert = self._issue(csr.public_key(), f"homework-satellite {dpid:016x}", server=False)
        return cert.public_bytes(serialization.Encoding.PEM).decode()

    def _issue(self, public_key, cn: str, server: bool) -> x509.Certificate:
        ca_key = serialization.load_pem_private_key(self.ca_key_path.read_bytes(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)      # the CA this module made
        ca_cert = x509.load_pem_x509_certificate(self.ca_cert_path.read_bytes())
        usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH
        return (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca_cert.subject)
                .public_key(public_key).serial_number(int.from_bytes(secrets.token_bytes(16), "big") >> 1)
                .not_valid_before(_now() - datetime.timedelta(days=1))
                .not_valid_after(_now() + datetime.timedelta(days=365 * LEAF_YEARS))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .sign(ca_key, hashes.SHA256()))


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
    try:
        csr = x509.load_pem_x509_csr(str(csr_pem).encode())
    except ValueError as exc:
        raise PkiError(f"not a PEM certificate request: {exc}") from None
    if not csr.is_signature_valid:
        raise PkiError("the certificate request's signature is not valid")
    der = csr.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def peer_identity(cert_der: bytes | None) -> tuple[int | None, int | None]:
    """(datapath id, serial) of a peer certificate the TLS handshake verified; (None, None)
    for none or one that is not a satellite's."""
    dpid = satellite_dpid(cert_der)
    if dpid is None or cert_der is None:
        return None, None
    return dpid, x509.load_der_x509_certificate(cert_der).serial_number


def server_context(ca: HouseholdCA) -> ssl.SSLContext:
    """The controller's side of a satellite's TLS session (OpenFlow and the agent channel):
    the controller's certificate, and a peer certificate the household CA signed required."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(ca.cert_path), str(ca.key_path))
    ctx.load_verify_locations(str(ca.ca_cert_path))
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


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
