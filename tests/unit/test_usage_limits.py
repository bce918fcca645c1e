"""Per-device and per-owner usage limits: notify, block to gateway services
until the next period, lift, restart, on the strict fake switch."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from homework.commands import CommandError
from homework.flows import LOCAL, Datapath
from routingkit import PORTS, from_router, ip_pkt, join, routing_core

LONDON = ZoneInfo("Europe/London")
A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
WEB = "203.0.113.10"


def at(*args):
    return datetime(*args, tzinfo=LONDON).timestamp()


def new_home(tmp_path, clock, **kw):
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "usage"), usage_timezone="Europe/London", **kw)
    return core


@pytest.fixture
def home(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock)
    for mac, port in ((A, 1), (B, 2)):
        join(core, mac, port)
        core.commands.call("permit", mac=mac)
    return core


def bw(core, mac, down):
    core.bus.publish("bandwidth", mac=mac, ip="", bytes=down, up=0, down=down)


def web_ok(core, mac=A, port=1, ip="10.2.0.2"):
    return LOCAL in core.switch.outputs(ip_pkt(port, mac, ip, WEB, dport=443))


def gateway_ok(core, mac=A, port=1, ip="10.2.0.2", router="10.2.0.1"):
    return LOCAL in core.switch.outputs(ip_pkt(port, mac, ip, router, dport=80))


def alerts(core):
    return [p for t, p in core.events if t == "alert" and p["kind"] == "usage-limit"]


def test_a_daily_block_keeps_only_gateway_services_until_the_next_day(home, clock):
    home.commands.call("usage-limit", mac=A, allowance="1M", period="day", action="block")
    bw(home, A, 600_000)
    assert web_ok(home)
    bw(home, A, 400_000)                                 # 1 MB: reached
    assert not web_ok(home) and gateway_ok(home)
    assert 1 not in home.switch.outputs(from_router(WEB, "10.2.0.2", dport=40000))    # nothing comes in
    assert 1 in home.switch.outputs(from_router("10.2.0.1", "10.2.0.2", sport=80, dport=40000))
    assert web_ok(home, B, 2, "10.2.0.6")                # the other device is not touched
    assert [a["mac"] for a in alerts(home)] == [A]
    assert home.commands.call("status", mac=A)["usage_blocked"] is True
    clock.now = at(2026, 5, 11, 0, 0, 1)                  # the next day
    home.ctx.component("usage").flush()
    assert web_ok(home)
    assert home.commands.call("status", mac=A)["usage_blocked"] is False


def test_an_allowance_set_below_what_was_used_today_blocks_at_once(home, clock):
    bw(home, A, 5000)
    assert web_ok(home)
    home.commands.call("usage-limit", mac=A, allowance=1000, period="day", action="block")
    assert not web_ok(home) and gateway_ok(home)        # no packet of its own needed
    assert home.commands.call("status", mac=A)["usage_blocked"] is True
    assert [a["mac"] for a in alerts(home)] == [A]
    assert web_ok(home, B, 2, "10.2.0.6")                # the other device is not touched
    home.commands.call("usage-limit", mac=B, allowance=1000, period="day", action="block")
    assert web_ok(home, B, 2, "10.2.0.6")                # B used nothing yet: not blocked


def test_notify_only_alerts_once_per_period(home, clock):
    home.commands.call("usage-limit", mac=A, allowance=1000, period="day", action="notify")
    bw(home, A, 1500)
    bw(home, A, 1500)
    assert web_ok(home) and len(alerts(home)) == 1


def test_an_owner_limit_counts_and_blocks_all_the_owners_devices(home, clock):
    for mac in (A, B):
        home.commands.call("set-meta", mac=mac, owner="Lodger")
    home.commands.call("usage-limit", owner="Lodger", allowance=1000, period="month", action="block")
    bw(home, A, 600)
    bw(home, B, 500)
    assert not web_ok(home) and not web_ok(home, B, 2, "10.2.0.6")


def test_a_household_member_lifts_it_for_the_rest_of_the_period(home, clock):
    home.commands.call("usage-limit", mac=A, allowance=1000)
    bw(home, A, 2000)
    assert not web_ok(home)
    home.commands.call("usage-lift", mac=A)
    assert web_ok(home)
    bw(home, A, 2000)                                    # lifted: not blocked again today
    assert web_ok(home)
    clock.now = at(2026, 5, 11, 12)
    bw(home, A, 2000)                                    # a new day: the limit holds again
    assert not web_ok(home)


def blocked_then_restarted(tmp_path, clock, down_until=None):
    """A blocks A at 09:30, stops; a new controller (down until `down_until`, if given)
    starts on the same switch and state."""
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock)
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.commands.call("usage-limit", mac=A, allowance=1000)
    bw(core, A, 5000)
    assert not web_ok(core)
    core.stop()
    core.state.close()
    if down_until is not None:
        clock.now = down_until
    again = new_home(tmp_path, clock, switch=core.switch)
    again.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    return again


def test_a_block_is_back_after_a_restart_and_a_switch_reconnect(tmp_path, clock):
    again = blocked_then_restarted(tmp_path, clock)
    assert not web_ok(again) and gateway_ok(again)


def test_a_short_test_period_ends_the_block(tmp_path, clock):
    clock.now = 1_000_000.0
    core = new_home(tmp_path, clock, usage_test_period_seconds=20)
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    core.commands.call("usage-limit", mac=A, allowance=1000)
    bw(core, A, 5000)
    assert not web_ok(core)
    clock.advance(20)
    core.ctx.component("usage").flush()
    assert web_ok(core)


@pytest.mark.parametrize("kw, message", [
    ({"allowance": "1M"}, "either mac or owner"),
    ({"mac": A, "owner": "x", "allowance": 1}, "either mac or owner"),
    ({"mac": "nope", "allowance": 1}, "MAC"),
    ({"mac": A, "allowance": 0}, "more than 0"),
    ({"mac": A, "allowance": 1, "period": "week"}, "day or month"),
    ({"mac": A, "allowance": 1, "action": "throttle"}, "notify, slow or block"),
    ({"mac": A, "allowance": 1, "action": "slow", "rate": "fast"}, "bad rate"),
    ({"mac": A, "allowance": 1, "action": "slow", "rate": "1kbit"}, "between 8 kbit/s"),
    ({"mac": A, "allowance": 1, "action": "slow", "rate": "20gbit"}, "between 8 kbit/s"),
    ({"mac": A, "allowance": 1, "action": "block", "rate": "1mbit"}, "only for the action slow"),
    ({"mac": A}, "give the allowance"),
    ({"mac": A, "allowance": "lots"}, "the allowance must be a size such as 500M or 2G, got 'lots'")])
def test_bad_limits_are_clear_errors(home, kw, message):
    with pytest.raises(CommandError, match=message):
        home.commands.call("usage-limit", **kw)


@pytest.mark.parametrize("kw, words", [
    ({"mac": A, "allowance": "20M", "action": "slow", "rate": "1mbit"},
     "20 MB a day; once it is used up, slowed to 1 Mbit/s until the day is over"),
    ({"mac": A, "allowance": "2.5G", "period": "month", "action": "block"},
     "2.5 GB a month; once it is used up, no internet until the month is over"),
    ({"owner": "Sam", "allowance": "500M", "action": "notify"},
     "500 MB a day for all of Sam's devices together; once it is used up, the household is told, nothing is cut")])
def test_a_limit_says_itself_in_words(home, kw, words):
    assert home.commands.call("usage-limit", **kw)["text"] == words
    assert [lim["text"] for lim in home.commands.call("usage-limits")] == [words]


def test_limits_read_state_db_once_per_period_not_per_event(home, clock):
    home.commands.call("usage-limit", mac=A, allowance="1G")
    bw(home, A, 1000)                                             # the period's first event reads it
    reads = []
    real = home.state.execute
    home.state.execute = lambda sql, args=(): (reads.append(sql), real(sql, args))[1]
    for _ in range(50):
        bw(home, A, 1000)
    assert not any("usage_hours" in r for r in reads)
    home.commands.call("usage-limit", mac=A, allowance="40K")    # a new allowance: re-read once
    bw(home, A, 1000)
    assert not web_ok(home)                                       # 51 KB counted against 40 KB


def test_a_block_that_ended_while_the_controller_was_down_is_gone_after_a_restart(tmp_path, clock):
    # back the next day: the block has ended
    again = blocked_then_restarted(tmp_path, clock, down_until=at(2026, 5, 11, 9, 30))
    join(again, A, 1)                                    # its lease ran out overnight too
    assert web_ok(again)


def test_a_block_covers_the_devices_ipv6_too(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock, ipv6_enabled=True, ipv6_prefix="2001:db8:100::/48")
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    prefix = core.ctx.ipv6.device_prefix(core.ctx.leases.get(A).index)
    me = str(prefix.network_address + 7)
    out6 = {"in_port": 1, "eth_src": A, "eth_type": 0x86DD, "ipv6_src": me, "ipv6_dst": "2001:db8:cafe::10",
            "ip_proto": 6, "tcp_src": 40000, "tcp_dst": 443}
    in6 = {"in_port": LOCAL, "eth_type": 0x86DD, "ipv6_src": "2001:db8:cafe::10", "ipv6_dst": me,
           "ip_proto": 6, "tcp_src": 443, "tcp_dst": 40000}
    assert core.switch.outputs(out6) == [LOCAL] and core.switch.outputs(in6) == [1]
    core.commands.call("usage-limit", mac=A, allowance=1000)
    bw(core, A, 5000)
    assert core.switch.outputs(out6) == [] and core.switch.outputs(in6) == []
    assert not web_ok(core) and gateway_ok(core)
