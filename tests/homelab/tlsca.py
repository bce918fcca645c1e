"""A test certificate authority for the emulated home: certificates of servers on the
emulated internet (its encrypted DNS resolver) that the router is told to trust
([dns] tls_ca_file), as the real router trusts the public CAs. Uses the `cryptography`
package (Debian's python3-cryptography), which the controller already relies on."""
from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class TestCA:
    def __init__(self, directory: Path, name: str = "Emulated internet test CA"):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(_now() - datetime.timedelta(hours=1))
                     .not_valid_after(_now() + datetime.timedelta(days=7))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.path = directory / "test-ca.pem"
        self.path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, stem: str, names: list[str]) -> tuple[Path, Path]:
        """A server certificate for `names` (host names and IP addresses): (cert, key) files."""
        key = ec.generate_private_key(ec.SECP256R1())
        sans = []
        for n in names:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(n)))
            except ValueError:
                sans.append(x509.DNSName(n))
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
                .issuer_name(self.name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(_now() - datetime.timedelta(hours=1))
                .not_valid_after(_now() + datetime.timedelta(days=7))
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .sign(self.key, hashes.SHA256()))
        cert_path, key_path = self.directory / f"{stem}.crt", self.directory / f"{stem}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        key_path.chmod(0o600)
        return cert_path, key_path
