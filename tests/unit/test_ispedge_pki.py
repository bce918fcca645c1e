"""The ISP edge's CA (ispedge/pki.py): the router's CertificateAuthority with the edge's
names. It signs a household router's request for that household only, and its TLS server
takes only clients it signed."""
import socket
import ssl
import stat
import threading

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from homework.pki import HouseholdCA
from ispedge.pki import EdgeCA, PkiError, household_of, make_request


def test_the_edge_ca_keeps_its_own_names_and_private_keys(tmp_path):
    ca = EdgeCA(tmp_path / "pki").ensure()
    assert [p.name for p in (ca.ca_key_path, ca.ca_cert_path, ca.key_path, ca.cert_path)] == \
        ["ca.key", "ca.crt", "edge.key", "edge.crt"]
    for key in (ca.ca_key_path, ca.key_path):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    edge = x509.load_pem_x509_certificate(ca.cert_path.read_bytes())
    assert edge.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "ispedge"
    assert edge.issuer.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "ISP edge"
    assert edge.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == \
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])
    assert EdgeCA(tmp_path / "pki").ensure().ca_pem() == ca.ca_pem()          # made once


def test_a_household_is_named_by_the_isp_and_bad_names_or_requests_are_refused(tmp_path):
    ca = EdgeCA(tmp_path).ensure()
    pem = ca.sign_household(make_request(tmp_path / "router.key"), "flat-7")
    cert = x509.load_pem_x509_certificate(pem.encode())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "ispedge-household flat-7"
    assert stat.S_IMODE((tmp_path / "router.key").stat().st_mode) == 0o600
    with pytest.raises(PkiError, match="not a household name"):
        ca.sign_household(make_request(tmp_path / "k2"), "Flat 7")
    with pytest.raises(PkiError, match="not a PEM certificate request"):
        ca.sign_household("hello", "flat-7")


def _handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext):
    """One TLS handshake over a socket pair: the server's view of the client's certificate,
    or the exception the server's side raised."""
    a, b = socket.socketpair()
    got: dict = {}

    def serve():
        try:
            with server_ctx.wrap_socket(a, server_side=True) as s:
                got["peer"] = s.getpeercert()
        except (ssl.SSLError, OSError) as exc:
            got["error"] = exc

    t = threading.Thread(target=serve)
    t.start()
    try:
        with client_ctx.wrap_socket(b) as c:
            c.recv(1)          # the server closes at once; TLS 1.3 reports a refusal only on read
    except (ssl.SSLError, OSError):
        pass
    t.join(30)
    return got.get("peer"), got.get("error")


def _client(tmp_path, ca: EdgeCA, cert_pem: str, key) -> ssl.SSLContext:
    (tmp_path / "client.crt").write_text(cert_pem)
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca.ca_cert_path))
    ctx.check_hostname = False
    ctx.load_cert_chain(str(tmp_path / "client.crt"), str(key))
    return ctx


def test_the_edge_serves_only_routers_it_signed_and_knows_which_household(tmp_path):
    ca = EdgeCA(tmp_path / "edge").ensure()
    key = tmp_path / "router.key"
    cert = ca.sign_household(make_request(key), "a")
    peer, error = _handshake(ca.server_context(), _client(tmp_path, ca, cert, key))
    assert error is None and household_of(peer) == "a"
    # a certificate from another CA (the household's own, for a satellite) does not get in
    other = HouseholdCA(tmp_path / "household").ensure()
    key2 = tmp_path / "sat.key"
    foreign = other.sign_client(make_request(key2), "ispedge-household a")
    peer, error = _handshake(ca.server_context(), _client(tmp_path, ca, foreign, key2))
    assert peer is None and isinstance(error, ssl.SSLError)
    assert household_of(None) is None and household_of({"subject": ((("commonName", "ispedge"),),)}) is None
