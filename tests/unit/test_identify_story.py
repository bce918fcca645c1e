"""Each device's story: its assembly from facts (words, order, the CSV), and on the
controller: what the history records (who let it in, the ports it used) and what the
`device-story` command tells."""
import csv
import io
from zoneinfo import ZoneInfo

import pytest

from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip
from homework import actor
from homework.commands import CommandError
from homework.components.dhcp import message as m
from homework.components.identify import story
from homework.flows import Datapath
from test_dhcp_server import join, send

UTC = ZoneInfo("UTC")
MAC = "02:00:00:00:00:01"
T0 = 1_795_000_000.0          # 2026-11-18 11:06:40 UTC


def facts(**kw):
    base = dict(mac=MAC, name="Tom's laptop", state="permitted", first_seen=T0, hostname="toms-laptop",
                decisions=[{"at": T0 + 60, "state": "permitted", "was": "pending",
                            "by": "the Guest Board on Mum's phone"}],
                places=[(T0 + 1, "d1"), (T0 + 3600, "hws1p3"), (T0 + 7200, "wifi:wlan0")],
                alerts=[{"at": T0 + 5000, "kind": "alert-usage", "title": "Tom's laptop used its allowance",
                         "detail": "It moved 2 GB today."}],
                names_today=[("example.com", 12), (story.OTHER_NAMES, 400), ("debian.org", 3)],
                usage={"today": {"up": 1_200_000, "down": 28_600_000},
                       "week": {"up": 5_000_000, "down": 2_000_000_000}},
                now=T0 + 9000)
    base.update(kw)
    return story.Facts(**base)


def test_the_story_tells_each_event_in_order_in_the_households_words():
    told = story.assemble(facts())
    assert [(e["kind"], e["words"]) for e in told["events"]] == [
        ("first seen", "First seen, asking to join as “toms-laptop”."),
        ("place", "Joined on port d1 of the router."),
        ("decision", "Let in by the Guest Board on Mum's phone."),
        ("place", "Moved to port 3 of satellite 1."),
        ("alert", "Tom's laptop used its allowance It moved 2 GB today."),
        ("place", "Moved to Wi-Fi (wlan0)."),
    ]
    assert told["approved"] == {"at": T0 + 60, "by": "the Guest Board on Mum's phone"}
    assert told["places"] == ["port d1 of the router", "port 3 of satellite 1", "Wi-Fi (wlan0)"]
    # a flood's catch-all row is not a name the device looked up
    assert told["names_today"] == [{"name": "example.com", "count": 12}, {"name": "debian.org", "count": 3}]
    assert told["usage"]["today"]["words"] == "29.8 MB in all: 28.6 MB down, 1.2 MB up"
    assert told["usage"]["week"]["words"] == "2 GB in all: 2 GB down, 5 MB up"
    assert "02:00" not in " ".join(e["words"] for e in told["events"])      # names, not MACs


def test_a_pre_approval_a_refusal_and_an_unblocking_are_told_apart():
    told = story.assemble(facts(first_seen=T0, places=[], alerts=[], decisions=[
        {"at": T0 - 100, "state": "permitted", "was": "", "by": "the router's command line"},
        {"at": T0 + 10, "state": "denied", "was": "permitted", "by": ""},
        {"at": T0 + 20, "state": "blacklisted", "was": "denied", "by": "an API token (admin)"},
        {"at": T0 + 30, "state": "pending", "was": "blacklisted", "by": ""}]))
    assert [e["words"] for e in told["events"] if e["kind"] == "decision"] == [
        "Let in before it first joined by the router's command line.", "Refused.",
        "Blocked for good by an API token (admin).", "Taken off the blocked list."]


def test_without_the_query_log_or_usage_the_rest_of_the_story_is_told():
    told = story.assemble(facts(names_today=None, names_note="the query log is off", usage=None))
    assert told["names_today"] is None and told["names_note"] == "the query log is off" and told["usage"] is None
    assert len(told["events"]) == 6
    text = story.csv_text(told, UTC)
    assert "names today" not in text and "usage" not in text


def test_the_csv_is_one_row_per_event_with_local_time_kind_and_words():
    told = story.assemble(facts(hostname="=HYPERLINK(1)"))
    rows = list(csv.reader(io.StringIO(story.csv_text(told, ZoneInfo("Europe/Berlin")))))
    assert rows[0] == ["time", "kind", "words"]
    assert rows[1] == ["2026-11-18 12:06", "first seen", "First seen, asking to join as “=HYPERLINK(1)”."]
    assert [r[1] for r in rows[1:]] == ["first seen", "place", "decision", "place", "alert", "place",
                                        "names today", "usage today", "usage this week"]
    assert rows[-3][2] == "Looked up most today: example.com (12), debian.org (3)."
    assert rows[-2][2] == "Today: 29.8 MB in all: 28.6 MB down, 1.2 MB up."
    assert all(not r[2].startswith("=") for r in rows)
    assert story.filename("Tom's laptop") == "Tom-s-laptop-story.csv"
    assert story.filename("../..") == "device-story.csv"


# -- on the controller ---------------------------------------------------------------------------
@pytest.fixture
def core(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "usage", "identify"), clock=clock, hwdb_enabled=False)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


def test_the_controller_records_who_let_it_in_and_each_port_it_used(core, clock):
    offer, _ = join(core, MAC, port=1, hostname=b"toms-laptop")
    clock.advance(30)
    with actor.acting("the Guest Board on Mum's phone"):
        core.commands.call("permit", mac=MAC)
    clock.advance(120)
    core.port_status("d1", 1, up=False)                                                # unplugged
    send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, offer.yiaddr)]), 2)     # plugged in elsewhere
    send(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, offer.yiaddr)]), 2)     # a renewal: no news
    core.ctx.state.flush(force=True)
    told = core.commands.call("device-story", mac=MAC)
    assert [e["kind"] for e in told["events"]] == ["first seen", "place", "decision", "place"]
    assert told["approved"]["by"] == "the Guest Board on Mum's phone"
    assert told["places"] == ["port d1 of the router", "port d2 of the router"]
    assert told["names_today"] is None and "query log is off" in told["names_note"]
    assert told["usage"]["today"] == {"up": 0, "down": 0, "words": "0 B in all: 0 B down, 0 B up"}
    download = core.commands.call("device-story", mac=MAC, format="csv")
    assert download["filename"] == "toms-laptop-story.csv"
    assert "Moved to port d2 of the router." in download["csv"]
    with pytest.raises(CommandError, match="format must be json or csv"):
        core.commands.call("device-story", mac=MAC, format="xml")


def test_a_forgotten_device_takes_its_history_with_it(core):
    join(core, MAC, port=1)
    core.commands.call("permit", mac=MAC)
    core.commands.call("forget", mac=MAC)
    core.ctx.state.flush(force=True)
    assert core.ctx.state.execute("SELECT count(*) AS n FROM device_decisions")[0]["n"] == 0
    assert core.ctx.state.execute("SELECT count(*) AS n FROM device_places")[0]["n"] == 0
