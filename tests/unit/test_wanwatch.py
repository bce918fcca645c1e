"""WAN watch: what counts as down (probe.py, against a fake sysfs/procfs), the
hysteresis (down after N failed looks, one report per change, no flapping), and the whole
path in the controller: alert -> notification (not deduplicated), webhooks, homework_wan_up,
`wan-status` and GET /ws.v1/notify/status."""
import pytest

from conftest import make_core
from homework.components.wanwatch.hysteresis import Hysteresis
from homework.components.wanwatch.probe import Look, look
from test_api import Api

ROUTE4_HEAD = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"


# -- hysteresis --------------------------------------------------------------------------------
def test_down_only_after_n_failures_in_a_row_and_reported_once():
    h = Hysteresis(down_after=3, up_after=2)
    assert [h.observe(True), h.observe(True)] == [None, None]      # first "up" is not news
    assert h.up is True
    assert [h.observe(False), h.observe(False)] == [None, None] and h.up is True
    assert h.observe(False) == "down" and h.up is False
    assert [h.observe(False) for _ in range(10)] == [None] * 10    # still down: no repeat
    assert h.observe(True) is None
    assert h.observe(True) == "up"
    assert [h.observe(True) for _ in range(5)] == [None] * 5


def test_flapping_never_changes_the_state():
    h = Hysteresis(down_after=3, up_after=2)
    h.observe(True), h.observe(True)
    got = [h.observe(ok) for ok in [False, False, True] * 10]   # two failures, then one good look
    assert got == [None] * 30 and h.up is True
    h2 = Hysteresis(down_after=3, up_after=2)
    for _ in range(3):
        h2.observe(False)
    assert [h2.observe(ok) for ok in [True, False] * 10] == [None] * 20 and h2.up is False


def test_a_wan_down_at_start_is_reported():
    h = Hysteresis(down_after=2, up_after=2)
    assert [h.observe(False), h.observe(False)] == [None, "down"]
    assert [h.observe(True), h.observe(True)] == [None, "up"]


# -- the probe, against a fake /sys/class/net and /proc/net -----------------------------------
@pytest.fixture
def fs(tmp_path):
    sysnet = tmp_path / "sys"
    dev = sysnet / "wan0"
    dev.mkdir(parents=True)
    (dev / "operstate").write_text("up\n")
    (dev / "carrier").write_text("1\n")
    r4, r6 = tmp_path / "route", tmp_path / "ipv6_route"
    r4.write_text(ROUTE4_HEAD + "wan0\t00000000\t016433C6\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                  "wan0\t006433C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
    r6.write_text("")

    def run(ifname="wan0"):
        return look(ifname, sysnet, r4, r6)
    run.dev, run.r4, run.r6 = dev, r4, r6
    return run


def test_probe_up_with_carrier_and_default_route(fs):
    assert fs() == Look(True, "the router's internet port (wan0) is connected")


def test_probe_down_reasons(fs):
    assert fs("wan9").ok is False and "(wan9) is not there" in fs("wan9").reason
    (fs.dev / "carrier").write_text("0\n")
    assert fs() == Look(False, "the router's internet port (wan0) has no link: check the cable to the modem, "
                               "and the modem")
    (fs.dev / "operstate").write_text("down\n")
    (fs.dev / "carrier").unlink()           # the kernel refuses to read it while down
    assert fs() == Look(False, "the router's internet port (wan0) is down")


def test_probe_needs_a_default_route_through_the_wan(fs):
    (fs.dev.parent / "eth1").mkdir()
    fs.r4.write_text(ROUTE4_HEAD + "eth1\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                     "wan0\t006433C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
    assert fs().ok is False and "no way out through its internet port (wan0)" in fs().reason
    # IPv6-only uplink: a ::/0 route out of wan0 is enough
    fs.r6.write_text("00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
                     "fe800000000000000000000000000001 00000400 00000001 00000000 00000003     wan0\n")
    assert fs().ok is True


# -- in the controller ---------------------------------------------------------------------------
class FakeLink:
    def __init__(self):
        self.ok = True
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return Look(self.ok, "test link up" if self.ok else "test link lost")


@pytest.fixture
def core(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "notify", "metrics", "wanwatch"),
                     clock=clock, wanwatch_down_after=3, wanwatch_up_after=2)
    core.link = FakeLink()
    core.ctx.component("wanwatch").probe = core.link
    alerts = core.alerts = []
    core.bus.subscribe("alert", lambda _t, ev: alerts.append(ev))
    return core


def looks(core, clock, *oks):
    for ok in oks:
        core.link.ok = ok
        core.ctx.component("wanwatch").check()
        clock.advance(1)


def kinds(core):
    return [n["kind"] for n in core.commands.call("notifications")["notifications"]]


def wan_up_metric(core):
    lines = [ln for ln in core.commands.call("metrics").splitlines() if ln.startswith("homework_wan_up ")]
    assert len(lines) == 1
    return float(lines[0].split()[1])


def test_one_notification_per_change_and_none_for_flapping(core, clock):
    before = core.link.calls
    for timer in core.timers:              # the periodic look is scheduled
        timer()
    assert core.link.calls == before + 1
    looks(core, clock, True, True)
    assert kinds(core) == [] and wan_up_metric(core) == 1
    assert core.commands.call("wan-status")["state"] == "up"
    looks(core, clock, False, False, True, False, False, True)        # flapping: never 3 in a row
    assert kinds(core) == [] and wan_up_metric(core) == 1
    looks(core, clock, False, False, False, False, False)
    assert kinds(core) == ["wan-down"] and wan_up_metric(core) == 0
    note = core.commands.call("notifications")["notifications"][0]
    assert note["title"] == "The internet connection is down." and note["detail"] == "Test link lost."
    assert [a["kind"] for a in core.alerts] == ["wan-down"] and core.alerts[0]["mac"] == ""
    status = core.commands.call("wan-status")
    assert status["state"] == "down" and status["reason"] == "test link lost"
    looks(core, clock, True, True, True)
    assert kinds(core) == ["wan-up", "wan-down"] and wan_up_metric(core) == 1
    up = core.commands.call("notifications")["notifications"][0]
    assert up["title"] == "The internet connection is back." and \
        up["detail"] == "Test link up. It was down for 4 s."
    # A second outage within a minute is news too (the dedup window is for floods of alerts).
    looks(core, clock, False, False, False)
    assert kinds(core) == ["wan-down", "wan-up", "wan-down"]
    assert core.counters.snapshot()["wanwatch"] == {"down": 2, "up": 1}


def test_wan_down_goes_to_the_webhooks(core, clock):
    notify = core.ctx.component("notify")
    sent = []
    notify.deliverer.submit = lambda targets, note: sent.append((targets, note))
    core.commands.call("webhook-add", url="http://192.0.2.1/hook")
    looks(core, clock, True, True, False, False, False)
    assert len(sent) == 1 and sent[0][1]["kind"] == "wan-down" and sent[0][0][0][1] == "http://192.0.2.1/hook"


def test_notify_status_shows_mqtt_and_wan_without_secrets(tmp_path, clock):
    pw = tmp_path / "mqtt-password"
    pw.write_text("s3cret-mqtt\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "notify", "wanwatch"), clock=clock,
                     mqtt_username="homework", mqtt_password_file=str(pw), mqtt_host="192.0.2.7")
    api = Api(core)
    assert api.call("GET", "notify/status", token=api.token("read-only")).status_int == 403
    r = api.call("GET", "notify/status", token=api.token("admin"))
    assert r.status_int == 200, r.text
    mqtt = r.json["mqtt"]
    assert mqtt["host"] == "192.0.2.7" and mqtt["username"] == "homework" and mqtt["password_set"] is True
    assert mqtt["loaded"] is False and mqtt["connected"] is False
    assert r.json["wan"] == {"interface": "wan0", "state": "unknown", "since": None, "reason": ""}
    assert "s3cret" not in r.text
