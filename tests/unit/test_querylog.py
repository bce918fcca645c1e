"""The query log and local-names routes of the ws.v1 API over a real core, with
hwdb replaced by a client that records the queries it is sent (the e2e test uses hwdbd)."""
import pytest

from conftest import make_core
from homework.flows import Datapath
from test_api import MAC, MAC2, PASSWORD, Api
from test_dhcp_server import join


class Result:
    def __init__(self, rows):
        self.rows = rows


class FakeHwdb:
    def __init__(self):
        self.sent = []
        self.rows = {"timestamp": [{"timestamp": 1_700_000_000_500_000_000, "mac": MAC, "name": "ads.test",
                                    "qtype": "1", "verdict": "blocked", "count": 3}],
                     "mac, verdict": [{"mac": MAC, "verdict": "allowed", "sum(count)": 5},
                                      {"mac": MAC, "verdict": "blocked", "sum(count)": 3},
                                      {"mac": MAC2, "verdict": "allowed", "sum(count)": 9}],
                     "name, sum": [{"name": "(other names)", "sum(count)": 50}, {"name": "ads.test", "sum(count)": 3}]}

    def query(self, sql):
        self.sent.append(sql)
        for key, rows in self.rows.items():
            if sql.startswith(f"select {key}"):
                return Result(rows)
        return Result([])


@pytest.fixture
def core(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "localnames", "api"), clock=clock,
                     api_admin_password_file=str(pwfile), localnames_hosts_dir=tmp_path / "hosts.d")
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    join(core, MAC, 1)
    join(core, MAC2, 2, hostname=b"phone")
    return core


@pytest.fixture
def api(core):
    return Api(core)


@pytest.fixture
def hwdb(api, core):
    fake = FakeHwdb()
    api.app.hwdb_client_factory = lambda: fake
    object.__setattr__(core.config, "hwdb_enabled", True)
    return fake


def test_queries_newest_first_with_filters(api, core, hwdb):
    core.commands.call("set-meta", mac=MAC, name="Kid's tablet")
    tok = api.token("read-only")
    r = api.call("GET", f"dns/queries?mac={MAC.replace(':', '-')}&search=ADS&verdict=blocked&limit=5000", token=tok)
    assert r.status_int == 200, r.text
    assert hwdb.sent == [f"select timestamp, mac, name, qtype, verdict, count from DnsQueries where mac = '{MAC}' "
                         "and name contains 'ads' and verdict = 'blocked' order by timestamp desc limit 1000"]
    assert r.json == {"limit": 1000, "queries": [{"at": 1_700_000_000.5, "mac": MAC, "device": "Kid's tablet",
                                                  "name": "ads.test", "type": "A", "verdict": "blocked", "count": 3}]}
    api.call("GET", "dns/queries", token=tok)
    assert hwdb.sent[-1].endswith("from DnsQueries order by timestamp desc limit 100")


@pytest.mark.parametrize("query, words", [
    ("mac=nonsense", "MAC"), ("limit=0", "at least 1"), ("limit=ten", "whole number"),
    ("verdict=maybe", "verdict must be"), ("search=a'+or+1", "search"), ("search=" + "a" * 254, "search"),
    ("color=red", "unknown parameter"), ("limit=1&limit=2", "more than once"),
])
def test_bad_parameters_are_400_and_nothing_is_asked(api, hwdb, query, words):
    r = api.call("GET", f"dns/queries?{query}", token=api.token("read-only"))
    assert r.status_int == 400 and words in r.json["error"], r.text
    assert hwdb.sent == []


def test_summary_counts_per_device_and_top_blocked(api, core, hwdb):
    r = api.call("GET", "dns/queries/summary?top=5", token=api.token("read-only"))
    assert r.status_int == 200, r.text
    assert r.json == {"devices": [{"mac": MAC2, "device": "phone", "total": 9, "blocked": 0},
                                  {"mac": MAC, "device": "laptop", "total": 8, "blocked": 3}],
                      "top_blocked": [{"name": "ads.test", "count": 3}]}   # the flood's fold-up row is no name
    assert api.call("GET", "dns/queries/summary?top=x", token=api.token("read-only")).status_int == 400


def test_without_hwdb_the_query_log_says_503(api):
    r = api.call("GET", "dns/queries", token=api.token("read-only"))
    assert r.status_int == 503 and "hwdb" in r.json["error"]


def test_queries_need_credentials(api, hwdb):
    assert api.call("GET", "dns/queries").status_int == 401
    assert hwdb.sent == []


def test_local_names_route(api, core):
    core.commands.call("permit", mac=MAC2)
    core.ctx.component("localnames").tick()          # its next pass (events mark names stale)
    r = api.call("GET", "local-names", token=api.token("read-only"))
    assert r.status_int == 200
    assert r.json == [{"label": "phone", "name": "phone.home.arpa", "mac": MAC2, "ip": "10.2.0.6"}]
    assert api.call("GET", "devices", token=api.token("read-only")).json   # the board's views carry it too
    assert core.commands.call("status", mac=MAC2)["dns_name"] == "phone.home.arpa"


def test_local_names_503_without_the_component(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock, api_admin_password_file=str(pwfile))
    api = Api(core)
    assert api.call("GET", "local-names", token=api.token("read-only")).status_int == 503
