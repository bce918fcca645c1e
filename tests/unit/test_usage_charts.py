"""The device panel's chart data: one device's bytes over the last hour per
minute, the last day per local hour and the last 30 days per local day, and its API."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from homework.commands import CommandError
from homework.components.usage import report
from homework.components.usage.recent import RecentMinutes
from homework.flows import Datapath
from test_api import PASSWORD, Api
from test_usage_cap import A, B, at, bw, new_core

LONDON = ZoneInfo("Europe/London")


@pytest.fixture
def home(tmp_path, clock):
    clock.now = at(2026, 5, 20, 12)
    return new_core(tmp_path, clock)


@pytest.fixture
def api(tmp_path, clock):
    clock.now = at(2026, 5, 20, 12)
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = new_core(tmp_path, clock, components=("dhcp", "routing", "api", "usage"),
                    api_admin_password_file=str(pwfile))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1}))
    core.state.touch_device(A, now=clock.now)
    return Api(core)


def flush(core):
    core.ctx.component("usage").flush()
    core.state.flush(force=True)


# -- report: bucket edges and sums ----------------------------------------------------------------
def test_edges_end_with_the_bucket_holding_now():
    now = at(2026, 5, 20, 12, 34, 56)
    hour = report.range_edges("hour", now, LONDON)
    assert len(hour) == 61 and hour[-2] == at(2026, 5, 20, 12, 34) and hour[0] == at(2026, 5, 20, 11, 35)
    day = report.range_edges("day", now, LONDON)
    assert len(day) == 25 and day[-2] == at(2026, 5, 20, 12) and day[0] == at(2026, 5, 19, 13)
    month = report.range_edges("month", now, LONDON)
    assert len(month) == 31 and month[-1] == at(2026, 5, 21) and month[0] == at(2026, 4, 21)


def test_a_month_across_the_spring_change_has_a_23_hour_day():
    month = report.range_edges("month", at(2026, 4, 10, 8), LONDON)
    lengths = {datetime.fromtimestamp(s, LONDON).date().isoformat(): e - s
               for s, e in zip(month, month[1:], strict=False)}
    assert lengths["2026-03-29"] == 23 * 3600
    assert {v for k, v in lengths.items() if k != "2026-03-29"} == {24 * 3600}


def test_bucket_sums_rows_and_drops_those_outside():
    edges = [0, 10, 20, 30]
    rows = [("m", 0, 1, 2), ("m", 9, 1, 1), ("m", 25, 5, 0), ("m", 30, 100, 100), ("m", -1, 100, 100)]
    assert report.bucket(rows, edges) == ([2, 0, 5], [3, 0, 0])


def test_device_series_keeps_only_that_device_and_labels_local_time():
    edges = report.range_edges("day", at(2026, 5, 20, 12, 10), LONDON)
    rows = [(A, int(at(2026, 5, 20, 12)), 10, 20), (B, int(at(2026, 5, 20, 12)), 99, 99),
            (A, int(at(2026, 5, 19, 13)), 1, 2)]
    s = report.device_series(A, "day", rows, edges, LONDON)
    assert s["step"] == "hour" and len(s["labels"]) == len(s["up"]) == len(s["down"]) == 24
    assert s["labels"][0] == "13:00" and s["labels"][-1] == "12:00"
    assert (s["up"][0], s["down"][0], s["up"][-1], s["down"][-1]) == (1, 2, 10, 20)
    assert s["total"] == 33


def test_recent_minutes_keep_one_hour():
    r = RecentMinutes()
    r.add(A, 5, 6, 1000 * 60 + 10)
    r.add(A, 1, 1, 1000 * 60 + 50)
    r.add(A, 0, 0, 1001 * 60)               # nothing: not stored
    assert r.rows(A) == [(A, 1000 * 60, 6, 7)]
    r.add(B, 1, 0, 1061 * 60)                # an hour later: A's minute is dropped
    assert r.rows(A) == [] and r.rows(B) == [(B, 1061 * 60, 1, 0)]


# -- the component ---------------------------------------------------------------------------------
def test_the_panel_series_per_minute_hour_and_day(home, clock):
    bw(home, A, 1000, 100)                  # 12:00:00
    clock.advance(90)
    bw(home, A, 500, 50)                    # 12:01:30
    bw(home, B, 7, 7)
    flush(home)
    clock.advance(3600 * 3)                 # 15:01:30
    bw(home, A, 40, 4)
    hour = home.commands.call("usage-device", mac=A, span="hour")
    assert hour["step"] == "minute" and hour["labels"][-1] == "15:01"
    assert sum(hour["down"]) == 40 and sum(hour["up"]) == 4      # 12:0x is more than an hour ago
    day = home.commands.call("usage-device", mac=A, span="day")
    assert day["labels"][-1] == "15:00" and day["labels"][-4] == "12:00"
    assert (day["down"][-4], day["up"][-4], day["down"][-1], day["up"][-1]) == (1500, 150, 40, 4)
    month = home.commands.call("usage-device", mac=A, span="month")
    assert month["labels"][-1] == "2026-05-20" and len(month["labels"]) == 30
    assert (month["down"][-1], month["up"][-1], month["total"]) == (1540, 154, 1694)
    # the per-day bars of the month add up to what the household usage says for the device
    assert home.commands.call("usage", period="day", by="device")["rows"][0]["total"] == month["total"]


def test_a_restart_keeps_day_and_month_but_starts_the_hour_empty(tmp_path, clock):
    clock.now = at(2026, 5, 20, 12)
    core = new_core(tmp_path, clock)
    bw(core, A, 300, 30)
    core.stop()
    core.state.close()
    again = new_core(tmp_path, clock)
    assert again.commands.call("usage-device", mac=A, span="day")["total"] == 330
    assert again.commands.call("usage-device", mac=A, span="hour")["total"] == 0


def test_a_bad_range_is_a_clear_error(home):
    with pytest.raises(CommandError, match="range must be one of hour, day, month"):
        home.commands.call("usage-device", mac=A, span="week")


def test_api_device_series_and_its_errors(api, clock):
    bw(api.core, A, 2000, 100)
    ro = api.token("read-only")
    r = api.call("GET", f"usage/devices/{A}?range=day", token=ro)
    assert r.status_int == 200, r.text
    assert r.json["mac"] == A and r.json["down"][-1] == 2000 and r.json["up"][-1] == 100
    assert api.call("GET", f"usage/devices/{A}", token=ro).json["range"] == "day"
    r = api.call("GET", f"usage/devices/{A}?range=week", token=ro)
    assert r.status_int == 400 and "range must be one of" in r.json["error"]
    assert api.call("GET", "usage/devices/not-a-mac", token=ro).status_int == 400
    assert api.call("GET", "usage/devices/02:00:00:00:00:99", token=ro).status_int == 404
    assert api.call("GET", f"usage/devices/{A}", token=None).status_int == 401


def test_steps_name_every_day_or_hour_so_far_quiet_ones_included(home, clock):
    clock.now = at(2026, 5, 3, 12)
    bw(home, A, 10)
    month = home.commands.call("usage", period="month")
    assert month["steps"] == ["2026-05-01", "2026-05-02", "2026-05-03"]
    assert [r["period"] for r in month["series"]] == ["2026-05-03"]
    day = home.commands.call("usage", period="day")
    assert len(day["steps"]) == 13 and day["steps"][0].startswith("2026-05-03T00:00")
    # a day of 23 hours in spring
    assert len(report.step_labels(int(at(2026, 3, 29)), at(2026, 3, 29, 23, 59), "hour", LONDON)) == 23
