"""Schedule windows: days and times, windows crossing midnight, DST days,
the minutes of the week they cover and overlap."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from homework.config import ConfigError, parse
from homework.components.schedules.windows import Window, WindowError, parse_days, parse_spec, spec_text

LONDON = ZoneInfo("Europe/London")


def at(*args, tz=LONDON):
    return datetime(*args, tzinfo=tz).timestamp()


def test_days_take_ranges_lists_wrapping_ranges_and_names():
    assert parse_days("mon-fri") == (0, 1, 2, 3, 4)
    assert parse_days("sat,sun") == (5, 6)
    assert parse_days("fri-mon") == (0, 4, 5, 6)
    assert parse_days("Sun-Thu") == (0, 1, 2, 3, 6)
    assert parse_days("daily") == tuple(range(7))
    assert parse_days(["mon", "wed"]) == (0, 2)


@pytest.mark.parametrize("days", ["", "  ", "funday", "mon-xyz", None])
def test_bad_days_are_refused(days):
    with pytest.raises(WindowError, match="days"):
        parse_days(days)


@pytest.mark.parametrize("start,end", [("25:00", "07:00"), ("21:30", "7"), ("21:60", "07:00"), ("", "07:00"),
                                       ("21:30", "21:30")])
def test_bad_times_and_empty_windows_are_refused(start, end):
    with pytest.raises(WindowError):
        Window.make("mon-fri", start, end)


def test_a_window_crossing_midnight_belongs_to_the_day_it_starts():
    school_nights = Window.make("sun-thu", "21:30", "07:00")
    assert school_nights.is_open(at(2026, 5, 10, 21, 30), LONDON)       # Sunday evening
    assert school_nights.is_open(at(2026, 5, 11, 6, 59), LONDON)        # Monday morning: Sunday's window
    assert not school_nights.is_open(at(2026, 5, 11, 7, 0), LONDON)
    assert not school_nights.is_open(at(2026, 5, 10, 21, 29), LONDON)
    assert not school_nights.is_open(at(2026, 5, 15, 22, 0), LONDON)    # Friday night: not a school night
    assert school_nights.is_open(at(2026, 5, 16, 6, 0), LONDON) is False   # Saturday morning (Friday's)
    assert school_nights.is_open(at(2026, 5, 15, 6, 0), LONDON)         # Friday morning (Thursday's)


def test_a_daytime_window():
    homework = Window.make("mon-fri", "16:00", "18:00")
    assert homework.is_open(at(2026, 5, 11, 16, 0), LONDON)
    assert not homework.is_open(at(2026, 5, 11, 18, 0), LONDON)
    assert not homework.is_open(at(2026, 5, 16, 17, 0), LONDON)         # Saturday


def test_local_time_follows_the_zone_and_dst_days():
    night = Window.make("daily", "00:30", "02:30")
    # 29 March 2026: London springs forward at 01:00 UTC (01:00 -> 02:00 local)
    assert night.is_open(at(2026, 3, 29, 0, 45), LONDON)                # 00:45 GMT
    assert night.is_open(datetime(2026, 3, 29, 1, 15, tzinfo=ZoneInfo("UTC")).timestamp(), LONDON)  # 02:15 BST
    assert not night.is_open(datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("UTC")).timestamp(), LONDON)
    # the window's end on a 23-hour day is 02:30 BST = 01:30 UTC
    end = night.end_after(at(2026, 3, 29, 0, 45), LONDON)
    assert end == datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("UTC")).timestamp()
    # in UTC the same instant is outside the window of a zone an hour ahead
    assert Window.make("daily", "10:00", "11:00").is_open(at(2026, 7, 1, 10, 30), LONDON)
    assert not Window.make("daily", "10:00", "11:00").is_open(at(2026, 7, 1, 10, 30), ZoneInfo("UTC"))


def test_end_after_is_the_next_morning_for_a_night_window():
    night = Window.make("sun-thu", "21:30", "07:00")
    assert night.end_after(at(2026, 5, 10, 22, 0), LONDON) == at(2026, 5, 11, 7, 0)
    assert night.end_after(at(2026, 5, 11, 6, 0), LONDON) == at(2026, 5, 11, 7, 0)


@pytest.mark.parametrize("a,b,overlap", [
    (("sun-thu", "21:30", "07:00"), ("mon", "06:00", "08:00"), True),     # Sunday's night runs into Monday 06:00
    (("sun-thu", "21:30", "07:00"), ("mon", "07:00", "08:00"), False),    # touching is not overlapping
    (("sun-thu", "21:30", "07:00"), ("fri", "06:00", "09:00"), True),      # Friday 06:00 is Thursday's night
    (("sun-thu", "21:30", "07:00"), ("fri,sat", "22:00", "09:00"), False),  # weekend nights
    (("mon-fri", "16:00", "18:00"), ("sat,sun", "16:00", "18:00"), False),
    (("sun", "23:00", "01:00"), ("mon", "00:30", "02:00"), True),          # across the week's end
    (("daily", "09:00", "10:00"), ("wed", "09:59", "11:00"), True),
])
def test_overlap_is_exact_to_the_minute_of_the_week(a, b, overlap):
    first, second = Window.make(*a), Window.make(*b)
    assert first.overlaps(second) is overlap
    assert second.overlaps(first) is overlap


def test_the_text_form_round_trips():
    windows = parse_spec("sun-thu 21:30-07:00; sat,sun 23:00-08:00")
    assert spec_text(windows) == "sun,mon,tue,wed,thu 21:30-07:00; weekends 23:00-08:00" or \
        spec_text(windows) == "mon,tue,wed,thu,sun 21:30-07:00; weekends 23:00-08:00"
    assert parse_spec(spec_text(windows)) == windows
    for bad in ("", "sun-thu", "sun-thu 21:30", "sun-thu 25:00-07:00", "xyz 21:30-07:00"):
        with pytest.raises(WindowError):
            parse_spec(bad)


def test_the_routers_time_zone_is_a_checked_config_key():
    assert parse({"version": 2}).timezone == ""          # the system's /etc/localtime
    assert parse({"version": 2, "router": {"timezone": "Europe/London"}}).timezone == "Europe/London"
    with pytest.raises(ConfigError, match="router.timezone: unknown time zone 'Mars/Olympus'"):
        parse({"version": 2, "router": {"timezone": "Mars/Olympus"}})
