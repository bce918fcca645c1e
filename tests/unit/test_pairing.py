"""Pairing satellites: a listed satellite asks, the household decides, and only
the certificate issued last, while permitted, admits it; decisions survive a restart."""
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import make_core
from homework.commands import CommandError
from homework.pki import certificate_serial
from homework.satellites import parse

DPID = "00000000000000a1"


def request() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sat")])).sign(key, hashes.SHA256()))
    return csr.public_bytes(serialization.Encoding.PEM).decode()


@pytest.fixture
def core(tmp_path, clock):
    return make_core(tmp_path, clock=clock, satellites=parse([f"{DPID}:up0:cable1"]))


def call(core, name, **kw):
    return core.commands.call(name, **kw)


def test_ask_then_permit_then_fetch_and_only_the_last_certificate_admits(core):
    events = []
    core.bus.subscribe("satellite", lambda topic, ev: events.append(ev["what"]))
    asked = call(core, "satellite-request", dpid=DPID, csr=request())
    assert call(core, "satellite-ticket", dpid=DPID, ticket=asked["ticket"]) == \
        {"dpid": DPID, "state": "pending", "code": asked["code"]}
    with pytest.raises(CommandError) as exc:
        call(core, "satellite-ticket", dpid=DPID, ticket="guessed")
    assert exc.value.status == 404
    assert call(core, "satellite-permit", dpid=DPID)["state"] == "permitted"
    got = call(core, "satellite-ticket", dpid=DPID, ticket=asked["ticket"])
    serial = certificate_serial(got["certificate"])
    assert core.pairing.admits(0xA1, serial) and not core.pairing.admits(0xA1, serial + 1)
    # paired again (root on the router): the first certificate stops admitting it
    again = call(core, "satellite-pair", dpid=DPID, csr=request())
    assert not core.pairing.admits(0xA1, serial)
    assert core.pairing.admits(0xA1, certificate_serial(again["certificate"]))
    assert events == ["requested", "permitted", "permitted"]


def test_a_paired_satellite_cannot_be_asked_for_again_and_deny_or_forget_end_its_admission(core):
    serial = certificate_serial(call(core, "satellite-pair", dpid=DPID, csr=request())["certificate"])
    with pytest.raises(CommandError) as exc:
        call(core, "satellite-request", dpid=DPID, csr=request())      # someone else claiming its dpid
    assert exc.value.status == 409 and core.pairing.admits(0xA1, serial)
    assert core.pairing.standing(0xA1, serial) == "permitted"
    assert core.pairing.standing(0xA1, serial + 1) == "replaced"       # not the certificate issued last
    assert call(core, "satellite-deny", dpid=DPID)["state"] == "denied"
    assert not core.pairing.admits(0xA1, serial)
    assert core.pairing.standing(0xA1, serial) == "denied"
    assert call(core, "satellite-forget", dpid=DPID) == {"dpid": DPID, "forgotten": True}
    assert call(core, "satellites") == []
    assert core.pairing.standing(0xA1, serial) == "forgotten"


def test_unlisted_or_malformed_input_is_refused_with_the_reason(core):
    for kw, status, words in ((dict(dpid="00000000000000ff", csr=request()), 404, "not in [satellites]"),
                              (dict(dpid="xyz", csr=request()), 400, "not hexadecimal"),
                              (dict(dpid=DPID, csr="junk"), 400, "not a PEM certificate request")):
        with pytest.raises(CommandError) as exc:
            call(core, "satellite-request", **kw)
        assert exc.value.status == status and words in str(exc.value)
    with pytest.raises(CommandError) as exc:
        call(core, "satellite-permit", dpid=DPID)
    assert exc.value.status == 404


def test_decisions_survive_a_restart(tmp_path, clock):
    first = make_core(tmp_path, clock=clock, satellites=parse([f"{DPID}:up0:cable1"]))
    serial = certificate_serial(call(first, "satellite-pair", dpid=DPID, csr=request())["certificate"])
    first.state.close()
    second = make_core(tmp_path, clock=clock, satellites=parse([f"{DPID}:up0:cable1"]))
    assert second.pairing.admits(0xA1, serial)
    assert [s["state"] for s in call(second, "satellites")] == ["permitted"]
