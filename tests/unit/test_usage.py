"""Durable usage: local-hour rollups, periods, owners, batching, restarts."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from homework.commands import CommandError
from homework import pipeline as L
from homework.components.usage import periods
from homework.flows import FlowRemoved, FlowStats
from routingkit import ip_pkt, from_router, join, routing_core
from conftest import make_core

LONDON = ZoneInfo("Europe/London")
A, B, C = "02:00:00:00:00:0a", "02:00:00:00:00:0b", "02:00:00:00:00:0c"
WEB = "203.0.113.10"


def at(*args, tz=LONDON):
    return datetime(*args, tzinfo=tz).timestamp()


# -- periods ---------------------------------------------------------------------------------------
def test_dst_days_have_23_and_25_hours():
    spring = periods.day_window(at(2026, 3, 29, 12), LONDON)
    autumn = periods.day_window(at(2026, 10, 25, 12), LONDON)
    assert spring[1] - spring[0] == 23 * 3600
    assert autumn[1] - autumn[0] == 25 * 3600
    # both 01:xx hours of the autumn change are distinct stored hours
    first = periods.hour_start(at(2026, 10, 25, 1, 30), LONDON)
    assert periods.hour_start(first + 3600 + 60, LONDON) == first + 3600


def test_hours_follow_a_half_hour_zone():
    kolkata = ZoneInfo("Asia/Kolkata")
    t = at(2026, 5, 1, 0, 10, tz=kolkata)
    assert periods.hour_start(t, kolkata) == at(2026, 5, 1, 0, 0, tz=kolkata)
    assert periods.day_window(t, kolkata)[0] == at(2026, 5, 1, tz=kolkata)
    assert int(at(2026, 5, 1, tz=kolkata)) % 3600 == 1800       # not a UTC hour


def test_billing_period_starts_on_the_billing_day_at_local_midnight():
    assert periods.month_window(at(2026, 5, 20), LONDON, 15) == (at(2026, 5, 15), at(2026, 6, 15))
    assert periods.month_window(at(2026, 5, 14, 23, 59), LONDON, 15) == (at(2026, 4, 15), at(2026, 5, 15))
    # billing day 31: the month's last day when the month is shorter
    assert periods.month_window(at(2026, 2, 28, 1), LONDON, 31) == (at(2026, 2, 28), at(2026, 3, 31))
    assert periods.month_window(at(2026, 3, 1), LONDON, 1) == (at(2026, 3, 1), at(2026, 4, 1))


# -- the component ---------------------------------------------------------------------------------
@pytest.fixture
def home(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = make_core(tmp_path, components=("dhcp", "routing", "usage"), clock=clock, usage_timezone="Europe/London")
    for mac in (A, B, C):
        core.state.touch_device(mac, now=clock.now)
    core.state.set_device_meta(A, owner="Lodger", type="laptop")
    core.state.set_device_meta(B, owner="Mary", type="phone")
    return core


def bw(core, mac, up, down):
    core.bus.publish("bandwidth", mac=mac, ip="10.2.0.2", bytes=up + down, up=up, down=down)


def flush(core):
    core.ctx.component("usage").flush()
    core.state.flush(force=True)


def stored(core):
    return [tuple(r) for r in core.state.db.execute("SELECT mac, hour, up, down FROM usage_hours ORDER BY mac, hour")]


def test_bytes_roll_up_per_local_hour_day_and_month(home, clock):
    bw(home, A, 100, 1000)
    clock.advance(1800)                     # 10:00: a new hour
    bw(home, A, 10, 20)
    bw(home, B, 5, 5)
    clock.now = at(2026, 5, 11, 8)          # next day
    bw(home, A, 1, 2)
    flush(home)
    assert stored(home) == [(A, int(at(2026, 5, 10, 9)), 100, 1000), (A, int(at(2026, 5, 10, 10)), 10, 20),
                            (A, int(at(2026, 5, 11, 8)), 1, 2), (B, int(at(2026, 5, 10, 10)), 5, 5)]
    day = home.commands.call("usage", period="day", by="device")
    assert day["label"] == "2026-05-11" and day["total"] == 3
    month = home.commands.call("usage", period="month", by="device")
    assert month["label"] == "2026-05" and month["total"] == 1143
    assert [(r["who"], r["up"], r["down"]) for r in month["rows"]] == [(A, 111, 1022), (B, 5, 5)]
    assert [(r["period"], r["who"], r["total"]) for r in month["series"]] == [
        ("2026-05-10", A, 1130), ("2026-05-10", B, 10), ("2026-05-11", A, 3)]


def test_usage_per_owner_and_type_with_unassigned(home, clock):
    bw(home, A, 0, 700)
    bw(home, B, 0, 200)
    bw(home, C, 0, 100)                     # no owner, no type
    by_owner = {r["who"]: r["total"] for r in home.commands.call("usage", period="month", by="owner")["rows"]}
    assert by_owner == {"Lodger": 700, "Mary": 200, "unassigned": 100}
    by_type = {r["who"]: r["total"] for r in home.commands.call("usage", period="month", by="type")["rows"]}
    assert by_type == {"laptop": 700, "phone": 200, "unassigned": 100}


def test_writes_are_batched_not_one_per_event(home, clock):
    writes = []
    home.state.defer = lambda sql, args=(): writes.append(sql)
    for _ in range(500):
        bw(home, A, 1, 1)
    assert writes == []                     # nothing on the hot path
    home.ctx.component("usage").flush()
    assert sum("usage_hours" in w and "INSERT" in w for w in writes) == 1


def test_usage_survives_a_restart_and_the_stop_flushes(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = make_core(tmp_path, components=("dhcp", "routing", "usage"), clock=clock, usage_timezone="Europe/London")
    bw(core, A, 300, 4000)
    core.stop()
    core.state.close()
    again = make_core(tmp_path, components=("dhcp", "routing", "usage"), clock=clock, usage_timezone="Europe/London")
    bw(again, A, 1, 1)
    rows = again.commands.call("usage", period="day", by="device")["rows"]
    assert [(r["who"], r["up"], r["down"]) for r in rows] == [(A, 301, 4001)]


def test_hours_older_than_the_kept_months_are_pruned(home, clock):
    clock.now = at(2025, 3, 10, 12)
    bw(home, A, 1, 1)                       # 14 months before May 2026
    clock.now = at(2025, 4, 10, 12)
    bw(home, A, 2, 2)                       # 13 months before: kept
    flush(home)
    clock.now = at(2026, 5, 10, 12)
    bw(home, A, 3, 3)
    flush(home)
    assert [r[2] for r in stored(home)] == [2, 3]


def test_bad_period_or_group_is_a_clear_error(home):
    with pytest.raises(CommandError, match="period must be one of"):
        home.commands.call("usage", period="week")
    with pytest.raises(CommandError, match="by must be one of"):
        home.commands.call("usage", by="colour")


# -- fed by routing's accounting: up/down split, every byte once ---------------------------------
def test_polls_and_flow_removed_are_counted_once_with_up_and_down(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "usage"), usage_timezone="Europe/London")
    usage = core.ctx.component("usage")
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    routing = core.ctx.component("routing")
    core.switch.outputs(ip_pkt(1, A, "10.2.0.2", WEB, proto=17, sport=5000, dport=9000))
    core.switch.outputs(from_router(WEB, "10.2.0.2", proto=17, sport=9000, dport=5000))
    out, back = sorted((f for f in core.switch.flows if L.kind_of(f.cookie) == L.KIND_LEARNED),
                       key=lambda f: f.match["ipv4_src"] != "10.2.0.2")
    routing.poll_flow_stats()               # ends the priming interval

    def stats(flow, n):
        return FlowStats(match=flow.match, cookie=flow.cookie, priority=flow.priority, duration_sec=1,
                         packet_count=n, byte_count=n * 1000, table_id=flow.table_id)
    core.flow_stats([stats(out, 2), stats(back, 10)])
    routing.poll_flow_stats()
    core.flow_stats([stats(out, 3), stats(back, 25)])
    core.flow_removed(FlowRemoved(match=back.match, cookie=back.cookie, priority=back.priority,
                                  reason="idle_timeout", duration_sec=40, packet_count=30,
                                  byte_count=30_000, table_id=L.TABLE_ACCOUNT))
    routing.poll_flow_stats()
    [row] = usage.usage(period="hour")["rows"]
    assert (row["up"], row["down"]) == (3_000, 30_000)


def test_a_counter_that_goes_back_counts_from_zero_not_negative(tmp_path, clock):
    """A flow entry replaced under the same match (or a wrapped counter) restarts from 0."""
    clock.now = at(2026, 5, 10, 9, 30)
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "usage"), usage_timezone="Europe/London")
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    routing = core.ctx.component("routing")
    core.switch.outputs(ip_pkt(1, A, "10.2.0.2", WEB, proto=17, sport=5000, dport=9000))
    [flow] = [f for f in core.switch.flows if L.kind_of(f.cookie) == L.KIND_LEARNED]
    routing.poll_flow_stats()
    for n in (10, 4):                      # 10 KB, then the counter is back at 4 KB
        core.flow_stats([FlowStats(match=flow.match, cookie=flow.cookie, priority=flow.priority, duration_sec=1,
                                   packet_count=n, byte_count=n * 1000, table_id=flow.table_id)])
        routing.poll_flow_stats()
    assert core.commands.call("usage", period="day")["total"] == 14_000
