"""The household's choice of upstream resolvers (components/dns/upstreams.py), what the
resolver does with it (resolver.py: plan, fallback, validation paused when signatures
are stripped), and the looks at the upstreams (probe.py) against a local DNS-over-TLS
server with a certificate of a test CA."""
from __future__ import annotations

import datetime
import json
import socket
import ssl
import struct
import threading

import dns.message
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from homework import unbound
from homework.components.dns import probe
from homework.components.dns.probe import Reach
from homework.components.dns.resolver import Resolver, SettingError
from homework.components.dns.upstreams import TlsServer, UpstreamError, parse_server, parse_upstream
from homework.config import Config
from homework.state import StateStore


# -- the setting ------------------------------------------------------------------------------
def test_servers_are_address_and_certificate_name():
    assert parse_server("9.9.9.9#dns.quad9.net") == TlsServer("9.9.9.9", "dns.quad9.net", 853)
    assert parse_server("[2620:fe::fe]:8853#Dns.Quad9.Net.") == TlsServer("2620:fe::fe", "dns.quad9.net", 8853)
    assert parse_server("192.0.2.1:853#a.example").text() == "192.0.2.1#a.example"
    for bad, why in (("9.9.9.9", "ADDRESS#NAME"), ("dns.quad9.net#dns.quad9.net", "not an IP address"),
                     ("9.9.9.9#bad name", "not a host name"), ("127.0.0.1#x.example", "cannot be an upstream"),
                     ("1.2.3.4:99999#x.example", "not a port")):
        with pytest.raises(UpstreamError, match=why):
            parse_server(bad)


def test_the_choice_is_checked_whole():
    up = parse_upstream({"provider": "quad9", "fallback": "none"})
    assert up.encrypted and up.fallback == "none" and up.tls_servers()[0] == TlsServer("9.9.9.9", "dns.quad9.net")
    custom = parse_upstream({"provider": "custom", "servers": "192.0.2.53#dns.example, 192.0.2.54#dns.example"})
    assert [s.address for s in custom.tls_servers()] == ["192.0.2.53", "192.0.2.54"]
    assert parse_upstream(custom.stored()) == custom, "what is stored reads back the same"
    assert not parse_upstream({}).encrypted
    for bad, why in (({"provider": "opendns"}, "provider must be"), ({"provider": "custom"}, "at least one"),
                     ({"provider": "quad9", "servers": ["1.2.3.4#x.example"]}, "only with provider 'custom'"),
                     ({"provider": "isp", "fallback": "maybe"}, "fallback must be"), ({"colour": 1}, "unknown field"),
                     ("[1,2]", "is an object"), ("{", "not valid JSON")):
        with pytest.raises(UpstreamError, match=why):
            parse_upstream(bad)


# -- the resolver follows it --------------------------------------------------------------------
class FakeUnbound:
    def __init__(self):
        self.commands = []

    def __call__(self, path, command):
        self.commands.append(command)
        return "ok\n"


@pytest.fixture
def resolver(tmp_path):
    (tmp_path / "resolv").write_text("nameserver 192.0.2.53\n")
    config = Config(state_dir=tmp_path, dns_resolv_file=str(tmp_path / "resolv"), dns_resolver_user="")
    r = Resolver(config, StateStore(config.state_db), control=FakeUnbound())
    r.apply(r.load())
    return r


def household(r):
    return (unbound.resolver_dir(r.config) / "household.conf").read_text()


OK = Reach("9.9.9.9#dns.quad9.net", True, rtt_ms=12)
DOWN = Reach("9.9.9.9#dns.quad9.net", False, why="does not answer on port 853 within 3 s")


def test_until_the_household_picks_it_is_plain_dns_to_the_isp_and_says_so(resolver):
    view = resolver.upstream_view()
    assert (view["provider"], view["chosen"], view["state"]) == ("isp", False, "plain")
    assert "anyone on the way can read" in view["message"]


def test_an_encrypted_choice_forwards_over_tls_with_the_names_checked(resolver):
    resolver.apply(resolver.set_upstream({"provider": "quad9"}))
    text = household(resolver)
    assert "forward-tls-upstream: yes" in text and "forward-addr: 9.9.9.9@853#dns.quad9.net" in text
    assert resolver.upstream_view()["state"] == "checking"
    assert resolver.observe((OK,), True, 100.0) is None, "reachable: nothing changes"
    view = resolver.upstream_view()
    assert view["state"] == "encrypted" and "nobody on the way can read" in view["message"]
    assert json.loads(resolver.options.get("upstream"))["provider"] == "quad9"


def test_unreachable_with_the_plain_fallback_goes_plain_and_back(resolver):
    resolver.apply(resolver.set_upstream({"provider": "quad9", "fallback": "plain"}))
    change = resolver.observe((DOWN,), None, 100.0)
    assert change is not None and "forward-addr: 192.0.2.53@53" in change.household
    resolver.apply(change)
    view = resolver.upstream_view()
    assert view["state"] == "fallback" and "does not answer on port 853" in view["message"]
    assert "in plain DNS until it can, as you chose" in view["message"]
    change = resolver.observe((OK,), None, 130.0)
    assert change is not None and "forward-tls-upstream: yes" in change.household
    assert change.commands == ("reload-if-changed", "flush_infra all"), "unbound asks it again at once"


def test_a_new_choice_makes_unbound_forget_the_old_one_s_failures(resolver):
    resolver.apply(resolver.set_upstream({"provider": "custom", "servers": ["192.0.2.99#wrong.example"],
                                          "fallback": "none"}))
    resolver.apply(resolver.set_upstream({"provider": "custom", "servers": ["192.0.2.99#dns.example"],
                                          "fallback": "none"}))
    # the same address: unbound's back-off from the wrong name's failed handshakes would hold it
    assert resolver._control.commands[-2:] == ["reload", "flush_infra all"]


def test_an_encrypted_upstream_answering_again_is_asked_at_once(resolver):
    resolver.apply(resolver.set_upstream({"provider": "quad9", "fallback": "none"}))
    assert resolver.observe((DOWN,), None, 1.0) is None
    change = resolver.observe((OK,), None, 31.0)
    assert change is not None and change.commands[-1] == "flush_infra all"
    assert resolver.observe((OK,), None, 61.0) is None, "only once, when it comes back"


def test_unreachable_without_a_fallback_stays_encrypted_and_says_names_fail(resolver):
    resolver.apply(resolver.set_upstream({"provider": "custom", "servers": ["192.0.2.99#dns.example"],
                                          "fallback": "none"}))
    assert resolver.observe((Reach("192.0.2.99#dns.example", False, why="presents a certificate that is not "
                                   "for dns.example"),), None, 1.0) is None, "still only the encrypted upstream"
    view = resolver.upstream_view()
    assert view["state"] == "unreachable" and "Names do not resolve until it can" in view["message"]
    assert "not for dns.example" in view["message"]


def test_stripped_signatures_pause_validation_on_the_plain_path_only(resolver):
    change = resolver.observe(None, False, 1.0)
    assert change is not None and "val-permissive-mode: yes" in change.household
    resolver.apply(change)
    view = resolver.view()
    assert view["enabled"] and not view["validating"] and "do not pass DNSSEC signatures on" in view["message"]
    assert "val-permissive-mode: no" in resolver.observe(None, True, 2.0).household
    resolver.apply(resolver.set_upstream({"provider": "quad9"}))
    assert resolver.observe((OK,), False, 3.0) is None, "the household's encrypted choice is not second-guessed"


def test_a_bad_choice_is_refused_and_nothing_changes(resolver):
    with pytest.raises(SettingError, match="provider must be"):
        resolver.set_upstream({"provider": "nope"})
    assert resolver.upstream_view()["provider"] == "isp" and resolver.options.get("upstream") is None


# -- the looks: a DNS-over-TLS server of our own on loopback ---------------------------------------
def _cert(tmp_path, name: str):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(key.public_key())
          .serial_number(1).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(leaf_key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(pem))
    (tmp_path / "leaf.pem").write_bytes(leaf.public_bytes(pem))
    (tmp_path / "leaf.key").write_bytes(leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                               serialization.NoEncryption()))
    return tmp_path / "ca.pem"


def _dot_server(tmp_path):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "leaf.pem", tmp_path / "leaf.key")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    (n,) = struct.unpack("!H", tls.recv(2))
                    query = dns.message.from_wire(tls.recv(n))
                    wire = dns.message.make_response(query).to_wire()
                    tls.sendall(struct.pack("!H", len(wire)) + wire)
            except (OSError, ssl.SSLError):
                continue
    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


def test_tls_reach_checks_the_certificate_name_and_says_why(tmp_path):
    ca = _cert(tmp_path, "dns.test.example")
    port = _dot_server(tmp_path)
    ok = probe.tls_reach(TlsServer("127.0.0.1", "dns.test.example", port), str(ca))
    assert ok.ok and ok.rtt_ms > 0, ok
    wrong = probe.tls_reach(TlsServer("127.0.0.1", "other.example", port), str(ca))
    assert not wrong.ok and "not for other.example" in wrong.why
    untrusted = probe.tls_reach(TlsServer("127.0.0.1", "dns.test.example", port), "/etc/ssl/certs/ca-certificates.crt")
    assert not untrusted.ok and "does not trust" in untrusted.why
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = probe.tls_reach(TlsServer("127.0.0.1", "dns.test.example", closed.getsockname()[1]), str(ca), timeout=1)
    assert not dead.ok and "refuses connections" in dead.why


def test_the_anchor_zone_comes_from_the_trust_anchor_file(tmp_path):
    assert probe.anchor_zone("") == "."
    f = tmp_path / "anchor.key"
    f.write_text("; a key\ndnssec.test. IN DNSKEY 257 3 13 abc\n")
    assert probe.anchor_zone(str(f)) == "dnssec.test."


def _udp_resolver(answer):
    """A resolver on loopback answering every query with answer(query) (None: silence)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))

    def serve():
        while True:
            data, peer = sock.recvfrom(4096)
            reply = answer(dns.message.from_wire(data))
            if reply is not None:
                sock.sendto(reply.to_wire(), peer)
    threading.Thread(target=serve, daemon=True).start()
    return sock.getsockname()


def test_signatures_pass_says_whether_the_wan_resolvers_hand_on_dnssec(monkeypatch):
    import dns.rrset

    def keys(signed):
        def answer(q):
            r = dns.message.make_response(q)
            r.answer.append(dns.rrset.from_text(q.question[0].name, 300, "IN", "DNSKEY", "257 3 13 AAAA"))
            if signed:
                r.answer.append(dns.rrset.from_text(q.question[0].name, 300, "IN", "RRSIG",
                                                    "DNSKEY 13 0 300 20300101000000 20200101000000 1 . AAAA"))
            return r
        return answer

    def refused(q):
        r = dns.message.make_response(q)
        r.set_rcode(5)
        return r

    ports = {}
    for name, fn in (("signed", keys(True)), ("stripped", keys(False)), ("refused", refused),
                     ("silent", lambda q: None)):
        ports[name] = _udp_resolver(fn)[1]
    real_udp = dns.query.udp
    monkeypatch.setattr(dns.query, "udp", lambda q, where, timeout=None, port=53, **kw:
                        real_udp(q, "127.0.0.1", timeout=timeout, port=ports[where]))
    assert probe.signatures_pass(("stripped", "signed"), ".") is True
    assert probe.signatures_pass(("stripped",), ".") is False
    assert probe.signatures_pass(("refused",), ".") is False, "refusing DNSSEC questions is as good as stripping"
    assert probe.signatures_pass(("silent",), ".", timeout=0.3) is None, "a line that is down proves nothing"


def test_a_restored_backup_row_goes_through_the_same_validators():
    from homework.components.backup import contents
    check = contents.CHECKS["dns_options"]
    check({"key": "upstream", "value": '{"provider": "quad9", "servers": [], "fallback": "none"}'})
    for key, value, why in (("some_future_option", "x", "unknown DNS option"),
                            ("upstream", '{"provider": "opendns"}', "provider must be"),
                            ("dnssec", "maybe", "on or off"), ("dnssec_insecure", '["not a name"]', "not a domain"),
                            ("safe_search", "yes", "on or off")):
        with pytest.raises(ValueError, match=why):
            check({"key": key, "value": value})
