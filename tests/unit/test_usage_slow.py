"""Usage limits with action slow: once the allowance is used up, the device's
traffic both ways goes through an OpenFlow meter and on through the normal pipeline, on
the strict fake switch (every decision also round-trips through the os-ken adapter)."""
from datetime import datetime
from zoneinfo import ZoneInfo

from homework import pipeline as L
from homework.components.usage.limits import parse_rate
from homework.flows import LOCAL, Datapath
from routingkit import PORTS, from_router, ip_pkt, join, routing_core

LONDON = ZoneInfo("Europe/London")
A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
A_IP, B_IP = "10.2.0.2", "10.2.0.6"
WEB = "203.0.113.10"


def at(*args):
    return datetime(*args, tzinfo=LONDON).timestamp()


def new_home(tmp_path, clock, **kw):
    return routing_core(tmp_path, clock, components=("dhcp", "routing", "usage"), usage_timezone="Europe/London", **kw)


def permitted(core, *devices):
    for mac, port in devices:
        join(core, mac, port)
        core.commands.call("permit", mac=mac)


def bw(core, mac, down):
    core.bus.publish("bandwidth", mac=mac, ip="", bytes=down, up=0, down=down)


def meter_of(core, mac):
    return L.meter_id(core.ctx.leases.get(mac).index)


def up_path(core, mac=A, port=1, ip=A_IP):
    """(ports, meters) of a packet from the device to the internet."""
    ports = core.switch.outputs(ip_pkt(port, mac, ip, WEB, dport=443))
    return ports, core.switch.last_meters


def down_path(core, ip=A_IP):
    ports = core.switch.outputs(from_router(WEB, ip, sport=443))
    return ports, core.switch.last_meters


def accounted(core):
    return any(f.table_id == L.TABLE_ACCOUNT for f in core.switch.last_hits)


def test_parse_rate():
    assert parse_rate("1mbit") == 1000 and parse_rate("512kbit") == 512 and parse_rate("2.5Mbit/s") == 2500
    assert parse_rate("1gbps") == 1_000_000 and parse_rate(64) == 64 and parse_rate("300") == 300


def test_slow_meters_both_directions_once_the_allowance_is_used(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock)
    permitted(core, (A, 1), (B, 2))
    limit = core.commands.call("usage-limit", mac=A, allowance="1M", period="day", action="slow", rate="2mbit")
    assert limit["action"] == "slow" and limit["rate"] == 2000
    bw(core, A, 600_000)
    assert up_path(core) == ([LOCAL], []) and not core.switch.meters
    bw(core, A, 400_000)                                          # 1 MB: reached

    meter = meter_of(core, A)
    assert core.switch.meters[meter].rate_kbps == 2000
    ports, meters = up_path(core)
    assert ports == [LOCAL] and meters == [meter] and accounted(core)   # still routed and counted
    ports, meters = down_path(core)
    assert ports == [1] and meters == [meter] and accounted(core)
    assert up_path(core, B, 2, B_IP) == ([LOCAL], [])             # the other device is not touched
    status = core.commands.call("status", mac=A)
    assert status["usage_slowed"] is True and status["usage_slow_kbps"] == 2000 and status["usage_blocked"] is False
    alert = [p for t, p in core.events if t == "alert" and p["kind"] == "usage-limit"]
    assert [a["mac"] for a in alert] == [A] and "Its internet is slowed to 2 Mbit/s" in alert[0]["detail"]

    clock.now = at(2026, 5, 11, 0, 0, 1)                          # the next day
    core.ctx.component("usage").flush()
    assert up_path(core) == ([LOCAL], []) and down_path(core) == ([1], [])
    assert not core.switch.meters
    assert not any(f.cookie & L.COOKIE_MASK_OWNER == L.COOKIE_USAGE for f in core.switch.flows)
    assert core.commands.call("status", mac=A)["usage_slowed"] is False


def test_a_lift_ends_the_slow_down_for_the_rest_of_the_period(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock)
    permitted(core, (A, 1))
    core.commands.call("usage-limit", mac=A, allowance=1000, action="slow")
    bw(core, A, 2000)
    assert up_path(core)[1] == [meter_of(core, A)]
    assert core.switch.meters[meter_of(core, A)].rate_kbps == 1000      # the default: 1 Mbit/s
    core.commands.call("usage-lift", mac=A)
    assert up_path(core) == ([LOCAL], []) and not core.switch.meters
    bw(core, A, 2000)                                              # lifted: not again today
    assert up_path(core)[1] == []


def test_slow_does_not_open_anything_a_device_may_not_use(tmp_path, clock):
    """The meter flows only forward into table 0 again: a slowed device that is then
    denied keeps only its gateway's services, and a block still wins."""
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock)
    permitted(core, (A, 1))
    core.commands.call("usage-limit", mac=A, allowance=1000, action="slow")
    bw(core, A, 2000)
    core.commands.call("deny", mac=A)
    ports, meters = up_path(core)
    assert ports == [] and meters == [meter_of(core, A)]
    assert LOCAL in core.switch.outputs(ip_pkt(1, A, A_IP, "10.2.0.1", dport=80))   # gateway service
    assert 1 not in core.switch.outputs(from_router(WEB, A_IP, sport=443))
    core.commands.call("permit", mac=A)
    core.commands.call("set-meta", mac=A, owner="Lodger")
    core.commands.call("usage-limit", owner="Lodger", allowance=1000, action="block")
    bw(core, A, 2000)
    assert up_path(core)[0] == []                                  # blocked beats slowed


def test_two_slowed_devices_talking_meet_both_meters(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock)
    permitted(core, (A, 1), (B, 2))
    for mac in (A, B):
        core.commands.call("usage-limit", mac=mac, allowance=1000, action="slow", rate="512kbit")
        bw(core, mac, 2000)
    ports = core.switch.outputs(ip_pkt(1, A, A_IP, B_IP, dport=22))
    assert ports == [2] and sorted(core.switch.last_meters) == sorted([meter_of(core, A), meter_of(core, B)])


def test_slow_is_back_after_a_restart_and_a_switch_reconnect(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock)
    permitted(core, (A, 1))
    core.commands.call("usage-limit", mac=A, allowance=1000, action="slow", rate="256kbit")
    bw(core, A, 5000)
    meter = meter_of(core, A)
    core.stop()
    core.state.close()
    again = new_home(tmp_path, clock, switch=core.switch)          # the switch kept its meter and flows
    again.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    assert up_path(again) == ([LOCAL], [meter]) and down_path(again) == ([1], [meter])
    assert again.switch.meters[meter].rate_kbps == 256
    assert again.commands.call("status", mac=A)["usage_slowed"] is True
    assert again.commands.call("usage-limits")[0]["rate"] == 256
    # the restarted controller lifts it as well
    again.commands.call("usage-lift", mac=A)
    assert up_path(again) == ([LOCAL], [])


def test_a_slow_limit_lifted_while_the_controller_was_down_is_gone_after_a_restart(tmp_path, clock):
    clock.now = 1_000_015.0
    core = new_home(tmp_path, clock, usage_test_period_seconds=20)
    permitted(core, (A, 1))
    core.commands.call("usage-limit", mac=A, allowance=1000, action="slow")
    bw(core, A, 5000)
    assert up_path(core)[1] == [meter_of(core, A)]
    core.stop()
    core.state.close()
    clock.advance(6)                                                # the next period, before it reconnects
    again = new_home(tmp_path, clock, switch=core.switch, usage_test_period_seconds=20)
    again.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    assert up_path(again) == ([LOCAL], [])


def test_api_and_cli_take_a_slow_limit_with_a_rate(tmp_path, clock):
    from test_api import PASSWORD, Api
    from homework import cli
    clock.now = at(2026, 5, 10, 9, 30)
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "api", "usage"),
                        usage_timezone="Europe/London", api_admin_password_file=str(pwfile))
    api = Api(core)
    admin = api.token("admin")
    body = {"mac": A, "allowance": "1K", "action": "slow", "rate": "512kbit"}
    r = api.call("POST", "usage/limits", body, token=admin)
    assert r.status_int == 200 and r.json["rate"] == 512, r.text
    for bad in ("fast", "1kbit", "99gbit", True, [1]):
        r = api.call("POST", "usage/limits", dict(body, rate=bad), token=admin)
        assert r.status_int == 400 and "rate" in r.json["error"], (bad, r.text)
    r = api.call("POST", "usage/limits", {"mac": A, "allowance": "1K", "action": "notify", "rate": "1mbit"},
                 token=admin)
    assert r.status_int == 400 and "only for the action slow" in r.json["error"]
    assert cli.SIMPLE["usage-limit"][0][-1] == "rate?"       # homework usage-limit MAC 2G day slow 1mbit


def test_a_device_of_a_slowed_owner_is_slowed_when_it_gets_a_lease(tmp_path, clock):
    clock.now = at(2026, 5, 10, 9, 30)
    core = new_home(tmp_path, clock)
    permitted(core, (A, 1))
    core.state.touch_device(B, now=clock.now)                        # known, not on the network yet
    for mac in (A, B):
        core.commands.call("set-meta", mac=mac, owner="Lodger")
    core.commands.call("usage-limit", owner="Lodger", allowance=1000, action="slow", rate="300kbit")
    bw(core, A, 2000)
    assert up_path(core)[1] == [meter_of(core, A)]
    permitted(core, (B, 2))                                          # joins while the limit is in force
    assert up_path(core, B, 2, B_IP) == ([LOCAL], [meter_of(core, B)])
    assert core.switch.meters[meter_of(core, B)].rate_kbps == 300


def test_the_board_hears_of_the_slow_down_with_the_alert(tmp_path, clock):
    """The label's mark (view["usage_slowed"]) reaches the board as a `device` SSE event."""
    clock.now = at(2026, 5, 10, 9, 30)
    pwfile = tmp_path / "admin-password"
    pwfile.write_text("correct horse battery\n")
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "api", "usage"),
                        usage_timezone="Europe/London", api_admin_password_file=str(pwfile))
    permitted(core, (A, 1))
    api = core.ctx.component("api")
    published = []
    api.stream.publish = lambda event, data: published.append((event, data))
    core.commands.call("usage-limit", mac=A, allowance=1000, action="slow")
    bw(core, A, 2000)
    assert [d for e, d in published if e == "alert" and d["kind"] == "usage-limit"]
    [view] = [d["view"] for e, d in published if e == "device" and d["reason"] == "usage-limit"]
    assert view["usage_slowed"] is True and view["usage_slow_kbps"] == 1000


def test_step_6_keeps_the_limits_and_allows_slow(monkeypatch):
    import sqlite3
    from homework import migrations
    db = sqlite3.connect(":memory:", isolation_level=None)
    monkeypatch.setattr(migrations, "STEPS", migrations.STEPS[:5])
    migrations.migrate(db)
    db.execute("INSERT INTO usage_limits VALUES ('owner:Lodger', 'month', 5, 'block', 7, 0)")
    monkeypatch.undo()
    assert 6 in migrations.migrate(db)
    assert db.execute("SELECT target, period, allowance, action, reached, lifted, rate FROM usage_limits").fetchall() \
        == [("owner:Lodger", "month", 5, "block", 7, 0, 0)]
    db.execute("INSERT INTO usage_limits VALUES ('02:00:00:00:00:0a', 'day', 5, 'slow', 0, 0, 1000)")
