"""The first hour (homework/firsthour.py, components/api/setup.py): a router nobody has set
up yet lets a pending device choose its password and become its first permitted device;
a wired one needs nothing more, one on the Wi-Fi needs the console password or the
factory reset's code; the offer closes for good once the household has a password."""
import sqlite3

import pytest

from conftest import make_core
from homework import firsthour, migrations
from homework.flows import Datapath
from test_api import Api
from test_dhcp_server import join

WIRED = "02:00:00:00:00:01"       # on port d1 (10.2.0.2)
WIFI = "02:00:00:00:00:02"        # on port wlan0 (10.2.0.6), a radio interface
OTHER = "02:00:00:00:00:03"       # on port d3 (10.2.0.10)
FIRST = "router's own first pw"   # what homework-firstboot wrote
NEW = "our household's password"


@pytest.fixture
def core(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(FIRST + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock,
                     api_admin_password_file=str(pwfile), radio_interfaces=("wlan0",))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "wlan0": 2, "d3": 3}))
    join(core, WIRED, 1)
    join(core, WIFI, 2, hostname=b"phone")
    join(core, OTHER, 3, hostname=b"tv")
    return core


@pytest.fixture
def api(core):
    return Api(core)


ADDR = {WIRED: "10.2.0.2", WIFI: "10.2.0.6", OTHER: "10.2.0.10"}


def setup(api, mac, body):
    return api.call("POST", "setup", body, client=ADDR[mac], cookies=False)


def state(core, mac):
    return core.state.get_device(mac).state


def test_a_wired_pending_device_sets_a_new_router_up_and_is_let_in(api, core):
    offer = api.call("GET", "setup", client=ADDR[WIRED], cookies=False).json
    assert offer == {"open": True, "device": True, "wired": True, "needs": "nothing", "setup_code_issued": False}
    r = setup(api, WIRED, {"password": NEW})
    assert r.status_int == 200, r.text
    assert r.json["permitted"] == WIRED and r.json["board"] == "https://10.2.0.1/" and r.json["ticket"]
    assert state(core, WIRED) == "permitted" and state(core, OTHER) == "pending"
    # the household's password now; the router's first one is no longer any use
    assert api.login(NEW, client=ADDR[WIRED]).status_int == 200
    assert api.login(FIRST, client=ADDR[WIRED]).status_int == 401
    # the offer is gone for everyone, and a second set-up changes nothing
    assert api.call("GET", "setup", client=ADDR[OTHER], cookies=False).json["open"] is False
    again = setup(api, OTHER, {"password": "a stranger's password"})
    assert again.status_int == 409 and "set up already" in again.json["error"]
    assert state(core, OTHER) == "pending"
    assert api.login(NEW, client=ADDR[WIRED]).status_int == 200


def test_the_ticket_opens_one_session_for_the_device_that_set_up(api, core):
    ticket = setup(api, WIRED, {"password": NEW}).json["ticket"]
    other = api.call("POST", "setup/session", {"ticket": ticket}, client=ADDR[OTHER], cookies=False)
    assert other.status_int == 403          # a pending device reaches no HTTPS route at all
    core.commands.call("permit", mac=OTHER)
    assert api.call("POST", "setup/session", {"ticket": ticket}, client=ADDR[OTHER], cookies=False).status_int == 401
    r = api.call("POST", "setup/session", {"ticket": ticket}, client=ADDR[WIRED], cookies=False)
    assert r.status_int == 200 and r.json["role"] == "admin" and "hw_session=" in r.headers["Set-Cookie"]
    assert "secure" in r.headers["Set-Cookie"].lower() and "HttpOnly" in r.headers["Set-Cookie"]
    used = api.call("POST", "setup/session", {"ticket": ticket}, client=ADDR[WIRED], cookies=False)
    assert used.status_int == 401 and "used" in used.json["error"]


def test_the_ticket_expires(api, core, clock):
    ticket = setup(api, WIRED, {"password": NEW}).json["ticket"]
    clock.advance(601)
    r = api.call("POST", "setup/session", {"ticket": ticket}, client=ADDR[WIRED], cookies=False)
    assert r.status_int == 401


def test_a_device_on_the_wifi_needs_the_console_password_or_the_reset_code(api, core, tmp_path):
    offer = api.call("GET", "setup", client=ADDR[WIFI], cookies=False).json
    assert offer["wired"] is False and offer["needs"] == "console-password-or-setup-code"
    r = setup(api, WIFI, {"password": NEW})
    assert r.status_int == 401 and "cable" in r.json["error"]
    assert setup(api, WIFI, {"password": NEW, "proof": "not it"}).status_int == 401
    assert state(core, WIFI) == "pending" and not core.ctx.component("api").auth.password_chosen()
    r = setup(api, WIFI, {"password": NEW, "proof": FIRST})
    assert r.status_int == 200, r.text
    assert state(core, WIFI) == "permitted"


def test_the_factory_resets_code_lets_a_wifi_device_set_up(api, core, tmp_path):
    code = firsthour.new_setup_code(tmp_path)
    assert api.call("GET", "setup", client=ADDR[WIFI], cookies=False).json["setup_code_issued"] is True
    r = setup(api, WIFI, {"password": NEW, "proof": code.lower().replace("-", " ")})
    assert r.status_int == 200, r.text
    assert not firsthour.has_setup_code(tmp_path)         # used: gone


def test_wrong_proofs_meet_the_login_limiter(api, core):
    for _ in range(5):
        assert setup(api, WIFI, {"password": NEW, "proof": "guess"}).status_int == 401
    r = setup(api, WIFI, {"password": NEW, "proof": FIRST})
    assert r.status_int == 429 and "Retry-After" in r.headers
    assert state(core, WIFI) == "pending"


@pytest.mark.parametrize("body,words", [
    ({"password": "short"}, "8 to 256"),
    ({"password": 12345678}, "password"),
    ({}, "password"),
    ({"password": NEW, "admin": True}, "unknown field"),
])
def test_a_bad_request_changes_nothing(api, core, body, words):
    r = setup(api, WIRED, body)
    assert r.status_int == 400 and words in r.json["error"], r.text
    assert state(core, WIRED) == "pending"
    assert api.call("GET", "setup", client=ADDR[WIRED], cookies=False).json["open"] is True


def test_only_a_device_of_the_home_that_asks_may_set_up(api, core):
    # the management link, the router itself, an address the router cannot tie to a device
    for client in ("192.0.2.10", "2001:db8::5"):
        r = api.call("POST", "setup", {"password": NEW}, client=client, cookies=False)
        assert r.status_int == 403 and "cannot tell" in r.json["error"], client
    core.commands.call("deny", mac=WIRED)
    assert setup(api, WIRED, {"password": NEW}).status_int == 403
    assert api.call("GET", "setup", client=ADDR[WIRED], cookies=False).status_int == 403   # kept out: no API


@pytest.mark.parametrize("how", ["permit", "password"])
def test_the_offer_closes_once_the_household_is_in_charge(api, core, how):
    if how == "permit":          # a device let in by another door (the CLI)
        core.commands.call("permit", mac=OTHER)
    else:
        core.commands.call("set-password", password=NEW)
    assert api.call("GET", "setup", client=ADDR[WIRED], cookies=False).json["open"] is False
    assert setup(api, WIRED, {"password": "a stranger's password"}).status_int == 409


def test_a_login_with_the_first_password_takes_it_over(api, core):
    assert api.login(FIRST, client="192.0.2.10").status_int == 200
    assert api.call("GET", "setup", client=ADDR[WIRED], cookies=False).json["open"] is False


def test_a_half_done_set_up_can_be_finished_from_the_same_device(api, core, monkeypatch):
    auth = core.ctx.component("api").auth
    real = auth.set_password

    def full_disk(password, chosen=True):
        raise OSError("disk full")
    monkeypatch.setattr(auth, "set_password", full_disk)
    assert setup(api, WIRED, {"password": NEW}).status_int == 500
    assert state(core, WIRED) == "permitted" and not auth.password_chosen()   # offer still open
    monkeypatch.setattr(auth, "set_password", real)
    assert setup(api, WIRED, {"password": NEW}).status_int == 200
    assert api.login(NEW, client=ADDR[WIRED]).status_int == 200


def test_routers_set_up_before_the_offer_existed_stay_closed(tmp_path):
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    for step in migrations.STEPS[:12]:
        for statement in migrations._statements(step.sql):
            db.execute(statement)
    db.execute("INSERT INTO api_admin (id, password_hash, changed) VALUES (1, 'x', 0)")
    db.execute("PRAGMA user_version = 12")
    db.commit()
    migrations.migrate(db)
    assert db.execute("SELECT chosen FROM api_admin").fetchone() == (1,)


def test_a_factory_reset_offers_the_set_up_again_with_a_code(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(FIRST + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock,
                     api_admin_password_file=str(pwfile))
    restarts = []
    core.ctx.restart = lambda why, then=None: restarts.append((why, then))
    core.commands.call("set-password", password=NEW)
    answer = core.commands.call("factory-reset", confirm="erase everything")
    code = answer["setup_code"]
    assert len(code) == 9 and code[4] == "-" and firsthour.setup_code_matches(tmp_path, code)
    assert (tmp_path / "setup-code").stat().st_mode & 0o777 == 0o600
    core.stop()
    restarts[0][1]()                         # the erase the restart runs
    assert firsthour.has_setup_code(tmp_path)
    again = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock,
                      api_admin_password_file=str(pwfile))
    assert not again.ctx.component("api").auth.password_chosen()      # offered again


def test_the_set_up_over_ipv6_knows_the_device_limits_it_and_keeps_the_own_access_rule(tmp_path, clock):
    """From an address of the device's /64 the set-up is the device's as over IPv4: offered,
    wrong proofs counted against the device whichever address it uses, and once it is the
    household's device it cannot change its own access from any address of its /64."""
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(FIRST + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock, ipv6_enabled=True,
                     ipv6_prefix="2001:db8:5::/48", api_admin_password_file=str(pwfile), radio_interfaces=("wlan0",))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "wlan0": 2}))
    join(core, WIRED, 1)
    join(core, WIFI, 2, hostname=b"phone")
    api = Api(core)

    def v6(mac, n):
        return str(core.ctx.ipv6.device_prefix(core.ctx.leases.get(mac).index).network_address + 0x100 + n)
    offer = api.call("GET", "setup", client=v6(WIFI, 1), cookies=False).json
    assert offer["open"] and offer["device"] and offer["needs"] == "console-password-or-setup-code"
    for n in range(5):           # five guesses, each from another address of the same /64
        assert api.call("POST", "setup", {"password": NEW, "proof": "guess"}, client=v6(WIFI, n),
                        cookies=False).status_int == 401
    assert api.call("POST", "setup", {"password": NEW, "proof": FIRST}, client="10.2.0.6",
                    cookies=False).status_int == 429       # the device is locked out on IPv4 too
    r = api.call("POST", "setup", {"password": NEW}, client=v6(WIRED, 7), cookies=False)
    assert r.status_int == 200 and r.json["permitted"] == WIRED, r.text
    session = api.call("POST", "setup/session", {"ticket": r.json["ticket"]}, client=v6(WIRED, 8), cookies=False)
    assert session.status_int == 200
    cookie = session.headers["Set-Cookie"].split(";")[0]
    own = api.call("POST", f"deny/{WIRED}", {}, client=v6(WIRED, 9), cookies=False,
                   headers={"Cookie": cookie, "X-CSRF-Token": session.json["csrf"]})
    assert own.status_int == 403 and state(core, WIRED) == "permitted"
