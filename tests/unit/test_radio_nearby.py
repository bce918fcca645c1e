"""Nearby devices from probe requests and the band on the label: hostapd's
RX-PROBE-REQUEST events parsed (good, malformed, other events), the tracker's rate limit,
ageing, randomised grouping and cap, a real unix datagram socket standing in for hostapd's
control socket (ATTACH handshake, events, the socket vanishing and coming back), and the
whole radio component in a core with the API: Links rows, GET /ws.v1/nearby, the board's
snapshot and stream, `band` in the device view."""
import os
import shutil
import socket
import time
from pathlib import Path

import pytest

from conftest import make_core
from fakehostapd import FakeHostapd
from homework.components.hwdb_sync.rows import link_rows
from homework.components.radio.ctrlsocket import QUIET, RETRY
from homework.components.radio.ifinfo import band_of, parse_band
from homework.components.radio.nearby import NearbyListener, NearbyTracker
from homework.components.radio.probes import BadEvent, ProbeRequest, parse_event
from homework.components.radio.stationevents import station_event
from homework.flows import Datapath
from test_api import PASSWORD, Api

DATA = Path(__file__).parent / "data" / "iw"
PHONE = "00:16:3e:00:00:01"          # globally administered: listed on its own
LAPTOP = "00:16:3e:00:00:02"
RAND1, RAND2 = "da:a1:19:00:00:01", "5e:00:00:00:00:02"     # locally administered: grouped
STATION = "02:00:00:00:01:00"        # associated (in data/iw/poll1.txt)


def probe(mac, signal):
    return f"<3>RX-PROBE-REQUEST sa={mac} signal={signal}"


# -- the event parser --------------------------------------------------------------------------
def test_parses_probe_request_events_with_and_without_level_and_extra_fields():
    assert parse_event(probe("00:16:3E:00:00:01", -41)) == ProbeRequest(PHONE, -41)
    assert parse_event(f"RX-PROBE-REQUEST sa={PHONE} signal=-70\n") == ProbeRequest(PHONE, -70)
    # newer hostapd: channel, rate and the frame's hex after the two fields we use
    assert parse_event(f"<3>RX-PROBE-REQUEST sa={PHONE} signal=-55 channel=6 rate=10 buf=40000000") \
        == ProbeRequest(PHONE, -55)


def test_other_events_are_not_ours():
    for text in ("<3>AP-STA-CONNECTED 02:00:00:00:01:00", "<3>CTRL-EVENT-EAP-STARTED 02:00:00:00:01:00",
                 "OK\n", "", "<2>RX-PROBE-REQUESTED sa=x"):
        assert parse_event(text) is None


@pytest.mark.parametrize("text", [
    "<3>RX-PROBE-REQUEST sa=zz:zz:zz:zz:zz:zz signal=-40",
    "<3>RX-PROBE-REQUEST signal=-40",
    f"<3>RX-PROBE-REQUEST sa={PHONE}",
    f"<3>RX-PROBE-REQUEST sa={PHONE} signal=strong",
    f"<3>RX-PROBE-REQUEST sa={PHONE} signal=40",
    "<3>RX-PROBE-REQUEST",
])
def test_malformed_probe_request_events_raise_bad_event(text):
    with pytest.raises(BadEvent):
        parse_event(text)


# -- the band ------------------------------------------------------------------------------------
def test_band_from_iw_dev_info():
    assert parse_band((DATA / "info-2g.txt").read_text()) == "2.4 GHz"
    assert parse_band((DATA / "info-5g.txt").read_text()) == "5 GHz"
    assert parse_band((DATA / "info-down.txt").read_text()) is None       # no channel line
    assert parse_band("\tchannel 37 (6135 MHz), width: 160 MHz\n") == "6 GHz"
    assert parse_band("garbage\n\tchannel x (y MHz)\n") is None and parse_band("") is None
    assert [band_of(f) for f in (2412, 2484, 5180, 5885, 5955, 7115, 900)] == \
        ["2.4 GHz", "2.4 GHz", "5 GHz", "5 GHz", "6 GHz", "6 GHz", None]


def test_config_keys_and_their_checks():
    import tomllib
    from homework.config import ConfigError, parse as parse_config
    cfg = parse_config(tomllib.loads('[radio]\ninterfaces = ["wlan0"]\n'))
    assert (cfg.radio_hostapd_ctrl_dir, cfg.radio_nearby_interval, cfg.radio_nearby_forget, cfg.radio_nearby_max) \
        == ("/run/hostapd", 10, 300, 30)
    assert cfg.radio_info_command == "iw dev {ifname} info"
    for bad in ("nearby_interval = 0", "nearby_forget = 5", "nearby_max = 0", 'hostapd_ctrl_dir = 3'):
        with pytest.raises(ConfigError, match="radio."):
            parse_config(tomllib.loads(f"[radio]\n{bad}\n"))


# -- the tracker -------------------------------------------------------------------------------
class Recorder:
    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append((event.TOPIC, event))

    def take(self, topic=None):
        out = [(t, p) for t, p in self.events if topic is None or t == topic]
        self.events = [e for e in self.events if e not in out]
        return out


def tracker(clock, cap=30, associated=(), known=()):
    rec = Recorder()
    t = NearbyTracker(rec, clock, interval=10, forget=300, cap=cap, associated=lambda m: m in associated,
                      known=lambda m: m in known, band=lambda ifname: "2.4 GHz")
    return t, rec


def test_one_link_event_per_mac_per_interval(clock):
    t, rec = tracker(clock)
    t.heard("wlan0", ProbeRequest(PHONE, -50))
    [(_, link)] = rec.take("link")
    assert link["mac"] == PHONE and link["rssi"] == -50.0 and link["associated"] is False
    assert link["ifname"] == "wlan0" and link["seen_at"] == clock()
    for i in range(9):
        clock.advance(1)
        t.heard("wlan0", ProbeRequest(PHONE, -60 - i))
    assert rec.take("link") == []                       # within the interval: held back
    assert t.listing()[0]["rssi"] == -68.0 and t.listing()[0]["last_heard"] == clock()   # the list is current
    clock.advance(1)
    t.heard("wlan0", ProbeRequest(PHONE, -45))
    assert [p["rssi"] for _, p in rec.take("link")] == [-45.0]


def test_entries_age_out_with_a_gone_event(clock):
    t, rec = tracker(clock)
    t.heard("wlan0", ProbeRequest(PHONE, -50))
    rec.take()
    clock.advance(299)
    t.tick()
    assert rec.take() == [] and [e["mac"] for e in t.listing()] == [PHONE]
    clock.advance(2)
    t.tick()
    [(topic, gone)] = rec.take()
    assert topic == "nearby" and gone["mac"] == PHONE and gone["gone"] is True
    assert t.listing() == []


def test_randomised_macs_are_one_group_per_radio(clock):
    t, rec = tracker(clock)
    t.heard("wlan0", ProbeRequest(RAND1, -60))
    assert rec.take("link") == []                        # no label (and no Links row) per random MAC
    [(_, group)] = rec.take("nearby")
    assert group["mac"] == "random-wlan0" and group["count"] == 1 and group["randomised"] is True
    clock.advance(1)
    t.heard("wlan0", ProbeRequest(RAND2, -40))
    assert rec.take() == []                              # the group is rate-limited too
    clock.advance(9)
    t.tick()
    [(_, group)] = rec.take("nearby")
    assert (group["count"], group["rssi"], group["macs"]) == (2, -40.0, [RAND2, RAND1])
    t.heard("wlan1", ProbeRequest(RAND1, -80))         # another radio: its own group
    listing = t.listing()
    assert [(e["mac"], e["count"]) for e in listing] == [("random-wlan0", 2), ("random-wlan1", 1)]
    assert [p["mac"] for _, p in rec.take("nearby")] == ["random-wlan1"]
    clock.advance(290.5)                                 # RAND1 on wlan0 ages out (heard 300.5 s ago)
    t.tick()
    assert [(p["mac"], p["count"], p["gone"]) for _, p in rec.take("nearby")] == [("random-wlan0", 1, False)]
    clock.advance(10)
    t.tick()
    gone = {p["mac"]: p["gone"] for _, p in rec.take("nearby")}
    assert gone == {"random-wlan0": True, "random-wlan1": True} and t.listing() == []


def test_the_cap_keeps_the_strongest(clock):
    t, rec = tracker(clock, cap=2)
    t.heard("wlan0", ProbeRequest(PHONE, -50))
    t.heard("wlan0", ProbeRequest(LAPTOP, -80))
    rec.take()
    t.heard("wlan0", ProbeRequest("00:16:3e:00:00:03", -90))     # weaker than both: not listed
    assert rec.take() == [] and len(t.listing()) == 2
    t.heard("wlan0", ProbeRequest("00:16:3e:00:00:04", -60))     # stronger: the weakest leaves
    events = rec.take()
    assert ("nearby", LAPTOP, True) in [(topic, p["mac"], p.get("gone")) for topic, p in events]
    assert [e["mac"] for e in t.listing()] == [PHONE, "00:16:3e:00:00:04"]


def test_associated_and_registered_macs_are_not_nearby_and_leave_silently(clock):
    associated, known = set(), set()
    t, rec = tracker(clock, associated=associated, known=known)
    associated.add(STATION)
    known.add(LAPTOP)
    t.heard("wlan0", ProbeRequest(STATION, -40))
    t.heard("wlan0", ProbeRequest(LAPTOP, -40))
    assert rec.take() == [] and t.listing() == []
    t.heard("wlan0", ProbeRequest(PHONE, -50))
    rec.take()
    associated.add(PHONE)                                # it connected: the station dump has its label now
    t.tick()
    assert rec.take() == [] and t.listing() == []


def until(check, tick, timeout=3.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        tick()
        if check():
            return True
        time.sleep(0.02)
    raise AssertionError("condition not met")


@pytest.fixture
def ctrl_dir():
    path = Path(f"/tmp/hw-hostapd-test-{os.getpid()}")    # short: unix socket paths are limited to 108 bytes
    path.mkdir(exist_ok=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_listener_attaches_reads_events_and_reattaches_after_hostapd_restarts(clock, ctrl_dir):
    counts = {}

    def count(name, n=1):
        counts[name] = counts.get(name, 0) + n
    t, rec = tracker(clock)
    listener = NearbyListener(str(ctrl_dir), ("wlan0",), t, count)
    [sock] = listener.sockets

    listener.tick()                                      # no hostapd yet: counted, no crash
    assert counts["radio.nearby_errors"] == 1 and not sock.attached
    server = FakeHostapd(ctrl_dir / "wlan0")
    try:
        listener.tick()                                  # still waiting for the retry time
        assert server.requests == []
        clock.advance(RETRY)
        until(lambda: sock.attached, listener.tick)
        assert server.requests == [b"ATTACH probe_rx_events=1"]

        server.send(probe(PHONE, -47))
        server.send(f"<3>RX-PROBE-REQUEST sa={PHONE} signal=")          # malformed: counted
        server.send("<3>AP-STA-CONNECTED 02:00:00:00:01:00")             # not the tracker's: ignored
        until(lambda: counts.get("radio.nearby_malformed") == 1, listener.tick)
        assert [p["mac"] for _, p in rec.take("link")] == [PHONE]

        server.stop()                                    # hostapd goes away (restart, crash)
        clock.advance(QUIET + 1)
        listener.tick()                                  # quiet too long: renew, and find it gone
        listener.tick()
        assert not sock.attached and counts["radio.nearby_errors"] >= 2
        server = FakeHostapd(ctrl_dir / "wlan0")         # and comes back
        clock.advance(RETRY)
        until(lambda: sock.attached, listener.tick)
        server.send(probe(LAPTOP, -61))
        until(lambda: rec.take("link"), listener.tick)

        server.send("<3>CTRL-EVENT-TERMINATING")        # hostapd says it stops (then restarts)
        until(lambda: not sock.attached, listener.tick)
        server.stop()
        server = FakeHostapd(ctrl_dir / "wlan0")
        clock.advance(RETRY)                             # attached again without waiting for QUIET
        until(lambda: sock.attached, listener.tick)
        server.send(probe("00:16:3e:00:00:05", -61))
        until(lambda: rec.take("link"), listener.tick)
    finally:
        listener.close()
        server.stop()


def test_a_refused_or_unanswered_attach_is_retried(clock, ctrl_dir):
    counts = {}
    t, _ = tracker(clock)
    listener = NearbyListener(str(ctrl_dir), ("wlan0",), t, lambda name, n=1: counts.update({name: n}))
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)       # a socket that never answers
    mute.bind(str(ctrl_dir / "wlan0"))
    try:
        listener.tick()
        [sock] = listener.sockets
        assert sock.sock is not None and not sock.attached
        clock.advance(5)
        listener.tick()                                  # no OK within ATTACH_TIMEOUT: closed, retried later
        assert sock.sock is None and counts["radio.nearby_errors"] == 1
    finally:
        listener.close()
        mute.close()


# -- the component in a core, with the API -----------------------------------------------------
@pytest.fixture
def radio(tmp_path, clock, ctrl_dir):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    dump = tmp_path / "dump.txt"
    shutil.copy(DATA / "poll1.txt", dump)
    info = tmp_path / "info.txt"
    shutil.copy(DATA / "info-2g.txt", info)
    server = FakeHostapd(ctrl_dir / "wlan0")
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "radio"), clock=clock,
                     api_admin_password_file=str(pwfile), radio_interfaces=("wlan0",),
                     radio_station_dump_command=f"cat {dump}", radio_info_command=f"cat {info}",
                     radio_hostapd_ctrl_dir=str(ctrl_dir))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "eth1": 1, "wlan0": 3}))
    component = core.ctx.component("radio")
    component.tick()                                     # the station dump: STATION is associated
    until(lambda: component.nearby.sockets[0].attached, component.nearby.tick)
    yield core, server, component
    core.stop()
    server.stop()


def test_probing_devices_become_links_rows_api_entries_and_board_labels(radio, clock):
    core, server, component = radio
    links, streamed = [], []
    core.ctx.bus.subscribe("link", lambda topic, ev: links.append(ev) if ev.get("associated") is False else None)
    app = core.ctx.component("api").app
    app.stream.publish = lambda event, data: streamed.append((event, data))

    for mac, signal in ((PHONE, -52), (STATION, -30), (RAND1, -60), (RAND2, -70)):
        server.send(probe(mac, signal))
    until(lambda: component.nearby.tracker.groups.get("wlan0") and
          len(component.nearby.tracker.groups["wlan0"].members) == 2, component.nearby.tick)

    [link] = links                                       # the associated station is not "nearby"
    assert link["mac"] == PHONE
    assert link_rows(link) == [("Links", (PHONE, -52.0, 0, 0, 0), False)]   # hwdb's Links gets a row

    api = Api(core)
    r = api.call("GET", "nearby", token=api.token("read-only"))
    assert r.status_int == 200, r.text
    entries = r.json["nearby"]
    assert [(e["mac"], e["rssi"], e["radio"], e["band"], e["randomised"], e["count"]) for e in entries] == [
        (PHONE, -52.0, "wlan0", "2.4 GHz", False, 1), ("random-wlan0", -60.0, "wlan0", "2.4 GHz", True, 2)]
    assert entries[0]["last_heard"] == clock() and sorted(entries[1]["macs"]) == sorted([RAND1, RAND2])
    assert core.commands.call("nearby") == r.json                        # `homework --json nearby`
    assert api.call("GET", "nearby").status_int == 401

    views = {v["mac"]: v for v in app.board.all_views()}
    assert views[PHONE]["zone"] == "outside" and views[PHONE]["metrics"]["rssi"] == -52.0
    group = views["random-wlan0"]
    assert (group["label"], group["state"], group["zone"], group["count"]) == \
        ("2 randomised devices nearby", "group", "outside", 2)
    kinds = [(event, data["mac"], data.get("state")) for event, data in streamed]
    assert ("link", PHONE, None) in kinds                # its label: "in range, not connected"
    assert [k for k in kinds if k[1] in (RAND1, RAND2)] == []                # no label per random MAC
    assert kinds.count(("device", "random-wlan0", "group")) == 1            # one label for them all

    streamed.clear()
    clock.advance(301)
    server.send(probe(LAPTOP, -65))                       # something heard meanwhile keeps the socket fresh
    until(lambda: len(streamed) >= 2, component.nearby.tick)
    removed = {data["mac"] for event, data in streamed if event == "device" and data["view"] is None}
    assert removed == {PHONE, "random-wlan0"}
    assert {v["mac"] for v in app.board.all_views()} & {PHONE, "random-wlan0"} == set()   # snapshots agree
    assert [e["mac"] for e in core.commands.call("nearby")["nearby"]] == [LAPTOP]


def test_a_forgotten_mac_leaves_the_snapshot_even_within_the_boards_own_ttl(tmp_path, clock, ctrl_dir):
    server = FakeHostapd(ctrl_dir / "wlan0")
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "radio"), clock=clock,
                     radio_interfaces=("wlan0",), radio_station_dump_command="true", radio_info_command="true",
                     radio_hostapd_ctrl_dir=str(ctrl_dir), radio_nearby_forget=10)
    try:
        nearby, board = core.ctx.component("radio").nearby, core.ctx.component("api").board
        until(lambda: nearby.sockets[0].attached, nearby.tick)
        server.send(probe(PHONE, -50))
        until(lambda: PHONE in {v["mac"] for v in board.all_views()}, nearby.tick)
        clock.advance(11)                                # forgotten; the board alone would keep it 60 s
        nearby.tick()
        assert PHONE not in {v["mac"] for v in board.all_views()}
        core.stop()
        nearby.tick()                                    # stopped: no new attachment
        assert nearby.sockets[0].sock is None
    finally:
        server.stop()


@pytest.mark.parametrize("text, expected", [
    ("<3>AP-STA-CONNECTED 02:00:00:00:01:00", ("connected", "02:00:00:00:01:00")),
    ("<3>AP-STA-DISCONNECTED 02:AA:00:00:01:00", ("disconnected", "02:aa:00:00:01:00")),
    ("<3>AP-STA-CONNECTED 02:00:00:00:01:00 keyid=home", ("connected", "02:00:00:00:01:00")),
    ("AP-STA-CONNECTED 02:00:00:00:01:00", ("connected", "02:00:00:00:01:00")),
    ("<3>AP-STA-CONNECTED", None), ("<3>AP-STA-CONNECTED not-a-mac", None),
    ("<3>RX-PROBE-REQUEST sa=02:00:00:00:01:00 signal=-40", None), ("<3>AP-ENABLED", None), ("", None),
])
def test_station_events_are_read_and_anything_else_is_none(text, expected):
    assert station_event(text) == expected


def test_hostapd_saying_a_station_joined_reads_that_radio_at_once(radio, tmp_path):
    """A station roaming onto the router's access point: hostapd's AP-STA-CONNECTED makes
    the monitor read the station dump now (its poll timer is not run here at all)."""
    core, server, component = radio
    links = []
    core.ctx.bus.subscribe("link", lambda topic, ev: links.append(ev) if ev.get("associated") is not False else None)
    shutil.copy(DATA / "poll2.txt", tmp_path / "dump.txt")          # what the kernel lists now
    server.send("<3>RX-PROBE-REQUEST sa=00:16:3e:00:00:09 signal=-70")     # not a cue
    component.nearby.tick()
    assert links == []
    server.send("<3>AP-STA-CONNECTED 02:00:00:00:03:00")            # the newcomer in poll2
    until(lambda: links, component.nearby.tick)
    assert "02:00:00:00:03:00" in {ev["mac"] for ev in links}
    assert core.counters.get("radio.station_connected_events") == 1
    server.send("<3>AP-STA-DISCONNECTED 02:00:00:00:01:00")
    until(lambda: core.counters.get("radio.station_disconnected_events") == 1, component.nearby.tick)


def test_the_device_view_says_radio_and_band_and_follows_a_channel_change(radio, tmp_path):
    core, _, component = radio
    facts = core.ctx.facts_about(STATION)
    assert (facts["radio"], facts["band"], facts["wired"]) == ("wlan0", "2.4 GHz", False)
    shutil.copy(DATA / "info-5g.txt", tmp_path / "info.txt")          # moved to channel 36
    component.read_bands()                               # its timer (every minute)
    assert core.ctx.facts_about(STATION)["band"] == "5 GHz"
    (tmp_path / "info.txt").unlink()                     # iw failing: no band, counted
    component.read_bands()
    assert core.ctx.facts_about(STATION)["band"] is None and core.counters.get("radio.info_errors") == 1


def test_nearby_is_off_without_a_control_directory(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "radio"), clock=clock,
                     radio_interfaces=("wlan0",), radio_hostapd_ctrl_dir="")
    assert core.ctx.component("radio").nearby is None
    assert core.commands.call("nearby") == {"nearby": []}
