"""The household cap: settings that survive restarts, projection, alerts once
per period, and the usage API (JSON, cap, CSV) with its errors."""
import csv
import io
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from conftest import make_core
from homework.commands import CommandError
from homework.flows import Datapath
from test_api import Api, PASSWORD

LONDON = ZoneInfo("Europe/London")
A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
G = 10**9


def at(*args):
    return datetime(*args, tzinfo=LONDON).timestamp()


def new_core(tmp_path, clock, components=("dhcp", "routing", "usage"), **kw):
    core = make_core(tmp_path, components=components, clock=clock, usage_timezone="Europe/London", **kw)
    core.alerts = []
    core.bus.subscribe("alert", lambda topic, ev: core.alerts.append(ev["kind"]))
    return core


@pytest.fixture
def home(tmp_path, clock):
    clock.now = at(2026, 5, 20, 12)
    return new_core(tmp_path, clock)


def bw(core, mac, down, up=0):
    core.bus.publish("bandwidth", mac=mac, ip="10.2.0.2", bytes=up + down, up=up, down=down)


def alerts(core):
    return [kind for kind in core.alerts if kind.startswith("usage-")]


def test_cap_and_billing_day_are_set_and_survive_a_restart(tmp_path, clock):
    clock.now = at(2026, 5, 20, 12)
    core = new_core(tmp_path, clock)
    status = core.commands.call("usage-cap", cap="500G", billing_day="15")
    assert status["cap"] == 500 * G and status["billing_day"] == 15
    assert (status["start"], status["end"]) == (at(2026, 5, 15), at(2026, 6, 15))
    core.stop()
    core.state.close()
    again = new_core(tmp_path, clock)
    assert again.commands.call("usage-cap")["cap"] == 500 * G
    assert again.commands.call("usage", period="month")["start"] == at(2026, 5, 15)


def test_config_gives_the_cap_until_one_is_set(tmp_path, clock):
    core = new_core(tmp_path, clock, usage_monthly_cap=7 * G, usage_billing_day=3)
    status = core.commands.call("usage-cap")
    assert (status["cap"], status["billing_day"]) == (7 * G, 3)


def test_projection_to_the_billing_day(home, clock):
    home.commands.call("usage-cap", cap=100 * G, billing_day=15)
    clock.now = at(2026, 5, 15) + 5 * 86400        # 5 days into a 31-day period
    bw(home, A, 10 * G)
    status = home.commands.call("usage-cap")
    assert status["used"] == 10 * G and status["percent"] == 10.0
    assert status["projected"] == 62 * G and status["projected_percent"] == 62.0


def test_alerts_at_80_and_100_percent_once_per_period(home, clock):
    home.commands.call("usage-cap", cap=1000, billing_day=1)
    bw(home, A, 500)
    assert alerts(home) == []
    bw(home, B, 300)                  # 80 %
    bw(home, A, 100)
    assert alerts(home) == ["usage-80"]
    bw(home, A, 200)                  # 110 %
    bw(home, A, 200)
    assert alerts(home) == ["usage-80", "usage-100"]
    clock.now = at(2026, 6, 2, 12)    # next period: a fresh count
    bw(home, A, 900)
    assert alerts(home) == ["usage-80", "usage-100", "usage-80"]


def test_alerts_are_not_repeated_after_a_restart(tmp_path, clock):
    clock.now = at(2026, 5, 20, 12)
    core = new_core(tmp_path, clock)
    core.commands.call("usage-cap", cap=1000)
    bw(core, A, 850)
    assert alerts(core) == ["usage-80"]
    core.stop()
    core.state.close()
    again = new_core(tmp_path, clock)
    bw(again, A, 10)                  # the period's 860 bytes are re-read from state.db
    assert alerts(again) == [] and again.commands.call("usage-cap")["used"] == 860
    bw(again, A, 139)
    assert alerts(again) == []
    bw(again, A, 1)
    assert alerts(again) == ["usage-100"]


@pytest.mark.parametrize("cap, day, message", [("lots", None, "not a size"), (-5, None, "between 0"),
                                               (None, "32", "billing_day"), (None, "x", "billing_day")])
def test_bad_cap_or_day_is_a_clear_error(home, cap, day, message):
    with pytest.raises(CommandError, match=message):
        home.commands.call("usage-cap", cap=cap, billing_day=day)


# -- the API ---------------------------------------------------------------------------------------
@pytest.fixture
def api(tmp_path, clock):
    clock.now = at(2026, 5, 20, 12)
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = new_core(tmp_path, clock, components=("dhcp", "routing", "api", "usage"),
                    api_admin_password_file=str(pwfile))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    for mac in (A, B):
        core.state.touch_device(mac, now=clock.now)
    core.state.set_device_meta(A, owner="Lodger", name="=cmd|' /C calc'!A0")
    return Api(core)


def test_api_usage_by_owner_cap_and_csv(api, clock):
    bw(api.core, A, 2000, 100)
    bw(api.core, B, 500)
    ro = api.token("read-only")
    r = api.call("GET", "usage?period=month&by=owner", token=ro)
    assert r.status_int == 200, r.text
    assert {row["who"]: row["total"] for row in r.json["rows"]} == {"Lodger": 2100, "unassigned": 500}
    assert api.call("GET", "usage?period=week", token=ro).status_int == 400
    assert api.call("POST", "usage/cap", {"cap": "1G"}, token=ro).status_int == 403
    admin = api.token("admin")
    r = api.call("POST", "usage/cap", {"cap": "1G", "billing_day": 15}, token=admin)
    assert r.status_int == 200, r.text
    assert r.json["cap"] == G and r.json["used"] == 2600
    assert api.call("POST", "usage/cap", {"colour": 1}, token=admin).status_int == 400
    assert api.call("POST", "usage/cap", {"cap": "much"}, token=admin).status_int == 400
    assert api.call("GET", "usage/cap", token=ro).json["billing_day"] == 15
    r = api.call("GET", "usage.csv?month=2026-05", token=ro)
    assert r.status_int == 200 and r.content_type == "text/csv"
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0] == ["day", "mac", "name", "owner", "type", "up_bytes", "down_bytes", "total_bytes"]
    assert rows[1] == ["2026-05-20", A, "'=cmd|' /C calc'!A0", "Lodger", "unassigned", "100", "2000", "2100"]
    assert rows[2][1] == B and rows[2][-1] == "500"
    assert api.call("GET", "usage.csv?month=2026-13", token=ro).status_int == 400
    assert api.call("GET", "usage", token=None).status_int == 401


def test_api_limits_block_shows_in_the_device_view_and_lift(api, clock):
    admin, ro = api.token("admin"), api.token("read-only")
    body = {"mac": A, "allowance": "1K", "period": "day", "action": "notify"}
    assert api.call("POST", "usage/limits", body, token=ro).status_int == 403
    r = api.call("POST", "usage/limits", body, token=admin)
    assert r.status_int == 200, r.text
    assert r.json == {"target": A, "period": "day", "allowance": 1000, "action": "notify",
                      "text": "1 kB a day; once it is used up, the household is told, nothing is cut"}
    for bad in ({"mac": A, "allowance": "1K", "action": "throttle"}, {"allowance": "1K"}, {"mac": A, "allowance": "x"},
                {"mac": A, "allowance": 5, "colour": "red"}, {"mac": 5, "allowance": 5}):
        assert api.call("POST", "usage/limits", bad, token=admin).status_int == 400, bad
    assert api.call("GET", "usage/limits", token=ro).json == [r.json]
    bw(api.core, A, 2000)
    view = api.core.commands.call("status", mac=A)
    assert view["usage_limit"]["allowance"] == 1000 and view["usage_blocked"] is False   # notify only
    assert api.call("POST", "usage/lift", {"mac": A}, token=admin).json == {"lifted": [A]}
    assert api.call("POST", "usage/lift", {"mac": B}, token=admin).status_int == 404
    assert api.call("POST", "usage/limits/remove", {"mac": A}, token=admin).status_int == 200
    assert api.call("GET", "usage/limits", token=ro).json == []
