"""The real radio's link monitor: the `iw station dump` parser on recorded dumps
(tests/unit/data/iw), counters across polls (stations vanishing and appearing, counter
resets, garbage lines) and the whole component in a core, reading its dump through
`[radio] station_dump_command` (`cat FILE`), with the board's metrics and device facts."""
import shutil
import tomllib
from pathlib import Path

from conftest import make_core
from homework.components.radio.stationdump import parse
from homework.config import ConfigError, parse as parse_config
from homework.flows import Datapath
from homework.leases import Lease

DATA = Path(__file__).parent / "data" / "iw"


def load_text(text):
    return parse_config(tomllib.loads(text))


def dump(name):
    return (DATA / name).read_text()


# -- the parser --------------------------------------------------------------------------------
def test_parses_every_field_of_a_recorded_dump():
    d = parse(dump("poll1.txt"))
    assert d.skipped == 0
    assert [s.mac for s in d.stations] == ["02:00:00:00:01:00", "02:00:00:00:02:00"]
    s = d.stations[0]
    assert (s.ifname, s.signal, s.inactive_ms) == ("wlan0", -48.0, 120)     # the last frame's, not avg
    assert (s.rx_bytes, s.tx_bytes, s.tx_packets, s.tx_retries, s.tx_failed) == (52341, 88213, 300, 12, 1)
    assert (s.tx_bitrate, s.rx_bitrate) == (144.4, 130.0)


def test_garbage_and_unparsable_values_are_skipped_and_counted():
    d = parse(dump("poll2.txt"))
    assert d.skipped == 3          # "rx bytes: ??", a non-indented log line, a line with no colon
    first, new = d.stations
    assert first.rx_bytes is None and first.tx_packets == 400 and first.signal == -70.0
    assert new.mac == "02:00:00:00:03:00" and new.signal == -55.0


def test_a_truncated_dump_gives_what_it_can_and_never_raises():
    d = parse(dump("truncated.txt"))
    assert [s.mac for s in d.stations] == ["02:00:00:00:01:00"]
    assert d.stations[0].rx_bytes == 52 and d.stations[0].signal is None
    assert d.skipped == 2          # a header with a bad MAC, an empty signal
    assert parse("").stations == [] and parse("\x00\xff garbage\n:::\n").skipped == 2


def test_config_keys_are_checked():
    cfg = load_text('[radio]\ninterfaces = ["wlan0", "wlan1"]\nleave_after = 120\n')
    assert cfg.radio_interfaces == ("wlan0", "wlan1") and cfg.radio_interval == 1
    assert cfg.radio_station_dump_command == "iw dev {ifname} station dump"
    for bad in ('interfaces = ["wlan 0"]', "leave_after = 1", "interval = 0"):
        try:
            load_text(f"[radio]\n{bad}\n")
        except ConfigError as exc:
            assert "radio." in str(exc)
        else:
            raise AssertionError(f"accepted {bad}")


# -- the component, through its configurable command -------------------------------------------
class Leases:
    def __init__(self, *leases):
        self.by_mac = {x.mac: x for x in leases}

    def get(self, mac):
        return self.by_mac.get(mac)

    def active(self):
        return [x for x in self.by_mac.values() if x.active]

    def all(self):
        return list(self.by_mac.values())


def lease(mac, port):
    return Lease(mac=mac, index=1, network="", router="", ip="10.2.0.2", broadcast="", expires=2e9,
                 port=port, active=True)


def radio_core(tmp_path, clock, leave_after=300):
    live = tmp_path / "dump.txt"
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "radio"), clock=clock,
                     radio_interfaces=("wlan0",), radio_station_dump_command=f"cat {live}",
                     radio_leave_after=leave_after)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "eth1": 1, "wlan0": 3}))
    events = []
    core.ctx.bus.subscribe("link", lambda topic, payload: events.append(payload))

    def poll(name, text=None):
        if text is None:
            shutil.copy(DATA / name, live)
        else:
            live.write_text(text)
        del events[:]
        for timer in core.timers:
            timer()
        return {e["mac"]: e for e in events}
    return core, poll


def test_link_events_follow_the_dumps_across_vanishing_new_and_reset_stations(tmp_path, clock):
    core, poll = radio_core(tmp_path, clock)
    one, two, three = "02:00:00:00:01:00", "02:00:00:00:02:00", "02:00:00:00:03:00"

    ev = poll("poll1.txt")
    assert set(ev) == {one, two}
    assert (ev[one]["rssi"], ev[one]["packets"], ev[one]["retries"], ev[one]["bytes"]) == \
        (-48.0, 300, 12, 52341 + 88213)
    assert ev[one]["ifname"] == "wlan0" and ev[one]["tx_bitrate"] == 144.4

    clock.advance(1)
    ev = poll("poll2.txt")
    assert set(ev) == {one, three}                       # two vanished, three appeared
    assert ev[one]["retry_rate"] == 0.2                  # 20 retries over 100 packets
    assert (ev[one]["packets"], ev[one]["retries"]) == (400, 32)
    assert ev[one]["bytes"] == 52341 + 98213             # the garbled rx bytes adds nothing
    assert core.counters.get("radio.malformed_lines") == 3

    clock.advance(1)
    ev = poll("poll3.txt")
    # one's counters went down (reset): the new values are the increase, totals keep growing
    assert (ev[one]["packets"], ev[one]["retries"]) == (410, 37) and ev[one]["retry_rate"] == 0.5
    assert ev[two]["packets"] == 107                     # back after leaving: counts on from its total
    assert ev[three]["packets"] == 20 and ev[three]["retry_rate"] == 0.0
    assert ev[three]["seen_at"] == clock() - 900         # idle for 900 s while associated

    board = core.ctx.component("api").board
    m = board.metrics(one)
    assert m["rssi"] == -60.0 and m["retrans"] == 0.5    # the board's red comes from these rows


def test_a_failing_command_is_counted_not_raised(tmp_path, clock):
    core, _ = radio_core(tmp_path, clock)
    for timer in core.timers:
        timer()                                          # dump.txt does not exist: cat fails
    assert core.counters.get("radio.dump_errors") == 1


def test_device_facts_mark_wired_devices_and_the_radio_a_device_is_on(tmp_path, clock):
    core, poll = radio_core(tmp_path, clock)
    wired, wifi = "02:00:00:00:0a:00", "02:00:00:00:01:00"
    core.ctx.leases = Leases(lease(wired, 1), lease(wifi, 3))
    poll("poll1.txt")
    facts = core.ctx.facts_about(wired)
    assert facts["wired"] is True and facts["radio"] is None and facts["leave_after"] == 300
    facts = core.ctx.facts_about(wifi)
    assert facts["wired"] is False and facts["radio"] == "wlan0"
    assert facts["radio_seen_at"] == clock() - 0.12


def test_an_idle_poll_keeps_the_last_retry_share_and_the_seen_time(tmp_path, clock):
    core, poll = radio_core(tmp_path, clock)
    one = "02:00:00:00:01:00"
    poll("poll1.txt")
    clock.advance(1)
    poll("poll2.txt")
    board = core.ctx.component("api").board
    seen = board.metrics(one)["seen_at"]
    assert board.metrics(one)["retrans"] == 0.2 and seen == clock() - 0.04
    clock.advance(30)
    idle = dump("poll2.txt").replace("inactive time:\t40 ms", "inactive time:\t30040 ms")
    poll(None, idle)                                     # same counters: no frames in between
    m = board.metrics(one)
    assert m["retrans"] == 0.2                           # the red does not blink off while idle
    assert m["seen_at"] == seen and m["leave_after"] == 300


def test_radio_events_make_the_same_links_rows_as_the_simulator(tmp_path, clock):
    from homework.components.hwdb_sync.rows import link_rows
    _, poll = radio_core(tmp_path, clock)
    ev = poll("poll1.txt")["02:00:00:00:01:00"]
    assert link_rows(ev) == [("Links", ("02:00:00:00:01:00", -48.0, 12, 300, 52341 + 88213), False)]
    ev = poll("truncated.txt")["02:00:00:00:01:00"]          # no signal line: a row all the same
    assert link_rows(ev)[0][1][1] == 0.0


def station_dump(radio, inactive_ms):
    """One station (02:00:00:00:01:00) heard `inactive_ms` ago, in iw's format."""
    return (f"Station 02:00:00:00:01:00 (on {radio})\n\tinactive time:\t{inactive_ms} ms\n"
            "\ttx packets:\t10\n\tsignal:  \t-50 [-50, -52] dBm\n")


def test_a_station_is_placed_on_the_radio_that_heard_it_last(tmp_path, clock):
    """Satellites' radios: `station_at` says where a station is, once when it
    first shows and again only when another radio heard it clearly later (a station sends
    to its own access point only); a stale report never moves it."""
    core = make_core(tmp_path, components=("dhcp", "routing", "radio"), clock=clock)
    moves = []
    core.ctx.bus.subscribe("station_at", lambda topic, ev: moves.append((ev["ifname"], ev["previous"])))

    def report(ifname, inactive_ms):
        core.ctx.bus.publish("radio_report", ifname=ifname, dump=station_dump(ifname.split("@")[0], inactive_ms),
                             info="")

    report("wlan0@sat1", 20)
    assert moves == [("wlan0@sat1", None)]
    clock.advance(1)
    report("wlan0@sat2", 900)             # heard 0.1 s after sat1 did: not clearly later
    report("wlan0@sat1", 20)
    assert moves == [("wlan0@sat1", None)]
    clock.advance(1)
    report("wlan0@sat2", 10)              # it roamed: sat2 hears it now, sat1 last did 1 s ago
    assert moves[-1] == ("wlan0@sat2", "wlan0@sat1")
    clock.advance(1)
    links = []
    core.ctx.bus.subscribe("link", lambda topic, ev: links.append(ev["ifname"]))
    report("wlan0@sat1", 2000)            # the old access point still lists it, idle: no move back
    report("wlan0@sat3", 5000)            # nor to a radio that heard it long ago
    assert moves[-1] == ("wlan0@sat2", "wlan0@sat1") and len(moves) == 2
    assert links == []                    # and their stale view of it is not its signal
    report("wlan0@sat2", 30)
    assert links == ["wlan0@sat2"]
    assert core.ctx.component("radio")._facts("02:00:00:00:01:00")["radio"] == "wlan0@sat2"
    assert core.counters.get("radio.roams") == 1


def test_the_old_radios_report_can_be_what_moves_a_station_and_its_view_follows_at_once(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "radio"), clock=clock)
    moves = []
    core.ctx.bus.subscribe("station_at", lambda topic, ev: moves.append(ev["ifname"]))
    radio = core.ctx.component("radio")

    def report(ifname, inactive_ms):
        core.ctx.bus.publish("radio_report", ifname=ifname, dump=station_dump(ifname.split("@")[0], inactive_ms),
                             info="")

    report("wlan0@sat1", 20)
    clock.advance(0.3)
    report("wlan0@sat2", 10)          # heard 0.3 s after sat1 last did: not yet clearly later
    assert moves == ["wlan0@sat1"]
    clock.advance(0.3)
    report("wlan0@sat1", 1500)        # sat1 has not heard it for 1.5 s: it is on sat2
    assert moves == ["wlan0@sat1", "wlan0@sat2"]
    assert radio._facts("02:00:00:00:01:00")["radio"] == "wlan0@sat2"   # before sat2 reports again


def test_with_a_short_leave_after_a_quiet_station_is_told_before_the_board_would_let_it_go(tmp_path, clock):
    """The board departs a label whose seen_at is leave_after old: a station still heard
    (small inactive time) but moving no frames is told every leave_after / 2, not once a
    minute, when leave_after is shorter than two heartbeats."""
    core, poll = radio_core(tmp_path, clock, leave_after=10)
    one = "02:00:00:00:01:00"
    quiet = dump("poll2.txt")
    assert one in poll(None, quiet)
    clock.advance(1)
    poll(None, quiet)                                    # (told once more: its first report counted as news)
    seen = []
    for _ in range(20):
        clock.advance(1)
        event = poll(None, quiet).get(one)
        if event:
            seen.append(event["seen_at"])
    assert len(seen) >= 4 and all(b - a <= 5 for a, b in zip(seen, seen[1:], strict=False)), seen


def test_an_idle_station_is_told_once_after_it_stops_then_once_a_minute(tmp_path, clock):
    from homework.components.radio.monitor import LINK_HEARTBEAT
    core, poll = radio_core(tmp_path, clock)
    one = "02:00:00:00:01:00"
    assert one in poll("poll1.txt")
    clock.advance(1)
    assert one in poll("poll2.txt")                      # it moved frames
    quiet = dump("poll2.txt")
    clock.advance(1)
    assert one in poll(None, quiet)                      # it stopped: told once more (its rate is 0)
    told = 0
    for _ in range(int(LINK_HEARTBEAT) + 2):             # idle, same signal: a heartbeat a minute
        clock.advance(1)
        told += one in poll(None, quiet)
    assert told == 1
    clock.advance(1)
    assert one not in poll(None, quiet)
    weaker = quiet.replace("signal:  \t-70 ", "signal:  \t-76 ", 1)
    assert weaker != quiet
    assert one in poll(None, weaker)                     # its signal moved: told at once
