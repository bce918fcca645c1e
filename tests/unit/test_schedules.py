"""Schedules and pauses on the strict fake switch: a pause cuts a permitted
device to its gateway services, resume opens it, a window open "now" cuts it, a clock
that jumps either way is corrected at the next look, a usage block and a pause do not
undo each other, pending/denied devices are untouched, state survives restarts."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from homework.commands import CommandError
from homework.flows import LOCAL, Datapath
from homework.pipeline import COOKIE_MASK_OWNER, COOKIE_SCHEDULE, COOKIE_USAGE
from routingkit import PORTS, from_router, ip_pkt, join, routing_core

LONDON = ZoneInfo("Europe/London")
A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
WEB = "203.0.113.10"


def at(*args):
    return datetime(*args, tzinfo=LONDON).timestamp()


def new_home(tmp_path, clock, components=("dhcp", "routing", "schedules"), **kw):
    return routing_core(tmp_path, clock, components=components, timezone="Europe/London", **kw)


@pytest.fixture
def home(tmp_path, clock):
    clock.now = at(2026, 5, 10, 20, 0)          # a Sunday evening
    core = new_home(tmp_path, clock)
    for mac, port in ((A, 1), (B, 2)):
        join(core, mac, port)
        core.commands.call("permit", mac=mac)
    return core


def web_ok(core, mac=A, port=1, ip="10.2.0.2"):
    return LOCAL in core.switch.outputs(ip_pkt(port, mac, ip, WEB, dport=443))


def gateway_ok(core, mac=A, port=1, ip="10.2.0.2", router="10.2.0.1"):
    return LOCAL in core.switch.outputs(ip_pkt(port, mac, ip, router, dport=80)) and \
        LOCAL in core.switch.outputs(ip_pkt(port, mac, ip, router, proto=17, dport=53))


def tick(core):
    core.ctx.component("schedules").check()


def schedule_flows(core):
    return [f for f in core.switch.flows if f.cookie & COOKIE_MASK_OWNER == COOKIE_SCHEDULE]


def test_pause_cuts_to_the_gateway_and_resume_opens(home, clock):
    assert web_ok(home)
    view = home.commands.call("pause", mac=A, minutes=60)
    assert view["paused"] and view["paused_by"] == "pause" and view["paused_until"] == clock.now + 3600
    assert not web_ok(home) and gateway_ok(home)
    assert 1 not in home.switch.outputs(from_router(WEB, "10.2.0.2", dport=40000))
    assert 1 in home.switch.outputs(from_router("10.2.0.1", "10.2.0.2", sport=53, dport=40000))
    assert web_ok(home, B, 2, "10.2.0.6")                      # the other device is not touched
    status = home.commands.call("status", mac=A)
    assert status["paused"] and status["paused_until"] == clock.now + 3600
    home.commands.call("resume", mac=A)
    assert web_ok(home) and not schedule_flows(home)
    assert home.commands.call("status", mac=A)["paused_until"] == 0


def test_a_pause_ends_by_itself(home, clock):
    home.commands.call("pause", mac=A, minutes=30)
    clock.advance(29 * 60)
    tick(home)
    assert not web_ok(home)
    clock.advance(61)
    tick(home)
    assert web_ok(home)


def test_a_window_open_now_cuts_and_its_end_opens(home, clock):
    added = home.commands.call("schedule-add", mac=A, days="sun-thu", start="19:30", end="07:00")
    assert added["window"] == "sun,mon,tue,wed,thu 19:30-07:00" or added["from"] == "19:30"
    assert not web_ok(home)                                     # at once, not at the next tick
    view = home.commands.call("status", mac=A)
    assert view["in_schedule"] == "pause" and view["paused_by"] == "schedule"
    assert view["paused_until"] == at(2026, 5, 11, 7, 0)
    clock.now = at(2026, 5, 11, 7, 0)
    tick(home)
    assert web_ok(home)
    home.commands.call("schedule-remove", id=added["id"])
    clock.now = at(2026, 5, 11, 21, 0)
    tick(home)
    assert web_ok(home)


def test_a_clock_jumping_forwards_and_backwards_is_corrected_at_the_next_look(home, clock):
    home.commands.call("schedule-add", mac=A, days="daily", start="21:30", end="07:00")
    home.commands.call("schedule-add", owner="Kid", days="mon-fri", start="16:00", end="17:00",
                       action="dns-strict")
    expectations = [
        (at(2026, 5, 10, 20, 0), True),          # before bedtime
        (at(2026, 5, 10, 23, 0), False),         # jump forwards into the window
        (at(1970, 1, 1, 0, 30), False),          # an unset clock at boot (a Thursday night window)
        (at(2026, 5, 11, 12, 0), True),          # NTP: forwards to midday
        (at(2026, 5, 11, 6, 59), False),         # backwards into the morning end of the window
        (at(2026, 5, 11, 7, 0), True),
        (at(2030, 1, 1, 22, 0), False),          # far future, inside the window
        (at(2026, 5, 12, 10, 0), True),          # and back
    ]
    for now, open_ in expectations:
        clock.now = now
        tick(home)
        assert web_ok(home) is open_, datetime.fromtimestamp(now, LONDON)
    # a one-shot pause holds only from when it was set until its end: a clock jumping back
    # before it or forwards past it does not keep the device cut off
    clock.now = at(2026, 5, 12, 10, 0)
    home.commands.call("pause", mac=A, minutes=60)
    for now, open_ in [(at(2026, 5, 12, 10, 30), False), (at(2026, 5, 12, 9, 0), True),
                       (at(2026, 5, 12, 10, 59), False), (at(2026, 5, 12, 11, 0), True),
                       (at(2027, 1, 1, 12, 0), True), (at(2026, 5, 12, 10, 10), False)]:
        clock.now = now
        tick(home)
        assert web_ok(home) is open_, datetime.fromtimestamp(now, LONDON)


def test_resume_inside_a_window_keeps_it_open_until_the_window_ends(home, clock):
    home.commands.call("schedule-add", mac=A, days="daily", start="19:00", end="22:00")
    assert not web_ok(home)
    home.commands.call("resume", mac=A)
    assert web_ok(home)
    clock.now = at(2026, 5, 10, 21, 59)
    tick(home)
    assert web_ok(home)
    clock.now = at(2026, 5, 11, 19, 30)                         # the next evening's window cuts again
    tick(home)
    assert not web_ok(home)


def test_an_owner_schedule_covers_every_device_of_the_owner(home, clock):
    for mac in (A, B):
        home.commands.call("set-meta", mac=mac, owner="Kid")
    home.commands.call("schedule-add", owner="Kid", days="daily", start="19:00", end="22:00")
    assert not web_ok(home) and not web_ok(home, B, 2, "10.2.0.6")
    home.commands.call("set-meta", mac=B, owner="Parent")       # the owner changed: at once
    assert web_ok(home, B, 2, "10.2.0.6") and not web_ok(home)
    assert [s["owner"] for s in home.commands.call("schedules", mac=A)] == ["Kid"]
    assert home.commands.call("schedules", mac=B) == []


def test_a_usage_block_and_a_pause_do_not_undo_each_other(tmp_path, clock):
    clock.now = at(2026, 5, 10, 20, 0)
    core = new_home(tmp_path, clock, components=("dhcp", "routing", "usage", "schedules"),
                    usage_timezone="Europe/London")
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.commands.call("usage-limit", mac=A, allowance=1000)
    core.bus.publish("bandwidth", mac=A, ip="", bytes=5000, up=0, down=5000)
    assert not web_ok(core)
    core.commands.call("pause", mac=A)
    core.commands.call("resume", mac=A)                         # the pause ends; the usage block stays
    assert not web_ok(core) and gateway_ok(core)
    assert any(f.cookie & COOKIE_MASK_OWNER == COOKIE_USAGE for f in core.switch.flows)
    core.commands.call("pause", mac=A)
    core.commands.call("usage-lift", mac=A)                     # the usage block ends; the pause stays
    assert not web_ok(core) and gateway_ok(core)
    core.commands.call("resume", mac=A)
    assert web_ok(core)


def test_pending_and_denied_devices_are_left_as_they_are(home, clock):
    home.commands.call("deny", mac=B)
    home.commands.call("schedule-add", mac=B, days="daily", start="19:00", end="22:00")
    home.commands.call("pause", mac=B)
    assert not [f for f in schedule_flows(home) if f.cookie & 0xFFFF_FFFF == home.ctx.leases.get(B).index + 1]
    assert gateway_ok(home, B, 2, "10.2.0.6", "10.2.0.5")
    assert home.commands.call("status", mac=B)["paused"] is False
    home.commands.call("permit", mac=B)                         # permitted inside its window: cut at once
    assert not web_ok(home, B, 2, "10.2.0.6")


def test_overlapping_and_bad_schedules_are_refused_and_nothing_is_stored(home):
    home.commands.call("schedule-add", mac=A, days="sun-thu", start="21:30", end="07:00")
    with pytest.raises(CommandError, match="overlaps schedule") as exc:
        home.commands.call("schedule-add", mac=A, days="mon", start="06:00", end="08:00")
    assert exc.value.status == 400
    # another action, another target, or a touching window is fine
    home.commands.call("schedule-add", mac=A, days="mon", start="06:00", end="08:00", action="dns-strict")
    home.commands.call("schedule-add", mac=B, days="mon", start="06:00", end="08:00")
    home.commands.call("schedule-add", mac=A, days="mon", start="07:00", end="08:00")
    for kw, message in [({"mac": A, "days": "mon", "start": "25:00", "end": "07:00"}, "HH:MM"),
                        ({"mac": A, "days": "", "start": "21:00", "end": "07:00"}, "at least one day"),
                        ({"mac": A, "days": "sat", "start": "21:00", "end": "21:00"}, "empty"),
                        ({"mac": A, "days": "sat", "start": "21:00", "end": "22:00", "action": "nap"}, "action"),
                        ({"days": "sat", "start": "21:00", "end": "22:00"}, "either mac or owner"),
                        ({"mac": "02:00:00:00:00:99", "days": "sat", "start": "21:00", "end": "22:00"}, "no device")]:
        with pytest.raises(CommandError, match=message):
            home.commands.call("schedule-add", **kw)
    assert len(home.commands.call("schedules")) == 4
    for kw, message in [({"mac": A, "minutes": 0}, "between 1"), ({"mac": A, "minutes": "lots"}, "whole number"),
                        ({"mac": "nope"}, "MAC")]:
        with pytest.raises(CommandError, match=message):
            home.commands.call("pause", **kw)
    with pytest.raises(CommandError, match="no schedule 99"):
        home.commands.call("schedule-remove", id=99)


def test_stale_pause_flows_go_at_datapath_up_and_due_ones_come_back(tmp_path, clock):
    clock.now = at(2026, 5, 10, 20, 0)
    core = new_home(tmp_path, clock)
    join(core, A, 1)
    join(core, B, 2)
    core.commands.call("permit", mac=A)
    core.commands.call("permit", mac=B)
    core.commands.call("pause", mac=A, minutes=60)
    core.commands.call("schedule-add", mac=B, days="daily", start="19:00", end="20:30")
    assert not web_ok(core) and not web_ok(core, B, 2, "10.2.0.6")
    core.stop()
    core.state.close()
    clock.now = at(2026, 5, 10, 20, 45)                         # B's window ended while we were down
    again = new_home(tmp_path, clock, switch=core.switch)
    again.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    assert not schedule_flows(again)          # their 30 s leases ran out meanwhile: nothing to cut
    join(again, A, 1)
    join(again, B, 2)
    assert not web_ok(again) and gateway_ok(again)              # A's pause survives the restart
    assert web_ok(again, B, 2, "10.2.0.6")                     # B's stale pause flows are gone
    assert again.commands.call("status", mac=A)["paused_until"] == at(2026, 5, 10, 21, 0)


def test_a_pause_covers_the_devices_ipv6_too(tmp_path, clock):
    clock.now = at(2026, 5, 10, 20, 0)
    core = new_home(tmp_path, clock, ipv6_enabled=True, ipv6_prefix="2001:db8:100::/48")
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    me = str(core.ctx.ipv6.device_prefix(core.ctx.leases.get(A).index).network_address + 7)
    out6 = {"in_port": 1, "eth_src": A, "eth_type": 0x86DD, "ipv6_src": me, "ipv6_dst": "2001:db8:cafe::10",
            "ip_proto": 6, "tcp_src": 40000, "tcp_dst": 443}
    in6 = {"in_port": LOCAL, "eth_type": 0x86DD, "ipv6_src": "2001:db8:cafe::10", "ipv6_dst": me,
           "ip_proto": 6, "tcp_src": 443, "tcp_dst": 40000}
    assert core.switch.outputs(out6) == [LOCAL] and core.switch.outputs(in6) == [1]
    core.commands.call("pause", mac=A)
    assert core.switch.outputs(out6) == [] and core.switch.outputs(in6) == []
    assert not web_ok(core) and gateway_ok(core)


def test_a_restart_on_the_same_switch_keeps_a_pause_in_force(tmp_path, clock):
    clock.now = at(2026, 5, 10, 20, 0)
    core = new_home(tmp_path, clock)
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.commands.call("pause", mac=A, minutes=60)
    core.stop()
    core.state.close()
    again = new_home(tmp_path, clock, switch=core.switch)      # its datapath_up: forget, then reinstall
    assert not web_ok(again) and gateway_ok(again)
    assert again.commands.call("status", mac=A)["paused"] is True
    again.commands.call("resume", mac=A)
    assert web_ok(again)


def test_the_cli_sends_the_commands(monkeypatch, capsys):
    from homework import cli
    sent = []

    def fake_call(sock, cmd, **args):
        sent.append((cmd, args))
        return {"mac": A, "paused": True, "paused_by": "pause", "paused_until": 0} if cmd in ("pause", "resume") \
            else []
    monkeypatch.setattr(cli, "call", fake_call)
    assert cli.main(["schedule", "add", "--owner", "Kid", "--days", "sun-thu", "--from", "21:30", "--to", "07:00"]) == 0
    assert cli.main(["schedule", "list"]) == 0
    assert cli.main(["schedule", "remove", "3"]) == 0
    assert cli.main(["pause", A, "--minutes", "15"]) == 0
    assert cli.main(["resume", A]) == 0
    assert cli.main(["deny-dns", A, "youtube.com", "--schedule", "sun-thu 21:30-07:00"]) == 0
    assert cli.main(["household-deny-dns", "tiktok.com"]) == 0
    assert sent == [
        ("schedule-add", {"mac": None, "owner": "Kid", "days": "sun-thu", "start": "21:30", "end": "07:00",
                          "action": "pause"}),
        ("schedules", {"mac": None}), ("schedule-remove", {"id": "3"}),
        ("pause", {"mac": A, "minutes": 15}), ("resume", {"mac": A}),
        ("deny-dns", {"schedule": "sun-thu 21:30-07:00", "mac": A, "domain": "youtube.com"}),
        ("household-deny-dns", {"domain": "tiktok.com"})]
    assert "no schedules" in capsys.readouterr().out


def test_pause_flows_have_their_own_cookie_owner_and_band():
    from homework import pipeline as P
    from homework.components.usage.blockflows import SCHEDULE, USAGE
    owners = [P.COOKIE_DHCP, P.COOKIE_ROUTING, P.COOKIE_DNS, P.COOKIE_EAPOL, P.COOKIE_USAGE, P.COOKIE_SCHEDULE]
    assert len({o & P.COOKIE_MASK_OWNER for o in owners}) == len(owners)
    assert SCHEDULE.owner != USAGE.owner
    band = {b.owner: b for b in P.BANDS}["schedules"]
    assert SCHEDULE.gateway in band and SCHEDULE.block in band and SCHEDULE.gateway > SCHEDULE.block
