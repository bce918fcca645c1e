"""DNS rules with a schedule, and dns-strict windows: a rule only counts while
its window is open, dnsd is told (rule/unrule) when a window opens or closes, and a
device in a dns-strict window is in allow-list mode meanwhile."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from homework.commands import CommandError
from homework.components.dns.policy import HOUSEHOLD, Policy
from homework.state import StateStore
from conftest import make_core
from test_dhcp_server import join
from test_dns_component import DP, FakeLink

LONDON = ZoneInfo("Europe/London")
A = "02:00:00:00:00:0a"


def at(*args):
    return datetime(*args, tzinfo=LONDON).timestamp()


def test_a_scheduled_rule_counts_only_inside_its_window_and_survives_a_restart(tmp_path):
    now = [at(2026, 5, 10, 20, 0)]                        # Sunday 20:00
    state = StateStore(tmp_path / "s.db")
    p = Policy(state, lambda: now[0], LONDON)
    rules = p.set_rules(A, ["youtube.com"], "deny", "sun-thu 21:30-07:00")
    assert rules[0]["active"] is False and rules[0]["schedule"] == "mon,tue,wed,thu,sun 21:30-07:00"
    assert p.name_allowed(A, "www.youtube.com")
    assert p.refresh() == []
    now[0] = at(2026, 5, 10, 21, 30)
    assert p.refresh() == [(A, "youtube.com", "deny")]
    assert not p.name_allowed(A, "www.youtube.com")
    assert [r["active"] for r in p.list_rules(A)] == [True]
    state.close()
    now[0] = at(2026, 5, 11, 6, 0)                         # restarted inside Sunday's window
    again = Policy(StateStore(tmp_path / "s.db"), lambda: now[0], LONDON)
    assert not again.name_allowed(A, "youtube.com")
    now[0] = at(2026, 5, 11, 7, 0)
    assert again.refresh() == [(A, "youtube.com", None)]
    assert again.name_allowed(A, "youtube.com")
    now[0] = at(2026, 5, 15, 22, 0)                         # Friday night: not a school night
    assert again.refresh() == [] and again.name_allowed(A, "youtube.com")
    now[0] = at(2026, 5, 14, 23, 0)                         # the clock jumps back into Thursday's
    assert again.refresh() == [(A, "youtube.com", "deny")]
    again.set_rules(A, ["youtube.com"], "deny")              # set again without a schedule: always
    now[0] = at(2026, 5, 16, 12, 0)
    assert again.refresh() == [] and not again.name_allowed(A, "youtube.com")
    assert again.remove_rule(A, "youtube.com")


def test_a_bad_schedule_on_a_rule_is_refused_and_nothing_is_stored(tmp_path):
    p = Policy(StateStore(tmp_path / "s.db"), lambda: at(2026, 5, 10, 20, 0), LONDON)
    for bad in ("sun-thu 25:00-07:00", "someday 21:00-07:00", "21:00-07:00"):
        with pytest.raises(ValueError):
            p.set_rules(HOUSEHOLD, ["youtube.com"], "deny", bad)
    assert p.list_rules() == []


def test_strict_puts_a_device_in_allowlist_mode_meanwhile(tmp_path):
    p = Policy(StateStore(tmp_path / "s.db"), lambda: 0.0)
    p.set_rules(A, ["school.example"], "allow")
    assert p.name_allowed(A, "games.example")
    assert p.set_strict({A}) == {A}
    assert p.mode(A) == "allowlist" and not p.name_allowed(A, "games.example")
    assert p.name_allowed(A, "school.example")
    assert p.set_strict(set()) == {A}
    assert p.mode(A) == "denylist" and p.name_allowed(A, "games.example")


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def dns_home(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "dns", "schedules"), clock=clock,
                     dns_control="", dns_intercept=False, timezone="Europe/London")
    dns = core.ctx.component("dns")
    dns.link = FakeLink()
    core.datapath_up(DP)
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    dns.link.take()
    return core, dns


def test_the_dns_component_pushes_rules_as_their_windows_open_and_close(tmp_path):
    clock = Clock(at(2026, 5, 10, 20, 0))
    core, dns = dns_home(tmp_path, clock)
    out = core.commands.call("deny-dns", mac=A, domain="youtube.com", schedule="sun-thu 21:30-07:00")
    assert out["active"] is False
    assert dns.link.take() == [f"unrule {A} youtube.com"]        # dnsd must not have it now
    assert "youtube.com" not in " ".join(dns._snapshot())
    clock.now = at(2026, 5, 10, 21, 31)
    dns._refresh_schedules()
    assert dns.link.take() == [f"rule {A} youtube.com deny"]
    assert f"rule {A} youtube.com deny" in dns._snapshot()
    clock.now = at(2026, 5, 11, 7, 1)
    dns._refresh_schedules()
    assert dns.link.take() == [f"unrule {A} youtube.com"]
    with pytest.raises(CommandError, match="HH:MM"):
        core.commands.call("household-deny-dns", domain="tiktok.com", schedule="daily 21:30-31:00")
    assert [r["domain"] for r in core.commands.call("dns-rules")["rules"]] == ["youtube.com"]


def test_a_dns_strict_window_switches_the_device_line_dnsd_has(tmp_path):
    clock = Clock(at(2026, 5, 11, 15, 0))                    # Monday 15:00
    core, dns = dns_home(tmp_path, clock)
    core.commands.call("schedule-add", mac=A, days="mon-fri", start="16:00", end="18:00", action="dns-strict")
    assert not [line for line in dns.link.take() if "allowlist" in line]
    clock.now = at(2026, 5, 11, 16, 0)
    core.ctx.component("schedules").check()
    lines = dns.link.take()
    assert any(line.startswith("device 10.2.0.2 ") and " allowlist " in line for line in lines), lines
    assert core.commands.call("dns-rules", mac=A)["mode"] == "allowlist"
    assert core.commands.call("status", mac=A)["in_schedule"] == "dns-strict"
    clock.now = at(2026, 5, 11, 18, 0)
    core.ctx.component("schedules").check()
    assert any(" denylist " in line for line in dns.link.take())
