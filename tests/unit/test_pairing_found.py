"""Satellites found on a LAN port: not listed anywhere, a box asks as a pending
device; the router records the port of the caller's lease, never one the request names;
one pending request per port; the household's permit gives it a cable index and restarts
the controller, which then drives it like a listed one; deny or forget gives the port back.
Over the real core and the ws.v1 API as WSGI (the API tests' harness)."""
import pytest

from conftest import make_core
from homework.commands import CommandError
from homework.flows import Datapath
from homework.satellites import Satellite, free_index, give_back_commands, parse, with_found
from test_api import MAC, MAC2, PASSWORD, Api
from test_dhcp_server import join
from test_pairing import request

LISTED = "00000000000000a1"
FOUND, OTHER = "00000000000000c1", "00000000000000c2"


def found_core(tmp_path, clock, listed=()):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock, satellites=parse(list(listed)),
                     api_admin_password_file=str(pwfile))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    join(core, MAC, 1)          # 10.2.0.2 on d1, pending
    join(core, MAC2, 2)         # 10.2.0.6 on d2, pending
    core.restarts = []
    core.ctx.restart = lambda why, then=None: core.restarts.append((why, then))
    return core


@pytest.fixture
def core(tmp_path, clock):
    return found_core(tmp_path, clock, listed=[f"{LISTED}:up0:cable1"])


def ask(api, dpid, client="10.2.0.2", uplink="uplink"):
    return api.call("POST", "satellites/pair", {"dpid": dpid, "csr": request(), "uplink": uplink}, client=client)


def rows(core) -> dict:
    return {s["dpid"]: s for s in core.commands.call("satellites")}


def test_a_pending_device_may_ask_to_pair_and_the_router_records_the_port_of_its_lease(core):
    api = Api(core)
    r = ask(api, FOUND)
    assert r.status_int == 200, r.json
    sat = rows(core)[FOUND]
    assert (sat["state"], sat["found"], sat["router_port"], sat["uplink"], sat["cabled"], sat["index"]) == (
        "pending", True, "d1", "uplink", False, None)
    assert sat["device_mac"] == MAC
    # the satellite polls the same way; nothing else of the API is open to it
    poll = api.call("GET", f"satellites/pair/{FOUND}", client="10.2.0.2",
                    headers={"X-Pairing-Ticket": r.json["ticket"]})
    assert poll.status_int == 200 and poll.json["state"] == "pending"
    tok = api.token("admin")
    for method, path in (("GET", "satellites"), ("GET", "devices"), ("POST", f"satellites/{FOUND}/permit")):
        assert api.call(method, path, token=tok, client="10.2.0.2").status_int == 403
    assert rows(core)[FOUND]["state"] == "pending"


def test_the_request_cannot_choose_its_port_and_a_denied_device_or_a_stranger_cannot_ask(core):
    api = Api(core)
    body = {"dpid": FOUND, "csr": request(), "uplink": "uplink", "router_port": "d2"}
    assert api.call("POST", "satellites/pair", body, client="10.2.0.2").status_int == 400
    assert ask(api, FOUND, uplink="bad name!").status_int == 400
    core.devices.deny(MAC)
    r = ask(api, FOUND)
    assert r.status_int == 403 and "not permitted" in r.json["error"]
    # not a device on a LAN port (a management link, the router, anyone else): only listed satellites
    r = ask(api, OTHER, client="192.0.2.10")
    assert r.status_int == 404 and "LAN port" in r.json["error"]
    assert rows(core) == {}


def test_one_pending_request_per_port(core):
    api = Api(core)
    events = []
    core.bus.subscribe("satellite", lambda topic, ev: events.append((f"{ev['dpid']:016x}", ev["what"])))
    assert ask(api, FOUND).status_int == 200
    assert ask(api, OTHER).status_int == 200            # the same port, another datapath id: it replaces
    assert sorted(rows(core)) == [OTHER]
    assert (FOUND, "forgotten") in events
    assert ask(api, FOUND, client="10.2.0.6").status_int == 200    # another port: both stay
    assert {d: s["router_port"] for d, s in rows(core).items()} == {OTHER: "d1", FOUND: "d2"}


def test_a_device_cannot_take_over_a_request_another_device_made_under_the_same_datapath_id(core):
    api = Api(core)
    first = ask(api, FOUND)                             # the box on d1
    assert first.status_int == 200
    r = ask(api, FOUND, client="10.2.0.6")              # someone on d2 claims its datapath id
    assert r.status_int == 409 and "another device" in r.json["error"]
    sat = rows(core)[FOUND]
    assert (sat["router_port"], sat["device_mac"], sat["code"]) == ("d1", MAC, first.json["code"])
    # the box itself may ask again (a new key, or moved to another port with the same stack)
    assert ask(api, FOUND).status_int == 200
    core.commands.call("satellite-forget", dpid=FOUND)
    assert ask(api, FOUND, client="10.2.0.6").status_int == 200     # forgotten: anyone may ask


def test_a_satellite_cannot_ask_from_a_wifi_port(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock, radio_interfaces=["d2"],
                     api_admin_password_file=str(pwfile))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    join(core, MAC2, 2)
    r = ask(Api(core), FOUND, client="10.2.0.2")
    assert r.status_int == 409 and "Wi-Fi port" in r.json["error"]
    assert rows(core) == {}


def test_the_board_says_which_permitted_devices_a_permit_would_cut_off(core):
    api = Api(core)
    join(core, "02:00:00:00:0f:01", 1)                  # two more devices behind the same hub on d1
    join(core, "02:00:00:00:0f:02", 1)
    core.devices.permit("02:00:00:00:0f:01")
    core.devices.permit(MAC2)                           # on d2: not concerned
    assert ask(api, FOUND).status_int == 200
    board = api.call("GET", "devices", token=api.token("admin")).json
    label = next(v["label"] for v in board if v.get("dpid") == FOUND)
    assert "plugged into d1" in label and "cuts off 1 permitted device on d1" in label
    core.devices.permit("02:00:00:00:0f:02")
    board = api.call("GET", "devices", token=api.token("admin")).json
    label = next(v["label"] for v in board if v.get("dpid") == FOUND)
    assert "cuts off 2 permitted devices on d1" in label


def test_permit_gives_a_cable_index_and_restarts_once_forget_gives_the_port_back(core, tmp_path, clock):
    api = Api(core)
    assert ask(api, FOUND).status_int == 200
    answer = core.commands.call("satellite-permit", dpid=FOUND)
    assert answer["state"] == "permitted" and answer["restarting"] and answer["index"] == 2   # 1 is listed
    assert core.pairing.found_cables() == [(2, 0xC1, "uplink", "d1")]
    assert len(core.restarts) == 1 and core.restarts[0][1] is None      # nothing to give back
    # a second box from the same port before the restart may ask, but not take that port too
    assert ask(api, OTHER).status_int == 200
    with pytest.raises(CommandError) as exc:
        core.commands.call("satellite-permit", dpid=OTHER)
    assert exc.value.status == 409 and "already carries" in str(exc.value)
    core.state.close()

    # the restarted controller drives it like a listed satellite, after the listed one
    after = found_core(tmp_path, clock, listed=[f"{LISTED}:up0:cable1"])
    assert [(s.index, s.dpid, s.router_port, s.found) for s in after.config.satellites] == [
        (1, 0xA1, "cable1", False), (2, 0xC1, "d1", True)]
    assert rows(after)[FOUND]["cabled"] and not after.pairing.cables_changed()
    assert after.ctx.component("api") is not None
    # forgotten: the port goes back, once this process has stopped
    answer = after.commands.call("satellite-forget", dpid=FOUND)
    assert answer["restarting"] and after.pairing.found_cables() == []
    (why, then), = after.restarts
    assert "forgotten" in why and callable(then)


def test_deciding_about_a_listed_satellite_never_restarts(core):
    core.commands.call("satellite-request", dpid=LISTED, csr=request())
    assert core.commands.call("satellite-permit", dpid=LISTED)["state"] == "permitted"
    assert core.commands.call("satellite-deny", dpid=LISTED)["state"] == "denied"
    assert core.restarts == []


def test_found_cables_never_take_a_listed_satellites_place():
    listed = parse(["00000000000000a1:up0:cable1", "00000000000000a2:up0:hws1p3"])
    sats, skipped = with_found(listed, [
        (3, 0xC1, "uplink", "eth2"),            # fine
        (1, 0xC2, "uplink", "eth3"),            # index 1 is listed
        (4, 0xA2, "uplink", "eth4"),            # a listed datapath
        (5, 0xC3, "uplink", "cable1"),          # a listed cable
        (6, 0xC4, "uplink", "hws3p2"),          # behind the found satellite 3: a tree
        (7, 0xC5, "uplink", "hws9p2"),          # behind nobody
        (16, 0xC6, "uplink", "eth5")])          # no such index
    assert [(s.index, s.router_port, s.root, s.found) for s in sats] == [
        (1, "cable1", 0, False), (2, "hws1p3", 1, False), (3, "eth2", 0, True), (6, "hws3p2", 3, True)]
    assert len(skipped) == 5 and all("found on" in why for why in skipped)
    assert "clashes with satellite 1" in skipped[0] and "no satellite the router has" in skipped[3]
    assert free_index(sats) == 4 and free_index(sats, taken={4, 5}) == 7


def test_giving_a_port_back_removes_its_demux_bridge_and_makes_it_a_lan_port_again():
    sat = Satellite(2, 0xC1, "uplink", "eth2", found=True)
    assert give_back_commands(sat, "br0", {"eth2", "hwsat2m", "hws2p1d"}) == [
        "--if-exists", "del-br", "hwsat2", "--", "--may-exist", "add-port", "br0", "eth2"]
    child = Satellite(3, 0xC2, "uplink", "hws2p4", root=2, found=True)
    assert give_back_commands(child, "br0", {"hws3p1d"}) == [
        "--if-exists", "del-port", "br0", "hws3p1", "--", "--if-exists", "del-port", "hwsat2", "hws3p1d"]


def test_a_pending_device_cannot_take_over_a_listed_satellites_request(core):
    """The listed satellite asks over its cable; a pending device asks under its datapath id
    through the captive page: 409, over IPv4 or from the management console alike, and the
    household's permit signs the key whose code it saw."""
    api = Api(core)
    real_csr = request()
    real = api.call("POST", "satellites/pair", {"dpid": LISTED, "csr": real_csr}, client="fe80::a1:1")
    assert real.status_int == 200, real.json
    for client in ("10.2.0.2", "10.2.0.6", "192.0.2.10"):
        r = api.call("POST", "satellites/pair", {"dpid": LISTED, "csr": request()}, client=client)
        assert r.status_int == 409 and real.json["code"] in r.json["error"], (client, r.json)
    assert rows(core)[LISTED]["code"] == real.json["code"]
    poll = api.call("GET", f"satellites/pair/{LISTED}", client="fe80::a1:1",
                    headers={"X-Pairing-Ticket": real.json["ticket"]})
    assert poll.status_int == 200 and poll.json["state"] == "pending"
    # a permit naming another code signs nothing; the code the household saw signs its key
    tok = api.token("admin")
    r = api.call("POST", f"satellites/{LISTED}/permit", {"code": "000000"}, token=tok)
    assert r.status_int == 409 and rows(core)[LISTED]["state"] == "pending"
    r = api.call("POST", f"satellites/{LISTED}/permit", {"code": real.json["code"]}, token=tok)
    assert r.status_int == 200 and r.json["state"] == "permitted"
    poll = api.call("GET", f"satellites/pair/{LISTED}", client="fe80::a1:1",
                    headers={"X-Pairing-Ticket": real.json["ticket"]})
    from cryptography import x509
    cert = x509.load_pem_x509_certificate(poll.json["certificate"].encode())
    csr = x509.load_pem_x509_csr(real_csr.encode())
    assert cert.public_key().public_numbers() == csr.public_key().public_numbers()


def test_a_listed_satellites_own_cable_outranks_a_device_that_asked_first(core, monkeypatch):
    """Resolved through the kernel's neighbour table: the link-local caller is on hwsat1m."""
    api = Api(core)
    monkeypatch.setattr(core.ctx.callers, "link_interface", {"fe80::a1:1": "hwsat1m"}.get)
    squatter = api.call("POST", "satellites/pair", {"dpid": LISTED, "csr": request()}, client="10.2.0.2")
    assert squatter.status_int == 200
    real = api.call("POST", "satellites/pair", {"dpid": LISTED, "csr": request()}, client="fe80::a1:1")
    assert real.status_int == 200 and rows(core)[LISTED]["code"] == real.json["code"]
    again = api.call("POST", "satellites/pair", {"dpid": LISTED, "csr": request()}, client="10.2.0.2")
    assert again.status_int == 409
