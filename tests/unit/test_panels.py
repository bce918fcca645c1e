"""Panels (components/api/panels.py): a wall tablet paired by a one-time code from the admin's
board, the router's screen by a code only the router itself can use; the panel role sees
the board and lets devices in or out, and changes nothing else; panels are listed and
revoked by the admin, survive a password change, and decide nothing before the household
has its own password."""
import pytest

from homework.commands import CommandError
from test_api import MAC, MAC2, PASSWORD, Api, core  # noqa: F401  (core: the fixture)

TABLET_IP = "10.2.0.6"       # MAC2's address (test_api's core)


@pytest.fixture
def admin(core):                        # noqa: F811
    a = Api(core)
    assert a.login().status_int == 200   # the household's password (taken over at its first login)
    return a


def pair(admin, name=None, host="10.2.0.1"):
    r = admin.call("POST", "panels/pair", {"name": name} if name else {}, headers={"Host": host})
    assert r.status_int == 200, r.text
    return r.json


def redeem(core, code, client=TABLET_IP):   # noqa: F811
    panel = Api(core)
    r = panel.call("POST", "panels/session", {"code": code}, client=client, cookies=False)
    if r.status_int == 200:
        panel.cookies["hw_session"] = r.headers["Set-Cookie"].split("=", 1)[1].split(";")[0]
        panel.csrf = r.json["csrf"]
    return panel, r


def test_a_tablet_pairs_with_the_code_in_the_qr_and_gets_the_panel_role(core, admin):   # noqa: F811
    admin.call("POST", f"permit/{MAC2}")                     # the tablet was let in first
    p = pair(admin, "Kitchen wall")
    assert p["url"] == f"https://10.2.0.1/#panel-code={p['code']}" and p["expires_in"] == 600
    assert len(p["code"]) >= 40 and p["kind"] == "tablet"
    tablet, r = redeem(core, p["code"])
    assert r.status_int == 200 and r.json["role"] == "panel" and r.json["panel"] == "tablet"
    assert "HttpOnly" in r.headers["Set-Cookie"] and r.json["expires_in"] > 300 * 86400
    s = tablet.call("GET", "session", client=TABLET_IP).json
    assert (s["role"], s["panel"], s["set_up"]) == ("panel", "tablet", True)
    # the same code again, from anyone: gone
    assert redeem(core, p["code"])[1].status_int == 401
    [listed] = admin.call("GET", "panels").json
    shown = (listed["kind"], listed["name"], listed["mac"], listed["device"])
    assert shown == ("tablet", "Kitchen wall", MAC2, "phone")


def test_the_panel_role_lets_devices_in_and_out_and_changes_nothing_else(core, admin):   # noqa: F811
    admin.call("POST", f"permit/{MAC2}")
    tablet, _ = redeem(core, pair(admin)["code"])
    call = lambda m, path, body=None, **kw: tablet.call(m, path, body, client=TABLET_IP, **kw)   # noqa: E731
    assert call("GET", "devices").status_int == 200
    assert call("POST", f"permit/{MAC}").json["state"] == "permitted"
    assert call("POST", f"meta/{MAC}", {"name": "Tom's laptop"}).status_int == 200   # named as it is let in
    assert call("POST", f"deny/{MAC}").json["state"] == "denied"
    for path, body in ((f"blacklist/{MAC}", None), (f"forget/{MAC}", None), ("tokens", {"name": "x"}),
                       ("system/timezone", {"timezone": "Europe/Paris"}), ("panels/pair", {}),
                       ("password", {"old": PASSWORD, "new": "another password"})):
        r = call("POST", path, body)
        assert r.status_int == 403 and "admin role" in r.json["error"], path
    assert call("GET", "tokens").status_int == 403 and call("GET", "panels").status_int == 403
    assert call("POST", f"deny/{MAC2}").status_int == 403          # not even a panel changes its own access
    assert core.state.get_device(MAC2).state == "permitted"
    assert call("POST", f"permit/{MAC}", csrf="wrong").status_int == 403     # CSRF as for any session


def test_wrong_and_expired_codes(core, admin, clock):   # noqa: F811
    admin.call("POST", f"permit/{MAC2}")
    p = pair(admin)
    clock.now += 601
    assert redeem(core, p["code"])[1].status_int == 401       # expired
    statuses = [redeem(core, "x" * 43)[1].status_int for _ in range(8)]
    assert statuses[0] == 401 and statuses[-1] == 429          # the login limiter, per device
    assert redeem(core, pair(admin)["code"])[1].status_int == 429   # even a good one, while locked out


def test_a_pending_device_cannot_pair(core, admin):   # noqa: F811
    r = redeem(core, pair(admin)["code"])[1]            # MAC2 is still pending
    assert r.status_int == 403


def test_the_screens_code_works_from_the_router_only_and_replaces_its_session(core, admin):   # noqa: F811
    admin.call("POST", f"permit/{MAC2}")
    code = core.commands.call("panel-pair", kind="screen")["code"]
    assert redeem(core, code)[1].status_int == 401             # a LAN device cannot use it
    code = core.commands.call("panel-pair", kind="screen")["code"]
    first, r = redeem(core, code, client="127.0.0.1")
    assert r.status_int == 200 and r.json["panel"] == "screen"
    second, _ = redeem(core, core.commands.call("panel-pair", kind="screen")["code"], client="127.0.0.1")
    assert first.call("GET", "devices", client="127.0.0.1").status_int == 401    # the screen has one session
    assert second.call("GET", "devices", client="127.0.0.1").status_int == 200
    assert [p["name"] for p in admin.call("GET", "panels").json] == ["The router's screen"]


def test_revoked_panels_end_and_a_password_change_keeps_them(core, admin):   # noqa: F811
    admin.call("POST", f"permit/{MAC2}")
    tablet, _ = redeem(core, pair(admin)["code"])
    r = admin.call("POST", "password", {"old": PASSWORD, "new": "a new household password"})
    assert r.status_int == 200
    assert tablet.call("GET", "devices", client=TABLET_IP).status_int == 200     # the panel stays
    assert admin.call("GET", "panels").status_int == 401                         # the admin's session ended
    assert admin.login("a new household password").status_int == 200
    [p] = admin.call("GET", "panels").json
    assert admin.call("POST", "panels/0123456789abcdef/revoke").status_int == 404
    assert admin.call("POST", "panels/nothex/revoke").status_int == 404
    assert admin.call("POST", f"panels/{p['id']}/revoke").json == {"revoked": p["id"]}
    assert tablet.call("GET", "devices", client=TABLET_IP).status_int == 401
    assert admin.call("GET", "panels").json == []


def test_a_panel_decides_nothing_before_the_household_has_its_password(core):   # noqa: F811
    # the router's first password was never used: the first hour's set-up offer is open
    screen, r = redeem(core, core.commands.call("panel-pair", kind="screen")["code"], client="127.0.0.1")
    assert r.status_int == 200
    assert screen.call("GET", "session", client="127.0.0.1").json["set_up"] is False
    r = screen.call("POST", f"permit/{MAC}", client="127.0.0.1")
    assert r.status_int == 409 and "set this router up first" in r.json["error"]
    assert core.state.get_device(MAC).state == "pending"


def test_pairing_names_are_checked(core, admin):   # noqa: F811
    r = admin.call("POST", "panels/pair", {"name": "x" * 41})
    assert r.status_int == 400 and "40" in r.json["error"]
    assert admin.call("POST", "panels/pair", {"colour": "red"}).status_int == 400
    r = admin.call("POST", "panels/pair", {}, headers={"Host": "evil host/"})
    assert r.status_int == 400
    with pytest.raises(CommandError, match="toaster"):
        core.commands.call("panel-pair", kind="toaster")


# -- night ---------------------------------------------------------------------------------------
def test_the_night_window_dims_panels_by_the_households_clock(core, admin, clock):   # noqa: F811
    from datetime import datetime
    from zoneinfo import ZoneInfo
    clock.now = datetime(2026, 11, 20, 21, 59, tzinfo=ZoneInfo("UTC")).timestamp()
    admin.login()                                                # the clock moved on years: a fresh session
    s = admin.call("GET", "panels/display").json
    assert (s["dim"], s["brightness"], s["from"], s["to"], s["enabled"]) == (False, 100, "22:00", "07:00", True)
    clock.now += 60                                              # 22:00: the default window
    assert admin.call("GET", "panels/display").json["brightness"] == 30
    r = admin.call("POST", "panels/night", {"from": "23:30", "to": "06:15", "brightness": 10})
    assert r.status_int == 200 and r.json["dim"] is False
    clock.now += 120 * 60                                        # 00:00, across midnight
    assert admin.call("GET", "panels/display").json == {**r.json, "dim": True, "brightness": 10}
    assert admin.call("POST", "panels/night", {"enabled": False}).json["dim"] is False
    for bad in ({"from": "25:00"}, {"to": "7:00"}, {"brightness": 2}, {"brightness": "lots"},
                {"from": "23:30", "to": "23:30"}, {"colour": "red"}, {"enabled": "no"}):
        r = admin.call("POST", "panels/night", bad)
        assert r.status_int == 400, bad
    assert admin.call("GET", "panels/display").json["enabled"] is False     # nothing half-applied


def test_a_panel_reads_the_display_state_and_cannot_change_the_night(core, admin):   # noqa: F811
    admin.call("POST", f"permit/{MAC2}")
    tablet, _ = redeem(core, pair(admin)["code"])
    assert tablet.call("GET", "panels/display", client=TABLET_IP).status_int == 200
    assert tablet.call("POST", "panels/night", {"enabled": False}, client=TABLET_IP).status_int == 403


def test_the_backlight_follows_the_window(core, tmp_path, clock):   # noqa: F811
    from datetime import datetime
    from zoneinfo import ZoneInfo
    from homework.components.api.paneldisplay import PanelDisplay
    bl = tmp_path / "backlight" / "intel_backlight"
    bl.mkdir(parents=True)
    (bl / "max_brightness").write_text("19200\n")
    (bl / "brightness").write_text("15000\n")
    display = PanelDisplay(core.ctx, backlight_dir=tmp_path / "backlight")
    clock.now = datetime(2026, 11, 20, 12, 0, tzinfo=ZoneInfo("UTC")).timestamp()
    display.tick()
    assert (bl / "brightness").read_text() == "15000\n"         # daytime: untouched
    display.set_night(**{"from": "11:00", "to": "13:00", "brightness": 25})
    assert (bl / "brightness").read_text() == "4800" and display.state()["backlight"] is True
    display.set_night(enabled=False)
    assert (bl / "brightness").read_text() == "15000"           # back to where the household had it
