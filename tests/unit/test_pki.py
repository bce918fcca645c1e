"""The household CA: made once, signs a satellite's request for its datapath id
only, and the dpid is read back from a peer certificate."""
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from homework.pki import HouseholdCA, PkiError, satellite_dpid


def request(cn: str = "whatever the satellite says") -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])).sign(key, hashes.SHA256()))
    return csr.public_bytes(serialization.Encoding.PEM).decode()


def test_the_ca_is_made_once_with_private_keys_only_root_can_read(tmp_path):
    ca = HouseholdCA(tmp_path / "pki").ensure()
    first = ca.ca_pem()
    assert HouseholdCA(tmp_path / "pki").ensure().ca_pem() == first          # kept across restarts
    for key in (ca.ca_key_path, ca.key_path):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    controller = x509.load_pem_x509_certificate(ca.cert_path.read_bytes())
    assert controller.issuer == x509.load_pem_x509_certificate(first.encode()).subject


def test_a_request_is_signed_for_the_dpid_given_not_the_name_it_asks_for(tmp_path):
    ca = HouseholdCA(tmp_path).ensure()
    pem = ca.sign_satellite(request("homework-satellite 00000000000000ff"), 0xA1)
    cert = x509.load_pem_x509_certificate(pem.encode())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "homework-satellite 00000000000000a1"
    assert satellite_dpid(cert.public_bytes(serialization.Encoding.DER)) == 0xA1
    ca_cert = x509.load_pem_x509_certificate(ca.ca_pem().encode())
    assert cert.issuer == ca_cert.subject
    ca_cert.public_key().verify(cert.signature, cert.tbs_certificate_bytes,      # raises if not its signature
                                ec.ECDSA(cert.signature_hash_algorithm))


def test_bad_requests_and_foreign_certificates_are_refused(tmp_path):
    ca = HouseholdCA(tmp_path).ensure()
    with pytest.raises(PkiError, match="not a PEM certificate request"):
        ca.sign_satellite("hello", 0xA1)
    with pytest.raises(PkiError, match="not zero"):
        ca.sign_satellite(request(), 0)
    controller_der = x509.load_pem_x509_certificate(ca.cert_path.read_bytes()).public_bytes(serialization.Encoding.DER)
    assert satellite_dpid(controller_der) is None            # the controller's own is no satellite's
    assert satellite_dpid(None) is None and satellite_dpid(b"junk") is None
