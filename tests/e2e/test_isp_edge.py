"""The ISP edge (ispedge/) on real Open vSwitch: a household's router places its own
connections in its own queues over the certificate-authenticated control interface, and
nothing else: other addresses, other households' placements, more than its budget, more
messages than its rate, a certificate the ISP did not issue are all refused. A restarted
edge holds nothing until the routers place again (the router's side: test_isp_router.py)."""
from __future__ import annotations

import re
import time

import pytest

from homelab.isp_edge import EDGE_ADDR, EDGE_PORT, SERVER6_ADDR, SERVER_ADDR, EdgeLab, household_public, in_netns
from homework.ispedge_client import EdgeClient, EdgeEndpoint, EdgeError

A_PUBLIC, B_PUBLIC = household_public(1), household_public(2)
A6, B6 = "2001:db8:a1::2", "2001:db8:a2::2"
URL = f"https://{EDGE_ADDR}:{EDGE_PORT}"


@pytest.fixture(scope="module")
def lab():
    with EdgeLab({"a": {"budget": 3}, "b": {}}, edge={"messages_per_second": 1, "burst": 400}) as lab:
        yield lab


def client(lab: EdgeLab, name: str, household: str | None = None) -> EdgeClient:
    paths = lab.issue(name, household)
    return _InNamespace(lab, name, EdgeEndpoint(URL, **paths))


class _InNamespace(EdgeClient):
    """The household's router reaches the edge from its own namespace, over its line."""

    def __init__(self, lab: EdgeLab, name: str, endpoint: EdgeEndpoint):
        super().__init__(endpoint)
        self.netns = lab.ns(name)

    def _call(self, method, path, body=None):
        with in_netns(self.netns):
            return super()._call(method, path, body)


def clear(c: EdgeClient) -> None:
    for p in c.placements()["placements"]:
        c.remove(p["id"])


def send_udp(lab: EdgeLab, household: str, src: str, sport: int, dst: str, dport: int, count: int = 100) -> None:
    """`count` datagrams of one connection, paced (a burst would lose some in the switch)."""
    fam = "AF_INET6" if ":" in dst else "AF_INET"
    code = (f"import socket,time;s=socket.socket(socket.{fam},socket.SOCK_DGRAM);s.bind(({src!r},{sport}));"
            f"[(s.sendto(b'x'*200,({dst!r},{dport})),time.sleep(0.002)) for _ in range({count})]")
    lab.household(household, ["python3", "-c", code])


def wait_for(cond, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def class_packets(lab: EdgeLab, port: str, classid: str) -> int:
    m = re.search(rf"class htb {re.escape(classid)} .*?\n Sent \d+ bytes (\d+) pkt", lab.tc_classes(port))
    return int(m.group(1)) if m else -1


def test_a_household_places_its_own_connection_and_the_edge_queues_it_high(lab):
    a = client(lab, "a")
    clear(a)
    placed = a.place("udp", A_PUBLIC, 40000, SERVER_ADDR, 5004, "high")
    assert placed["queue"] == "high" and placed["src"] == A_PUBLIC
    flows = lab.dump_flows()
    # both directions of the connection, in household a's high queue (1 * 4 + 1)
    assert re.search(rf"udp,nw_src={A_PUBLIC},nw_dst={SERVER_ADDR},tp_src=40000,tp_dst=5004 actions=set_queue:5", flows)
    assert re.search(rf"udp,nw_src={SERVER_ADDR},nw_dst={A_PUBLIC},tp_src=5004,tp_dst=40000 actions=set_queue:5", flows)
    high, default = class_packets(lab, "up0", "1:6"), class_packets(lab, "up0", "1:8")
    send_udp(lab, "a", A_PUBLIC, 40000, SERVER_ADDR, 5004)
    assert wait_for(lambda: class_packets(lab, "up0", "1:6") - high >= 50), lab.tc_classes("up0")
    high = class_packets(lab, "up0", "1:6")
    send_udp(lab, "a", A_PUBLIC, 40001, SERVER_ADDR, 5004)        # not placed: a's default queue
    assert wait_for(lambda: class_packets(lab, "up0", "1:8") - default >= 50), lab.tc_classes("up0")
    assert class_packets(lab, "up0", "1:6") == high
    listed = a.placements()
    assert [p["sport"] for p in listed["placements"]] == [40000]
    assert listed["placements"][0]["packets"] >= 50
    stats = a.queues()["queues"]
    assert stats["high"]["packets"] >= 50 and stats["high"]["ceil_kbit"] == 2000


def test_ipv6_inside_the_delegated_prefix_is_placed(lab):
    a = client(lab, "a")
    clear(a)
    a.place("tcp", SERVER6_ADDR, 443, A6, 50000, "medium")
    assert re.search(rf"tcp6,ipv6_src={A6},ipv6_dst={SERVER6_ADDR},tp_src=50000,tp_dst=443 actions=set_queue:6",
                     lab.dump_flows())
    before = class_packets(lab, "up0", "1:7")
    send_udp(lab, "a", A6, 50001, SERVER6_ADDR, 9)          # a's prefix, not placed: default, not medium
    assert class_packets(lab, "up0", "1:7") == before


@pytest.mark.parametrize("src,dst", [
    (B_PUBLIC, SERVER_ADDR),               # household b's public address
    (B6, SERVER6_ADDR),                    # inside household b's prefix
    ("100.64.0.99", SERVER_ADDR),          # nobody's
    ("2001:db8:ffff::1", SERVER6_ADDR),    # nobody's prefix
])
def test_any_other_address_is_refused(lab, src, dst):
    a = client(lab, "a")
    with pytest.raises(EdgeError) as err:
        a.place("udp", src, 1000, dst, 2000, "high")
    assert err.value.status == 403 and "household a" in str(err.value)
    assert "tp_src=1000" not in lab.dump_flows()


def test_malformed_requests_are_refused_with_a_message(lab):
    a = client(lab, "a")
    for body, words in [({"proto": "icmp"}, "proto"), ({"proto": "udp", "src": "x", "queue": "high"}, "src"),
                        ({"proto": "udp", "queue": "top"}, "queue"),
                        ({"proto": "udp", "src": A_PUBLIC, "sport": 0, "dst": SERVER_ADDR, "dport": 1, "queue": "high"},
                         "sport"),
                        ({"proto": "udp", "src": A_PUBLIC, "sport": 1, "dst": SERVER6_ADDR, "dport": 1,
                          "queue": "high"}, "both be IPv4"),
                        ({"proto": "udp", "match": "any"}, "unknown fields")]:
        with pytest.raises(EdgeError) as err:
            a._call("POST", "/v1/placements", body)
        assert err.value.status == 400 and words in str(err.value), body
    with pytest.raises(EdgeError) as err:
        a._call("POST", "/v1/flows", {})           # nothing but placements
    assert err.value.status == 404


def test_a_household_cannot_see_or_remove_another_households_placements(lab):
    a, b = client(lab, "a"), client(lab, "b")
    clear(a)
    clear(b)
    pb = b.place("udp", B_PUBLIC, 41000, SERVER_ADDR, 5004, "high")
    assert a.placements()["placements"] == []
    with pytest.raises(EdgeError) as err:
        a.remove(pb["id"])
    assert err.value.status == 404
    assert [p["id"] for p in b.placements()["placements"]] == [pb["id"]]
    # and b's placement is in b's queue (2 * 4 + 1), not a's
    assert re.search(rf"nw_src={B_PUBLIC},.*set_queue:9", lab.dump_flows())
    clear(b)


def test_the_placement_budget_is_enforced(lab):
    a = client(lab, "a")
    clear(a)
    for port in (1, 2, 3):
        a.place("udp", A_PUBLIC, 42000 + port, SERVER_ADDR, 5004, "high")
    with pytest.raises(EdgeError) as err:
        a.place("udp", A_PUBLIC, 42004, SERVER_ADDR, 5004, "high")
    assert err.value.status == 409 and "3 placements" in str(err.value)
    # the same connection again (either direction) moves it rather than costing one more
    moved = a.place("udp", SERVER_ADDR, 5004, A_PUBLIC, 42001, "default")
    assert moved["queue"] == "default" and len(a.placements()["placements"]) == 3
    a.remove(a.placements()["placements"][0]["id"])
    a.place("udp", A_PUBLIC, 42004, SERVER_ADDR, 5004, "high")
    assert "tp_src=42004" in lab.dump_flows()
    clear(a)
    assert "tp_src=4200" not in lab.dump_flows()


def test_an_unknown_certificate_or_household_is_refused(lab, tmp_path):
    # a certificate from another CA: the TLS handshake fails
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    import datetime
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "ispedge-household a")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    (tmp_path / "k").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
    (tmp_path / "c").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    forged = _InNamespace(lab, "a", EdgeEndpoint(URL, str(lab.pki / "ca.crt"), str(tmp_path / "c"),
                                                 str(tmp_path / "k")))
    with pytest.raises(EdgeError) as err:
        forged.placements()
    assert err.value.status == 0
    # the ISP's tool signs only for households the edge serves...
    with pytest.raises(Exception, match="no household 'zz'"):
        lab.issue("a", household="zz")
    # ...and a certificate its CA signed for one it no longer serves is refused
    from ispedge.pki import EdgeCA, make_request
    (tmp_path / "zz.crt").write_text(EdgeCA(lab.pki).sign_household(make_request(tmp_path / "zz.key"), "zz"))
    stranger = _InNamespace(lab, "a", EdgeEndpoint(URL, str(lab.pki / "ca.crt"), str(tmp_path / "zz.crt"),
                                                   str(tmp_path / "zz.key")))
    with pytest.raises(EdgeError) as err:
        stranger.placements()
    assert err.value.status == 403


def test_control_messages_are_rate_limited_per_household(lab):
    lab_b = client(lab, "b")
    a = client(lab, "a")
    # 1 a second after a burst: keep asking until the edge says wait (it must, long before 600)
    for _ in range(600):
        try:
            a.placements()
        except EdgeError as exc:
            assert exc.status == 429 and exc.retry_after >= 1 and "a second" in str(exc)
            break
    else:
        pytest.fail("600 requests and never a 429")
    # household b's bucket is its own
    assert lab_b.placements()["household"] == "b"
    # a's bucket refills: a request a little later is served
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            a.placements()
            break
        except EdgeError:
            time.sleep(0.5)
    else:
        pytest.fail("household a was never served again")


def test_a_restarted_edge_holds_nothing_until_placed_again(lab):
    a = client(lab, "a")
    time.sleep(0)            # (the rate test above may have emptied a's bucket: retry below)
    first = _retry(lambda: a.place("udp", A_PUBLIC, 43000, SERVER_ADDR, 5004, "high"))
    lab.restart_edge()
    after = _retry(a.placements)
    assert after["epoch"] != first["epoch"] and after["placements"] == []
    assert "tp_src=43000" not in lab.dump_flows()
    _retry(lambda: a.place("udp", A_PUBLIC, 43000, SERVER_ADDR, 5004, "high"))
    assert "tp_src=43000" in lab.dump_flows()


def _retry(fn, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except EdgeError as exc:
            if exc.status != 429 or time.monotonic() > deadline:
                raise
            time.sleep(max(0.2, exc.retry_after))

