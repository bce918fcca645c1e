"""The qos component behind the ws.v1 API and the command table: what is
applied on a change, bad input (400, nothing stored nor applied), windows, the device
view's priority, the high-drops alert, and state across a restart. tc and nft are
replaced by a recorder (the real ones run in tests/e2e/test_qos.py)."""
import pytest

from homework.components.qos import apply
from homework.flows import Datapath
from conftest import make_core
from test_api import MAC, MAC2, PASSWORD, Api
from test_dhcp_server import join

# Monday 2026-11-16 08:26:40 UTC
MONDAY_0826 = 1_794_817_600.0


class Tools:
    """Records every tc/nft call; answers like the real tools on a kernel without fq_codel."""

    def __init__(self, counters: str = ""):
        self.calls = []
        self.counters = counters

    def __call__(self, argv, text=""):
        self.calls.append((argv, text))
        if "fq_codel" in argv:
            return 2, "Error: Specified qdisc kind is unknown."
        if argv[:4] == ["tc", "-s", "-j", "class"]:
            return 0, self.counters
        return 0, ""

    def nft(self):
        return [t for a, t in self.calls if a[:2] == ["nft", "-f"] and "table inet homework_qos {" in t]

    def tc(self):
        return [t for a, t in self.calls if a[:3] == ["tc", "-force", "-batch"]]


@pytest.fixture
def tools(monkeypatch):
    found = Tools()
    monkeypatch.setattr(apply, "run_tool", found)
    return found


def new_core(tmp_path, clock, **qos):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    settings = {"qos_enabled": True, "qos_down_kbit": 19000, "qos_up_kbit": 4750, **qos}
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock, timezone="UTC",
                     api_admin_password_file=str(pwfile), **settings)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


@pytest.fixture
def api(tmp_path, clock, tools):
    clock.now = MONDAY_0826
    core = new_core(tmp_path, clock)
    join(core, MAC, 1)
    join(core, MAC2, 2, hostname=b"phone")
    core.commands.call("permit", mac=MAC)
    core.commands.call("permit", mac=MAC2)
    qos(core).flush()
    return Api(core)


def qos(core):
    return core.ctx.component("qos")


def test_enabled_in_the_config_loads_and_applies_at_95_percent_up_and_90_down(api, tools):
    tc = "\n".join(tools.tc())
    assert "qdisc replace dev wan0 root handle 1: htb default 3fff" in tc
    assert "class replace dev br0 parent 1: classid 1:1 htb rate 17100kbit ceil 17100kbit" in tc
    assert "class replace dev wan0 parent 1: classid 1:1 htb rate 4512kbit ceil 4512kbit" in tc
    body = api.call("GET", "qos", token=api.token("read-only")).json
    assert body["enabled"] is True and body["down_kbit"] == 19000 and body["up_kbit"] == 4750
    assert body["classes"] == ["high", "medium", "default"] and body["active"] is True
    assert body["leaf"] == "bfifo" and body["devices"] == {} and body["apps"] == []
    assert body["shape_percent"] == 95 and body["down_percent"] == 90


def test_a_device_set_high_is_mapped_to_its_high_leaf_and_shown_in_its_view(api, tools):
    tok = api.token("admin")
    r = api.call("POST", f"qos/devices/{MAC}", {"class": "high"}, token=tok)
    assert r.status_int == 200, r.text
    assert r.json["devices"] == {MAC: {"class": "high", "window": None}}
    qos(api.core).flush()
    lease = api.core.ctx.leases.get(MAC)
    minor = (1 << 14) | lease.index
    assert f"{lease.network} : 1:{minor:x}" in tools.nft()[-1]
    views = {v["mac"]: v for v in api.call("GET", "devices", token=tok).json}
    assert views[MAC]["priority"] == "high" and views[MAC2]["priority"] == "default"
    assert api.call("POST", f"qos/devices/{MAC}", {"class": "default"}, token=tok).json["devices"] == {}
    assert api.core.ctx.facts_about(MAC)["priority"] == "default"


@pytest.mark.parametrize("path, body, message", [
    (f"qos/devices/{MAC}", {"class": "urgent"}, "high, medium, default"),
    (f"qos/devices/{MAC}", {}, "class is required"),
    (f"qos/devices/{MAC}", {"class": "high", "window": {"days": "mon", "start": "25:00", "end": "07:00"}}, "HH:MM"),
    ("qos/link", {"down_kbit": 0}, "between 64 and 10,000,000"),
    ("qos/link", {"up_kbit": -5}, "between 64 and 10,000,000"),
    ("qos/link", {"down_kbit": 10_000_001}, "between 64 and 10,000,000"),
    ("qos/link", {"down_kbit": 19.5}, "whole number"),
    ("qos/link", {"down_kbit": "19000"}, "whole number"),
    ("qos/link", {"enabled": "yes"}, "true or false"),
    ("qos/link", {"speed": 5}, "unknown field"),
    ("qos/link", {}, "at least one"),
    ("qos/apps", {"name": "calls", "class": "top", "ports": ["udp/3478"]}, "high, medium, default"),
    ("qos/apps", {"name": "calls", "class": "high", "ports": ["udp/70000"]}, "ports"),
    ("qos/apps", {"name": "calls", "class": "high", "ports": ["icmp/1"]}, "ports"),
    ("qos/apps", {"name": "calls", "class": "high", "domains": ["not a domain"]}, "domains"),
    ("qos/apps", {"name": "calls", "class": "high"}, "ports and/or domains"),
    ("qos/apps", {"name": "", "class": "high", "ports": ["tcp/1"]}, "name"),
])
def test_bad_input_is_400_with_the_reason_and_nothing_changes(api, tools, path, body, message):
    before = api.call("GET", "qos", token=api.token("read-only")).json
    applied = len(tools.calls)
    r = api.call("POST", path, body, token=api.token("admin"))
    assert r.status_int == 400 and message in r.json["error"], r.text
    qos(api.core).flush()
    assert api.call("GET", "qos", token=api.token("read-only")).json == before
    assert len(tools.calls) == applied


def test_changes_need_the_admin_role_and_an_unknown_device_is_404(api):
    ro = api.token("read-only")
    assert api.call("POST", f"qos/devices/{MAC}", {"class": "high"}, token=ro).status_int == 403
    assert api.call("POST", "qos/devices/02:00:00:00:99:99", {"class": "high"},
                    token=api.token("admin")).status_int == 404
    assert api.call("POST", "qos/devices/nonsense", {"class": "high"}, token=api.token("admin")).status_int == 400


def test_apps_are_created_replaced_by_name_and_deleted(api, tools):
    tok = api.token("admin")
    r = api.call("POST", "qos/apps", {"name": "video calls", "class": "high", "ports": ["udp/3478-3481", "tcp/443"],
                                      "domains": ["zoom.us"]}, token=tok)
    assert r.status_int == 200, r.text
    assert r.json["apps"] == [{"name": "video calls", "class": "high", "ports": ["udp/3478-3481", "tcp/443"],
                               "domains": ["zoom.us"], "window": None}]
    qos(api.core).flush()
    nft = tools.nft()[-1]
    app_id = qos(api.core).store.apps["video calls"].id
    assert f"udp dport {{ 3478-3481 }} ct mark set {app_id}" in nft and f"set app{app_id}_4" in nft
    r = api.call("POST", "qos/apps", {"name": "video calls", "class": "medium", "ports": ["udp/3478"]}, token=tok)
    assert [a["class"] for a in r.json["apps"]] == ["medium"]
    # a DNS answer for one of its domains feeds its address set
    api.core.ctx.bus.publish("dns_answer", mac=MAC, name="eu01.zoom.us", addresses=["203.0.113.9"])
    assert not [t for a, t in tools.calls if "203.0.113.9" in t]          # medium app has no domains now
    api.call("POST", "qos/apps", {"name": "video calls", "class": "high", "domains": ["zoom.us"]}, token=tok)
    qos(api.core).flush()
    api.core.ctx.bus.publish("dns_answer", mac=MAC, name="eu01.zoom.us", addresses=["203.0.113.9"])
    qos(api.core).flush()
    assert [t for a, t in tools.calls if f"app{app_id}_4 {{ 203.0.113.9 timeout" in t]
    session = Api(api.core)
    session.login()
    assert session.call("DELETE", "qos/apps/video%20calls").status_int == 403      # no CSRF token
    r = session.call("DELETE", "qos/apps/video%20calls", csrf=session.csrf)
    assert r.status_int == 200 and r.json["apps"] == []
    assert api.call("DELETE", "qos/apps/video%20calls", token=tok).status_int == 404


def test_a_window_applies_the_rule_only_while_it_is_open(api, tools, clock):
    tok = api.token("admin")
    r = api.call("POST", f"qos/devices/{MAC}", {"class": "high", "window": {"days": ["mon"], "start": "09:00",
                                                                          "end": "17:00"}}, token=tok)
    assert r.json["devices"][MAC]["window"] == {"days": ["mon"], "start": "09:00", "end": "17:00"}
    q = qos(api.core)
    q.flush()
    assert api.core.ctx.facts_about(MAC)["priority"] == "default"       # 08:26: not yet
    applied = len(tools.nft())
    clock.advance(40 * 60)                                                # 09:06
    q.tick()
    q.flush()
    assert api.core.ctx.facts_about(MAC)["priority"] == "high"
    assert len(tools.nft()) == applied + 1
    lease = api.core.ctx.leases.get(MAC)
    assert f"{lease.network} : 1:{(1 << 14) | lease.index:x}" in tools.nft()[-1]


def test_changes_are_published_for_hwdb(api):
    from homework.components.hwdb_sync.rows import ROW_BUILDERS
    seen = []
    for topic in ("qos_app", "qos_device"):
        api.core.ctx.bus.subscribe(topic, lambda topic, ev: seen.append(ROW_BUILDERS[topic](ev)) or [])
    api.core.commands.call("qos-device", mac=MAC, cls="high")
    api.core.commands.call("qos-app", name="games", cls="medium", ports="udp/27015-27030", domains="")
    api.core.commands.call("qos-app-delete", name="games")
    assert seen == [[("DevicePriorities", (MAC, "high"), True)],
                    [("AppPriorities", ("games", "medium", "udp/27015-27030", ""), True)],
                    [("AppPriorities", ("games", "", "", ""), True)]]


def test_drops_in_the_high_class_raise_one_alert_a_minute(api, tools, clock):
    from homework.components.hwdb_sync.rows import qos_rows
    alerts, rows = [], []
    api.core.ctx.bus.subscribe("alert", lambda topic, ev: alerts.append(ev) or [])
    api.core.ctx.bus.subscribe("qos", lambda topic, ev: rows.extend(qos_rows(ev)) or [])
    q = qos(api.core)
    lease = api.core.ctx.leases.get(MAC)
    minor = f"{(1 << 14) | lease.index:x}"

    def counters(drops):
        return (f"class htb 1:{minor} parent 1:10 leaf {minor}: prio 0 rate 451Kbit ceil 1353Kbit\n"
                f" Sent 1000 bytes 5 pkt (dropped {drops}, overlimits 0 requeues 0)\n")
    for drops, expected in ((0, 0), (2, 1), (5, 1)):
        tools.counters = counters(drops)
        clock.advance(1)
        q.tick()
        assert len(alerts) == expected
    clock.advance(61)
    tools.counters = counters(9)
    q.tick()
    assert len(alerts) == 2 and alerts[-1]["kind"] == "qos-high-drops"
    assert ("QosRates", ("", "down", "high", 0, 1000, 9), False) in rows       # hwdb's row per class
    stats = api.call("GET", "qos/stats", token=api.token("read-only")).json
    assert {"direction": "down", "class": "high", "drops": 9} .items() <= next(
        r for r in stats["classes"] if r["direction"] == "down" and r["class"] == "high").items()


def test_priorities_and_rates_survive_a_restart(tmp_path, clock, tools):
    clock.now = MONDAY_0826
    core = new_core(tmp_path, clock)
    join(core, MAC, 1)
    core.commands.call("qos-device", mac=MAC, cls="medium")
    core.commands.call("qos-app", name="games", cls="high", ports="udp/27015-27030", domains="")
    core.commands.call("qos-link", down_kbit=50000, enabled=True)
    qos(core).flush()
    core.stop()
    again = new_core(tmp_path, clock)
    shown = again.commands.call("qos")
    assert shown["devices"] == {MAC: {"class": "medium", "window": None}}
    assert [(a["name"], a["class"], a["ports"]) for a in shown["apps"]] == [("games", "high", ["udp/27015-27030"])]
    assert shown["down_kbit"] == 50000 and shown["up_kbit"] == 4750      # state wins over the file; the rest stays
    qos(again).flush()
    assert "class replace dev br0 parent 1: classid 1:1 htb rate 45000kbit" in "\n".join(tools.tc())


def test_disabled_removes_the_shaping(api, tools):
    r = api.call("POST", "qos/link", {"enabled": False}, token=api.token("admin"))
    assert r.status_int == 200 and r.json["enabled"] is False
    qos(api.core).flush()
    assert qos(api.core).active is False
    assert (["tc", "qdisc", "del", "dev", "br0", "root"], "") in tools.calls
    assert any(a[:2] == ["nft", "-f"] and t.strip().endswith("delete table inet homework_qos") for a, t in tools.calls)


def test_the_cli_says_what_high_gets_in_words(capsys):
    """High is sure of its share when the line is busy and may take all of it when idle:
    the CLI's summary and help say so, never that High is held to its share."""
    from homework import cli_qos
    cli_qos.print_qos({"enabled": True, "active": True, "leaf": "bfifo", "down_kbit": 20000, "up_kbit": 5000,
                       "high_share": 30})
    out = capsys.readouterr().out
    assert "high sure of 30% when the line is busy, all of it when idle" in out and "at most" not in out
