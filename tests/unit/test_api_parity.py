"""API parity in the ws.v1 WSGI app over a real core: pre-approval of MACs never seen,
group decisions (all or nothing), household DNS rules and allow-list mode through the API,
and POSTs without a body."""
import json

import pytest
from webob import Request

from conftest import make_core
from homework.flows import Datapath
from test_api import MAC, MAC2, PASSWORD, Api
from homework.components.dhcp import message as m
from test_dhcp_server import dhcp_frame, join, send
from test_dns_component import FakeDnsNet, FakeLink

UNSEEN = "02:00:00:00:00:77"
UNSEEN2 = "02:00:00:00:00:78"


@pytest.fixture
def core(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "dns", "api"), clock=clock,
                     api_admin_password_file=str(pwfile), dns_control="", dns_intercept=False)
    dns = core.ctx.component("dns")
    dns.link, dns.net = FakeLink(), FakeDnsNet()
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2, "d3": 3}))
    join(core, MAC, 1)
    join(core, MAC2, 2, hostname=b"phone")
    return core


@pytest.fixture
def api(core):
    return Api(core)


@pytest.fixture
def tok(api):
    return api.token("admin")


def state(core, mac):
    device = core.state.get_device(mac)
    return device.state if device else None


# -- pre-approval ------------------------------------------------------------------------------
def test_permit_of_an_unseen_mac_pre_approves_and_its_first_lease_is_permitted(api, core, tok):
    r = api.call("POST", f"permit/{UNSEEN}", token=tok)
    assert r.status_int == 200, r.text
    assert r.json["state"] == "permitted" and r.json["last_seen"] == 0 and r.json["lease"] is None
    board = {d["mac"]: d for d in api.call("GET", "devices", token=tok).json}
    assert board[UNSEEN]["state"] == "permitted" and board[UNSEEN]["last_seen"] == 0
    join(core, UNSEEN, 3)
    assert state(core, UNSEEN) == "permitted"
    assert core.ctx.component("routing").installed[UNSEEN][1] == "permitted"   # forwarding at once
    assert core.state.get_device(UNSEEN).last_seen > 0


def test_blacklist_of_an_unseen_mac_gets_no_lease(api, core, tok):
    assert api.call("POST", f"blacklist/{UNSEEN}", token=tok).json["state"] == "blacklisted"
    assert send(core, dhcp_frame(UNSEEN, m.DISCOVER), 3) == []      # no offer at all
    assert core.ctx.leases.get(UNSEEN) is None
    assert UNSEEN not in core.ctx.component("routing").installed


@pytest.mark.parametrize("bad,words", [("01:00:5e:00:00:01", "multicast"), ("ff:ff:ff:ff:ff:ff", "multicast"),
                                       ("00:00:00:00:00:00", "not a device's MAC"), ("nope", "not a MAC")])
def test_pre_approving_a_multicast_zero_or_bad_mac_is_400(api, core, tok, bad, words):
    for decision in ("permit", "deny", "blacklist"):
        r = api.call("POST", f"{decision}/{bad}", token=tok)
        assert r.status_int == 400 and words in r.json["error"], r.text
    assert state(core, bad.lower()) is None


# -- group decisions ---------------------------------------------------------------------------
def test_group_permit_applies_to_every_mac_and_answers_per_mac(api, core, tok):
    r = api.call("POST", "permit", {"macs": [MAC, MAC2.upper(), UNSEEN]}, token=tok)
    assert r.status_int == 200, r.text
    assert [x["mac"] for x in r.json["results"]] == [MAC, MAC2, UNSEEN]
    assert {state(core, m) for m in (MAC, MAC2, UNSEEN)} == {"permitted"}
    r = api.call("POST", "deny", [MAC, MAC2], token=tok)          # a bare list works too
    assert r.status_int == 200 and {state(core, m) for m in (MAC, MAC2)} == {"denied"}


@pytest.mark.parametrize("macs,status,words", [
    ([MAC, "02:00:00:00:00", MAC2], 400, "02:00:00:00:00"),
    ([MAC, "01:00:5e:00:00:01"], 400, "multicast"),
    ([MAC, 5], 400, "5"),
])
def test_one_bad_mac_in_a_group_changes_nothing(api, core, tok, macs, status, words):
    r = api.call("POST", "blacklist", {"macs": macs}, token=tok)
    assert r.status_int == status and words in r.json["error"], r.text
    assert state(core, MAC) == "pending" and state(core, MAC2) == "pending"


@pytest.mark.parametrize("body,words", [(None, "send the MACs"), ({"macs": []}, "non-empty"),
                                        ({"mac": MAC}, "unknown field"), (b"{oops", "not valid JSON"),
                                        ({"macs": "x"}, "non-empty list")])
def test_group_body_errors_are_400(api, tok, body, words):
    r = api.call("POST", "permit", body, token=tok)
    assert r.status_int == 400 and words in r.json["error"], r.text


def test_group_forget_refuses_all_if_one_is_blacklisted(api, core, tok):
    core.devices.blacklist(MAC2)
    r = api.call("POST", "forget", {"macs": [MAC, MAC2]}, token=tok)
    assert r.status_int == 409 and MAC2 in r.json["error"]
    assert state(core, MAC) == "pending"
    assert api.call("POST", "forget", {"macs": [MAC]}, token=tok).json["results"] == [{"mac": MAC, "forgotten": True}]


def test_a_device_cannot_include_itself_in_a_group(api, core, tok):
    core.devices.permit(MAC)
    ip = core.ctx.leases.get(MAC).ip
    r = api.call("POST", "permit", {"macs": [MAC2, MAC]}, token=tok, client=ip)
    assert r.status_int == 403 and "its own access" in r.json["error"]
    assert state(core, MAC2) == "pending"


def test_group_needs_admin(api, core):
    r = api.call("POST", "permit", {"macs": [MAC]}, token=api.token("read-only"))
    assert r.status_int == 403 and state(core, MAC) == "pending"


# -- household DNS rules and allow-list mode -------------------------------------------------------
def test_household_rules_through_the_mac_routes(api, core, tok):
    r = api.call("POST", "deny-dns/household/Ads.Example", token=tok)
    assert r.status_int == 200 and r.json["owner"] == "household", r.text
    assert api.call("POST", "permit-dns/HOUSEHOLD/school.example", token=tok).status_int == 200
    rules = api.call("GET", "dns-rules/household", token=tok).json["rules"]
    assert {(x["domain"], x["action"], x["owner"]) for x in rules} == {
        ("ads.example", "deny", "household"), ("school.example", "allow", "household")}
    assert any("ads.example deny" in line for line in core.ctx.component("dns").link.take())   # dnsd told
    assert api.call("POST", "remove-dns-rule/household/ads.example", token=tok).json["removed"] == "ads.example"
    assert api.call("POST", "remove-dns-rule/household/ads.example", token=tok).status_int == 400
    assert api.call("POST", "deny-dns/household/bad..name", token=tok).status_int == 400


def test_dns_mode_get_and_set(api, core, tok):
    assert api.call("GET", f"dns-mode/{MAC}", token=tok).json == {"mac": MAC, "mode": "denylist"}
    r = api.call("POST", f"dns-mode/{MAC}", {"mode": "allowlist"}, token=tok)
    assert r.status_int == 200 and r.json["mode"] == "allowlist"
    assert api.call("GET", f"dns-rules/{MAC}", token=tok).json["mode"] == "allowlist"
    for body in ({"mode": "strictest"}, {"mode": 1}, {}, None, {"mode": "allowlist", "x": 1}):
        r = api.call("POST", f"dns-mode/{MAC}", body, token=tok)
        assert r.status_int == 400 and "mode" in r.json["error"], (body, r.text)
    assert api.call("POST", f"dns-mode/{UNSEEN}", {"mode": "allowlist"}, token=tok).status_int == 404
    assert api.call("GET", f"dns-mode/{MAC}", token=tok).json["mode"] == "allowlist"


# -- POST without a body ---------------------------------------------------------------------------
def bodiless(api, path, tok):
    """A POST as curl -X POST sends it: no Content-Length, no body."""
    req = Request.blank(f"/ws.v1/{path}", method="POST", remote_addr="127.0.0.1")
    req.headers["X-Forwarded-For"] = "192.0.2.10"
    req.headers["Authorization"] = f"Bearer {tok}"
    req.environ.pop("CONTENT_LENGTH", None)
    return req.get_response(api.app)


@pytest.mark.parametrize("path,status", [
    (f"permit/{MAC}", 200), ("permit", 400), ("blacklist", 400), (f"dns-mode/{MAC}", 400),
    ("login", 400), ("tokens", 400), ("usage/cap", 503), ("notifications/read", 503), (f"meta/{MAC}", 200),
])
def test_a_post_without_a_body_works_or_gets_a_json_error(api, tok, path, status):
    r = bodiless(api, path, tok)
    assert r.status_int == status, r.text
    assert r.content_type == "application/json"
    body = json.loads(r.body)
    assert status == 200 or (body["status"] == status and body["error"])


# -- the CLI ---------------------------------------------------------------------------------------
def test_cli_group_permit_pre_approval_and_household_rule(core, monkeypatch, capsys):
    from homework import cli
    from homework.commands import CommandError

    def call(sock, cmd, **args):          # as the control socket does: an error is a RuntimeError
        try:
            return json.loads(json.dumps(core.commands.call(cmd, **args), default=str))
        except CommandError as exc:
            raise RuntimeError(str(exc)) from None
    monkeypatch.setattr(cli, "call", call)
    assert cli.main(["blacklist", UNSEEN]) == 0
    assert capsys.readouterr().out == f"{UNSEEN} is now blacklisted (pre-approved: not seen yet)\n"
    assert cli.main(["permit", MAC, MAC2, UNSEEN2]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{MAC} is now permitted", f"{MAC2} is now permitted",
                   f"{UNSEEN2} is now permitted (pre-approved: not seen yet)"]
    assert cli.main(["deny", MAC, "01:00:5e:00:00:01"]) == 1         # all or nothing
    assert "multicast" in capsys.readouterr().err and state(core, MAC) == "permitted"
    assert cli.main(["household-rule", "deny", "ads.example"]) == 0
    assert [r["domain"] for r in core.commands.call("dns-rules", mac="household")["rules"]] == ["ads.example"]
    assert cli.main(["household-rule", "remove", "ads.example"]) == 0
    assert core.commands.call("dns-rules", mac="household")["rules"] == []
    capsys.readouterr()
    assert cli.main(["--json", "permit", MAC]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "permitted"


def test_a_pre_approval_survives_a_restart_and_still_skips_the_pending_stage(tmp_path, clock):
    first = make_core(tmp_path, components=("dhcp", "routing"), clock=clock)
    first.commands.call("permit", mac=UNSEEN)
    first.state.close()          # as at a controller stop
    again = make_core(tmp_path, components=("dhcp", "routing"), clock=clock)
    again.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1}))
    device = again.state.get_device(UNSEEN)
    assert (device.state, device.last_seen) == ("permitted", 0)
    join(again, UNSEEN, 1)
    assert again.ctx.component("routing").installed[UNSEEN][1] == "permitted"
