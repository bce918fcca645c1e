"""The identify component on the controller: a DHCP request's options become the device's
guess in its view (read on identify's timer, never in the request's handler), a guess
never decides anything, and the household's correction is kept across restarts and goes
with a forgotten device."""
import pytest

from conftest import make_core
from dhcpframes import dhcp_frame
from homework.commands import CommandError
from homework.components.dhcp import message as m
from homework.flows import Datapath
from test_dhcp_server import send

IPHONE = "3a:11:22:33:44:55"        # a private (randomised) address: no maker to go by
WIN_PRL = bytes([1, 3, 6, 15, 31, 33, 43, 44, 46, 47, 119, 121, 249, 252])
IOS_PRL = bytes([1, 121, 3, 6, 15, 108, 114, 119, 252])


def up(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "identify"), clock=clock)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


@pytest.fixture
def core(tmp_path, clock):
    return up(tmp_path, clock)


def within_a_second(core):
    """Every timer the controller runs at least once a second, run once (identify's read
    among them)."""
    for seconds, fn in list(core.periods):
        if seconds <= 1.0:
            fn()


def identity(core, mac=IPHONE):
    """The device's view once identify's timer has read what it said."""
    within_a_second(core)
    return core.ctx.facts_about(mac)["identity"]


def test_a_discover_makes_the_guess_and_a_guess_never_approves(core):
    heard = []
    core.ctx.bus.subscribe("identity", lambda topic, ev: heard.append(ev.identity["label"]))
    send(core, dhcp_frame(IPHONE, m.DISCOVER, options=[(12, b"Toms-iPhone"), (55, IOS_PRL)]))
    # the DISCOVER's handler only handed its options over: nothing read, classified or told
    assert core.ctx.facts_about(IPHONE)["identity"] is None and heard == []
    assert core.ctx.counters.get("identify.evidence") == 0
    guess = identity(core)       # within a second, the timer: the board is told without asking
    assert heard == ["iPhone (iOS 15 or later)"]
    assert (guess["type"], guess["label"], guess["level"]) == ("phone", "iPhone (iOS 15 or later)", "sure")
    assert guess["why"] == ["calls itself “Toms-iPhone”", "asked for an address as iOS 15 and later do"]
    assert heard == ["iPhone (iOS 15 or later)"]
    assert core.ctx.state.device_state(IPHONE) == "pending"
    # the same request again is not news: no second classification
    classified = core.ctx.counters.get("identify.classified")
    send(core, dhcp_frame(IPHONE, m.DISCOVER, options=[(12, b"Toms-iPhone"), (55, IOS_PRL)]))
    # nor is a REQUEST's own (50, 54): what says what the device is did not change
    send(core, dhcp_frame(IPHONE, m.REQUEST, options=[(50, bytes([10, 0, 0, 2])), (12, b"Toms-iPhone"),
                                                      (55, IOS_PRL)]))
    within_a_second(core)
    assert core.ctx.counters.get("identify.classified") == classified and len(heard) == 1


def test_a_command_asking_about_a_device_reads_what_it_said_at_once(core):
    send(core, dhcp_frame(IPHONE, m.DISCOVER, options=[(12, b"Toms-iPhone"), (55, IOS_PRL)]))
    said = core.commands.call("identity", mac=IPHONE)
    assert said["label"] == "iPhone (iOS 15 or later)" and said["evidence"]["hostname"] == "Toms-iPhone"


def test_identification_off_hands_nothing_over(tmp_path, clock):
    bare = make_core(tmp_path, components=("dhcp", "routing"), clock=clock)
    assert bare.ctx.component("dhcp").said is None and bare.ctx.component("routing").said is None


def test_a_maker_from_the_mac_is_evidence_when_the_mac_is_not_private(core):
    send(core, dhcp_frame("98:e8:fa:00:00:01", m.DISCOVER, options=[(55, bytes([1, 3, 6, 15]))]))
    assert identity(core, "98:e8:fa:00:00:01")["label"] == "Nintendo console"


def test_a_device_that_says_nothing_known_has_no_guess(core):
    send(core, dhcp_frame("02:00:00:00:00:09", m.DISCOVER, options=[(12, b"dhcpcd3")]))
    assert identity(core, "02:00:00:00:00:09")["label"] == ""


def test_the_households_correction_wins_and_is_kept_across_a_restart(tmp_path, clock, core):
    send(core, dhcp_frame(IPHONE, m.DISCOVER, options=[(55, WIN_PRL), (60, b"MSFT 5.0")]))
    assert identity(core)["label"] == "Windows PC (Windows 10 or 11)"
    core.commands.call("identify-correct", mac=IPHONE, type="console", label="Xbox")
    fixed = identity(core)
    assert (fixed["type"], fixed["label"], fixed["corrected"], fixed["level"]) == ("console", "Xbox", True, "household")
    assert fixed["guess"]["label"] == "Windows PC (Windows 10 or 11)"
    core.ctx.state.flush(force=True)
    core.stop()
    again = up(tmp_path, clock)
    assert identity(again)["label"] == "Xbox"
    assert again.commands.call("identity", mac=IPHONE)["evidence"]["vendor"] == "MSFT 5.0"
    again.commands.call("identify-clear", mac=IPHONE)
    assert identity(again)["label"] == "Windows PC (Windows 10 or 11)" and not identity(again)["corrected"]


@pytest.mark.parametrize("fields, message", [
    ({"type": "toaster"}, "type must be one of"),
    ({"label": "x" * 61}, "at most 60"),
    ({}, "say what the device is"),
])
def test_a_bad_correction_is_refused_in_words_and_stores_nothing(core, fields, message):
    send(core, dhcp_frame(IPHONE, m.DISCOVER, options=[(55, IOS_PRL)]))
    with pytest.raises(CommandError, match=message):
        core.commands.call("identify-correct", mac=IPHONE, **fields)
    assert not identity(core)["corrected"]


def test_a_correction_of_an_unknown_device_is_a_404(core):
    with pytest.raises(CommandError, match="no device") as exc:
        core.commands.call("identify-correct", mac="02:00:00:00:00:77", type="phone")
    assert exc.value.status == 404


def test_forgetting_a_device_forgets_what_it_said_and_its_correction(core):
    send(core, dhcp_frame(IPHONE, m.DISCOVER, options=[(55, IOS_PRL)]))
    core.commands.call("identify-correct", mac=IPHONE, label="Tom's phone")
    core.commands.call("forget", mac=IPHONE)
    assert identity(core) is None
    core.ctx.state.flush(force=True)
    assert core.ctx.state.execute("SELECT count(*) FROM device_evidence")[0][0] == 0
    assert core.ctx.state.execute("SELECT count(*) FROM device_identity")[0][0] == 0


def test_a_homework_dhcpd_note_carries_the_new_devices_fingerprint(core):
    send(core, dhcp_frame(IPHONE, m.DISCOVER))        # offered by the controller: the device holds a block
    core.ctx.component("dhcp")._dhcpd_note(
        {"op": "offered", "mac": IPHONE, "port": 1, "hostname": "", "xid": 1,
         "fp": {"prl": "1,3,6,15,26,28,51,58,59,43,114", "vendor": "android-dhcp-14", "max_size": 1500}})
    assert identity(core)["label"] == "Android phone (Android 14)"


def test_the_names_a_device_looks_up_in_its_first_minute_are_evidence(core, clock):
    send(core, dhcp_frame("02:00:00:00:00:0a", m.DISCOVER, options=[(12, b"kitchen")]))
    core.ctx.bus.publish("dns_query", mac="02:00:00:00:00:0a", name="ctest.cdn.nintendo.net.")
    assert identity(core, "02:00:00:00:00:0a")["label"] == "Nintendo Switch"
    clock.advance(61)
    core.ctx.bus.publish("dns_query", mac="02:00:00:00:00:0a", name="title.mgt.xboxlive.com")
    assert "xboxlive" not in core.commands.call("identity", mac="02:00:00:00:00:0a")["evidence"]["names"]


TOMS = "02:00:00:00:00:51"          # Tom's iPhone as it was let in
BACK = "3e:00:00:00:00:52"          # ... back with a new private address
IPHONE_OPTIONS = [(12, b"Toms-iPhone"), (55, IOS_PRL)]


def test_a_phone_back_with_a_new_private_address_looks_like_itself_and_joins_only_by_a_tap(core):
    from test_dhcp_server import join
    join(core, TOMS, 1, hostname=b"Toms-iPhone")
    send(core, dhcp_frame(TOMS, m.DISCOVER, options=IPHONE_OPTIONS))
    core.commands.call("set-meta", mac=TOMS, name="Tom's iPhone", owner="Tom", type="phone")
    core.commands.call("permit", mac=TOMS)
    send(core, dhcp_frame(BACK, m.DISCOVER, options=IPHONE_OPTIONS), port=2)
    view = identity(core, BACK)
    assert view["looks_like"] == {"mac": TOMS, "name": "Tom's iPhone",
                                  "text": "looks like Tom's iPhone with a new private address"}
    assert core.ctx.state.device_state(BACK) == "pending"        # nothing happens by itself
    core.commands.call("identify-join", mac=BACK, as_mac=TOMS)
    back = core.ctx.state.get_device(BACK)
    assert (back.state, back.name, back.owner, back.type) == ("permitted", "Tom's iPhone", "Tom", "phone")
    assert core.ctx.state.get_device(TOMS) is None                # one device
    assert core.ctx.state.execute("SELECT mac, was FROM device_joins")[0][:] == (BACK, TOMS)
    assert "looks_like" not in identity(core, BACK)


def test_a_device_that_only_resembles_cannot_be_joined(core):
    from test_dhcp_server import join
    join(core, TOMS, 1, hostname=b"Toms-iPhone")
    send(core, dhcp_frame(TOMS, m.DISCOVER, options=IPHONE_OPTIONS))
    core.commands.call("permit", mac=TOMS)
    # the same kind of phone under another name, and one with a MAC that is not private
    send(core, dhcp_frame(BACK, m.DISCOVER, options=[(12, b"Annas-iPhone"), (55, IOS_PRL)]), port=2)
    send(core, dhcp_frame("00:25:00:00:00:53", m.DISCOVER, options=IPHONE_OPTIONS), port=2)
    for mac in (BACK, "00:25:00:00:00:53"):
        assert "looks_like" not in identity(core, mac)
        with pytest.raises(CommandError, match="does not look like") as exc:
            core.commands.call("identify-join", mac=mac, as_mac=TOMS)
        assert exc.value.status == 409 and core.ctx.state.device_state(mac) == "pending"
    assert core.ctx.state.device_state(TOMS) == "permitted"
