"""A satellite's joining steps (homework.satellite_agent.join): what it says when it cannot
go on. The steps themselves run end to end in tests/e2e/test_satellites_tls.py."""
import json
from pathlib import Path

from homework.satellite_agent import join


def test_polling_before_asking_says_so_and_fails(tmp_path, capsys):
    assert join.main(["poll", "--bridge", "sat9", "--state-dir", str(tmp_path)]) == 1
    assert "run `ask` first" in json.loads(capsys.readouterr().out)["error"]


def test_the_router_is_reached_on_the_bridges_management_link():
    j = join.Join("br0", Path("/nonexistent"))
    assert j.router == "[fe80::1%br0]"


def test_an_unreachable_router_is_an_error_not_a_crash(tmp_path, monkeypatch, capsys):
    (tmp_path / "pairing-ticket").write_text("t")
    monkeypatch.setattr(join.Join, "dpid", lambda self: "00000000000000b9")
    # no such interface: the zone cannot be resolved, so nothing leaves this machine
    assert join.main(["poll", "--bridge", "nosuchbr9", "--state-dir", str(tmp_path)]) == 1
    assert "cannot reach the router" in json.loads(capsys.readouterr().out)["error"]


def test_a_request_left_pending_is_polled_less_often(tmp_path):
    j = join.Join("sat9", tmp_path)
    assert j.poll_interval(3.0) == 3.0                      # no request yet
    (tmp_path / "pairing-ticket").write_text("t")
    asked = (tmp_path / "pairing-ticket").stat().st_mtime
    assert j.poll_interval(3.0, now=asked + 60) == 3.0      # new: the household is deciding
    assert j.poll_interval(3.0, now=asked + join.FAST_FOR + 1) == join.SLOW_INTERVAL
    assert j.poll_interval(30.0, now=asked + join.FAST_FOR + 1) == 30.0     # never faster than asked


def test_the_datapath_id_is_asked_once(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(join, "_run", lambda cmd: calls.append(cmd) or '"00000000000000b9"\n')
    j = join.Join("sat9", tmp_path)
    assert j.dpid() == j.dpid() == "00000000000000b9"
    assert len(calls) == 1


def test_on_a_lan_port_it_asks_at_its_gateway_once_the_management_link_does_not_answer(tmp_path, monkeypatch):
    """Plugged into a LAN port (not a cable) its own stack has a lease: the management link
    first (a permitted box's cable), then HTTP at the gateway (the captive page's server),
    then HTTPS there if HTTP only redirects (the household permitted the box as a device)."""
    tried = []

    def send(self, url, method, body, headers, host, timeout):
        tried.append(url)
        if "fe80::1" in url:
            raise join._Unreachable("no answer on the management link")
        if url.startswith("http://") and redirects:
            raise join._Redirected("308")
        return {"state": "pending"}
    monkeypatch.setattr(join.Join, "_send", send)
    j = join.Join("sat9", tmp_path)
    monkeypatch.setattr(join, "_run", lambda cmd: "default via 10.2.0.5 dev sat9 \n")
    redirects = False
    assert j._call("GET", "/ws.v1/satellites/pair/c1") == {"state": "pending"}
    assert tried == ["https://[fe80::1%25sat9]/ws.v1/satellites/pair/c1", "http://10.2.0.5/ws.v1/satellites/pair/c1"]
    tried.clear()
    redirects = True
    j._call("GET", "/x")
    assert tried == ["https://[fe80::1%25sat9]/x", "http://10.2.0.5/x", "https://10.2.0.5/x"]
    # no lease (a listed cable): the management link alone, and its failure is the answer
    tried.clear()
    monkeypatch.setattr(join, "_run", lambda cmd: "")
    try:
        j._call("GET", "/x")
        raise AssertionError("no error")
    except join.JoinError as exc:
        assert "management link" in str(exc)
    assert tried == ["https://[fe80::1%25sat9]/x"]
