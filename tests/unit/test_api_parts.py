"""Pieces of the api and linksim components: password hashing, the login limiter, the
OUI table, board metrics, and the link simulator reading real port counters."""
import subprocess
import sys

import pytest

from conftest import Clock, make_core
from homework.components.api.auth import Auth
from homework.oui import OuiTable, is_private
from homework.components.api.ratelimit import LoginLimiter
from homework.flows import Datapath
from homework.passwords import hash_password, verify_password
from homework.state import StateStore
from test_dhcp_server import join

MAC = "02:00:00:00:00:01"


def test_password_hash_is_salted_scrypt_and_verifies():
    a, b = hash_password("hunter22!"), hash_password("hunter22!")
    assert a != b and a.startswith("scrypt$")
    assert verify_password("hunter22!", a) and not verify_password("hunter23!", a)
    assert not verify_password("x", "garbage") and not verify_password("x", "md5$1$2$3$4$5")


def test_the_password_check_imports_no_web_stack():
    """homework-firstboot checks the initial password at every boot of the image: it must
    not pay for importing the API package (webob, the components) each time."""
    code = ("import sys, homework.passwords; "
            "print(sorted(m for m in sys.modules if m.startswith(('webob', 'homework.components', 'os_ken'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_only_hashes_are_stored(tmp_path):
    state = StateStore(tmp_path / "s.db")
    auth = Auth(state, Clock())
    generated = auth.ensure_password()
    assert generated and auth.check_password(generated)
    assert auth.ensure_password() is None           # only on first start
    tok = auth.create_token("t", "admin")["token"]
    sid, _ = auth.create_session()
    dump = "\n".join(state.db.iterdump())
    for secret in (generated, tok, sid):
        assert secret not in dump


def test_password_change_ends_sessions_and_bad_passwords_refused(tmp_path):
    auth = Auth(StateStore(tmp_path / "s.db"), Clock())
    auth.set_password("first password")
    sid, _ = auth.create_session()
    assert auth.session(sid) is not None
    auth.set_password("second password")
    assert auth.session(sid) is None
    with pytest.raises(ValueError):
        auth.set_password("short")


def test_sessions_expire(tmp_path):
    clock = Clock()
    auth = Auth(StateStore(tmp_path / "s.db"), clock, session_lifetime=600)
    sid, csrf = auth.create_session()
    assert auth.session(sid).csrf == csrf
    clock.advance(601)
    assert auth.session(sid) is None and auth.session("") is None


def test_limiter_locks_one_address_and_forgives_with_time():
    clock = Clock()
    lim = LoginLimiter(clock, limit=3, window=60)
    for _ in range(3):
        assert lim.retry_after("a") == 0
        lim.failed("a")
    assert 0 < lim.retry_after("a") <= 60 and lim.retry_after("b") == 0
    clock.advance(61)
    assert lim.retry_after("a") == 0


def test_oui_longest_assignment_wins(tmp_path):
    (tmp_path / "oui.csv").write_text("Registry,Assignment,Organization Name,Organization Address\n"
                                      "MA-L,404E36,HTC Corporation,Taoyuan\n"
                                      "MA-L,70B3D5,IEEE Registration Authority,x\n")
    (tmp_path / "oui36.csv").write_text("Registry,Assignment,Organization Name,Organization Address\n"
                                        "MA-S,70B3D5F2F,TELEPLATFORMS,Moscow\n")
    t = OuiTable(tmp_path)
    assert t.vendor("40:4e:36:00:00:01") == "HTC Corporation"
    assert t.vendor("70:b3:d5:f2:f0:01") == "TELEPLATFORMS"
    assert t.vendor("70:b3:d5:00:00:01") == "IEEE Registration Authority"
    assert t.vendor("42:4e:36:00:00:01") == ""      # locally administered: no vendor
    assert is_private("02:68:77:00:00:01") and not is_private("40:4e:36:00:00:01")


def test_debian_ieee_data_is_used():
    assert OuiTable().vendor("40:4e:36:00:00:01") == "HTC Corporation"


def test_the_registry_is_read_once_and_off_the_loop(tmp_path, monkeypatch):
    """Tens of thousands of lines: read through worker.offload (a real OS thread under the
    controller's eventlet), once, however many ask."""
    from homework import oui
    (tmp_path / "oui.csv").write_text("Registry,Assignment,Organization Name,Organization Address\n"
                                      "MA-L,404E36,HTC Corporation,Taoyuan\n")
    offloaded = []
    monkeypatch.setattr(oui, "offload", lambda fn, *args: offloaded.append(fn.__name__) or fn(*args))
    t = OuiTable(tmp_path)
    t.load()
    assert t.vendor("40:4e:36:00:00:01") == "HTC Corporation" and t.vendor("40:4e:36:00:00:02")
    assert offloaded == ["_read"]


@pytest.fixture
def core(tmp_path, clock):
    sysnet = tmp_path / "sys"
    stats = sysnet / "p1" / "statistics"
    stats.mkdir(parents=True)
    for name, value in (("rx_packets", 10), ("tx_packets", 10), ("rx_bytes", 1000), ("tx_bytes", 1000)):
        (stats / name).write_text(f"{value}\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "linksim"), clock=clock)
    core.ctx.component("linksim").sys_net = sysnet
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "p1": 1}))
    join(core, MAC, 1)
    core.stats_dir = stats
    return core


def bump(core, packets, nbytes):
    for name, value in (("rx_packets", packets), ("tx_packets", 0), ("rx_bytes", nbytes), ("tx_bytes", 0)):
        (core.stats_dir / name).write_text(f"{value}\n")


def test_linksim_reports_real_port_bytes_and_pinned_radio(core, clock):
    events = []
    core.bus.subscribe("link", lambda t, p: events.append(p))
    sim = core.ctx.component("linksim")
    sim.pin(MAC, rssi=-88, retry_rate=0.5)
    sim.tick()
    bump(core, 1010, 501000)
    clock.advance(2)
    sim.tick()
    assert [e["mac"] for e in events] == [MAC, MAC]
    assert events[-1]["bytes"] == 501000 and events[-1]["rssi"] == -88
    assert events[-1]["retries"] > events[0]["retries"]
    m = core.ctx.component("api").board.metrics(MAC)
    assert m["rssi"] == -88 and m["retrans"] == pytest.approx(0.5, abs=0.01)
    assert m["bps"] == pytest.approx((501000 - 2000) / 2, rel=0.01) and m["today_bytes"] == 499000
    with pytest.raises(ValueError):
        sim.pin(MAC, rssi=10)


def test_unpinned_radio_stays_plausible(core, clock):
    sim = core.ctx.component("linksim")
    for _ in range(50):
        sim.tick()
        clock.advance(1)
    rssi = core.ctx.component("api").board.metrics(MAC)["rssi"]
    assert -95 <= rssi <= -30


def test_bandwidth_events_used_only_without_link_reports(core, clock):
    board = core.ctx.component("api").board
    core.bus.publish("bandwidth", mac="02:00:00:00:00:09", ip="10.2.0.10", bytes=0)
    clock.advance(10)
    core.bus.publish("bandwidth", mac="02:00:00:00:00:09", ip="10.2.0.10", bytes=50000)
    assert board.metrics("02:00:00:00:00:09")["bps"] == pytest.approx(5000)


def test_a_rate_after_quiet_is_over_the_interval_the_report_covers(core, clock):
    # routing tells a device only while it moves bytes: after ten quiet minutes, 50 kB in
    # the last 10 s is 5 kB/s, not 50 kB over ten minutes
    board = core.ctx.component("api").board
    core.bus.publish("bandwidth", mac="02:00:00:00:00:09", ip="10.2.0.10", bytes=0, seconds=10)
    clock.advance(600)
    core.bus.publish("bandwidth", mac="02:00:00:00:00:09", ip="10.2.0.10", bytes=50000, seconds=10)
    assert board.metrics("02:00:00:00:00:09")["bps"] == pytest.approx(5000)
