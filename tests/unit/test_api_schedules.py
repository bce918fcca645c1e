"""Schedules and pauses in the ws.v1 API: the routes, their errors (400 with a
reason, nothing stored), roles, a device not pausing itself, the device view's facts,
and a DNS rule with a schedule."""
import json
from pathlib import Path

import pytest
from webob import Request

from homework.flows import Datapath
from conftest import make_core
from test_api import MAC, MAC2, PASSWORD, PROXY, Api
from test_dhcp_server import join


@pytest.fixture
def api(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "dns", "api", "schedules"), clock=clock,
                     api_admin_password_file=str(pwfile), dns_control="", dns_intercept=False)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    join(core, MAC, 1)
    join(core, MAC2, 2, hostname=b"phone")
    core.commands.call("permit", mac=MAC)
    core.commands.call("permit", mac=MAC2)
    return Api(core)


def test_add_list_remove_a_schedule(api):
    tok = api.token("admin")
    r = api.call("POST", "schedules", {"mac": MAC, "days": "sun-thu", "from": "21:30", "to": "07:00"}, token=tok)
    assert r.status_int == 200, r.text
    sid = r.json["id"]
    assert r.json["action"] == "pause" and r.json["mac"] == MAC and r.json["from"] == "21:30"
    r = api.call("POST", "schedules", {"owner": "Kid", "days": "mon-fri", "from": "16:00", "to": "18:00",
                                       "action": "dns-strict"}, token=tok)
    assert r.status_int == 200, r.text
    assert [s["id"] for s in api.call("GET", "schedules", token=api.token("read-only")).json] == [sid, r.json["id"]]
    assert [s["id"] for s in api.call("GET", f"schedules?mac={MAC}", token=tok).json] == [sid]
    assert api.call("POST", f"schedules/{sid}/remove", token=tok).json == {"removed": sid}
    assert api.call("POST", f"schedules/{sid}/remove", token=tok).status_int == 404
    assert api.call("POST", "schedules/x/remove", token=tok).status_int == 400


@pytest.mark.parametrize("body, message", [
    ({"mac": MAC, "days": "mon", "from": "25:00", "to": "07:00"}, "HH:MM"),
    ({"mac": MAC, "days": "", "from": "21:00", "to": "07:00"}, "at least one day"),
    ({"mac": MAC, "days": "mon", "from": "21:00", "to": "07:00", "colour": "red"}, "unknown field"),
    ({"mac": MAC, "days": "mon", "from": 21, "to": "07:00"}, "must be a string"),
    ({"days": "mon", "from": "21:00", "to": "07:00"}, "either mac or owner"),
    ({"mac": MAC, "days": "mon", "from": "21:00", "to": "07:00", "action": "nap"}, "action"),
])
def test_bad_schedules_are_400_with_the_reason_and_nothing_is_stored(api, body, message):
    r = api.call("POST", "schedules", body, token=api.token("admin"))
    assert r.status_int == 400 and message in r.json["error"], r.text
    assert api.core.commands.call("schedules") == []


def test_an_overlapping_schedule_is_400_and_nothing_is_stored(api):
    tok = api.token("admin")
    assert api.call("POST", "schedules", {"mac": MAC, "days": "daily", "from": "21:30", "to": "07:00"},
                    token=tok).status_int == 200
    r = api.call("POST", "schedules", {"mac": MAC, "days": "sat", "from": "06:00", "to": "09:00"}, token=tok)
    assert r.status_int == 400 and "overlaps schedule" in r.json["error"]
    assert len(api.core.commands.call("schedules")) == 1


def test_pause_and_resume_show_in_the_device_view(api, clock):
    tok = api.token("admin")
    r = api.call("POST", f"pause/{MAC}", {"minutes": 60}, token=tok)
    assert r.status_int == 200 and r.json["paused"] and r.json["paused_until"] == clock.now + 3600, r.text
    view = api.call("GET", f"devices/{MAC}", token=tok).json
    assert view["paused"] and view["paused_until"] == clock.now + 3600 and view["in_schedule"] == ""
    assert api.call("GET", "devices", token=tok).json[0]["paused_by"] in ("pause", "")
    assert api.call("POST", f"pause/{MAC2}", token=tok).json["paused_until"] == clock.now + 3600   # no body: 60 min
    r = api.call("POST", f"resume/{MAC}", token=tok)
    assert r.status_int == 200 and not r.json["paused"]
    assert api.call("GET", f"status/{MAC}", token=tok).json["paused_until"] == 0
    assert api.call("POST", f"pause/{MAC}", {"minutes": "soon"}, token=tok).status_int == 400
    assert api.call("POST", f"pause/{MAC}", {"minutes": 0}, token=tok).status_int == 400
    assert api.call("POST", "pause/02:00:00:00:00:99", token=tok).status_int == 404
    assert api.call("POST", "pause/nope", token=tok).status_int == 400
    assert api.call("POST", f"pause/{MAC}", token=api.token("read-only")).status_int == 403


def test_a_device_cannot_pause_or_resume_itself(api):
    tok = api.token("admin")
    assert api.call("POST", f"resume/{MAC}", token=tok, client="10.2.0.2").status_int == 403
    assert api.call("POST", f"pause/{MAC2}", token=tok, client="10.2.0.2").status_int == 200


def test_a_dns_rule_with_a_schedule(api):
    tok = api.token("admin")
    r = api.call("POST", f"deny-dns/{MAC}/youtube.com", {"schedule": "daily 00:00-00:01"}, token=tok)
    assert r.status_int == 200 and r.json["schedule"] == "daily 00:00-00:01", r.text
    rule = api.call("GET", f"dns-rules/{MAC}", token=tok).json["rules"][0]
    assert rule["schedule"] == "daily 00:00-00:01" and "active" in rule
    r = api.call("POST", f"deny-dns/{MAC}/tiktok.com", {"schedule": "daily 00:00-24:00"}, token=tok)
    assert r.status_int == 400 and "HH:MM" in r.json["error"]


def test_the_routes_are_in_the_openapi_document():
    doc = json.loads((Path(__file__).parents[2] / "nox-modules/homework/components/api/openapi.json").read_text())
    for path in ("/schedules", "/schedules/{id}/remove", "/pause/{mac}", "/resume/{mac}"):
        assert path in doc["paths"], path


def test_without_the_component_the_routes_say_so(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock,
                     api_admin_password_file=str(pwfile))
    api = Api(core)
    req = Request.blank("/ws.v1/schedules", remote_addr=PROXY)
    req.headers["Authorization"] = f"Bearer {api.token('admin')}"
    resp = req.get_response(api.app)
    assert resp.status_int == 503 and "schedules" in resp.json["error"]
