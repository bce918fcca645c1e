"""Each device's story, as its panel tells it and as a CSV download: when it was first seen,
who let it in (or refused it) and when, the ports and radios it used, the names it looked
up most today, what it moved today and this week, and the alerts about it.

Two steps. `gather` collects the raw facts: the devices table, the decisions and places
history.py records, device_joins (a device joined to its new private address reads both
addresses' past), notifications, the usage component's sums and hwdb's DnsQueries. Its
reads are of this device's rows only (each table is keyed or indexed by MAC) and hwdb's
answer comes over a socket, which the hub waits on without stopping. `assemble` and `csv_text`
turn the facts into the household's words: pure functions, run off the controller's event
loop (worker.offload) and unit-tested apart.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from ... import wording
from .history import place_words

NAMES_TOP = 10                    # the names shown: the most looked up today
ALERTS_MAX = 100                  # the newest alerts about it
HISTORY_MAX = 500                 # decisions and places, the newest
OTHER_NAMES = "(other names)"     # hwdb_sync's row for a flood's many names
CSV_COLUMNS = ("time", "kind", "words")

DECIDED = {"permitted": "Let in", "denied": "Refused", "blacklisted": "Blocked for good",
           "pending": "Waiting for a decision again"}


@dataclass
class Facts:
    """What the router knows of one device, as read (no words yet)."""
    mac: str
    name: str                                   # wording.name_of
    state: str
    first_seen: float
    hostname: str = ""
    label: str = ""                             # what identify says it is ("iPhone (iOS 17)")
    was: list[tuple[str, float]] = field(default_factory=list)          # (earlier MAC, joined at)
    decisions: list[dict] = field(default_factory=list)                 # at, state, was, by
    places: list[tuple[float, str]] = field(default_factory=list)       # (at, place)
    alerts: list[dict] = field(default_factory=list)                    # at, kind, title, detail
    names_today: list[tuple[str, int]] | None = None    # None: the query log is not available
    names_note: str = ""                                # ... and why
    usage: dict | None = None                           # {"today": {up, down}, "week": {...}}
    now: float = 0.0


def _when(at: float, tz: tzinfo) -> str:
    return datetime.fromtimestamp(at, tz).strftime("%Y-%m-%d %H:%M")


def _decision_words(d: dict, pre_approved: bool) -> str:
    verb = DECIDED.get(d["state"], f"Set to {d['state']}")
    if d["state"] == "pending" and d.get("was") == "blacklisted":
        verb = "Taken off the blocked list"
    text = verb + (" before it first joined" if pre_approved and d["state"] == "permitted" else "")
    return wording.sentence(f"{text} by {d['by']}" if d.get("by") else text)


def _usage_words(u: dict) -> str:
    return (f"{wording.size(u['down'] + u['up'])} in all: {wording.size(u['down'])} down, "
            f"{wording.size(u['up'])} up")


def assemble(f: Facts) -> dict:
    """The story: a timeline of events (oldest first; time, kind, words) and the panel's
    summaries. Words only: names, not MACs (an earlier private address is the one MAC it
    names, as the household saw it on the board); sizes in units."""
    events: list[dict] = []

    def add(at: float, kind: str, words: str) -> None:
        events.append({"at": at, "kind": kind, "words": words})

    if f.first_seen:
        asked = f" as “{f.hostname}”" if f.hostname else ""
        add(f.first_seen, "first seen", wording.sentence(f"First seen, asking to join{asked}"))
    for was, at in f.was:
        add(at, "joined", wording.sentence(f"Came back with a new private address and was let in as the same "
                                           f"device (it was {was} before)"))
    approved = None
    for d in f.decisions:
        pre = not f.first_seen or d["at"] < f.first_seen
        add(d["at"], "decision", _decision_words(d, pre))
        if d["state"] == "permitted":
            approved = {"at": d["at"], "by": d.get("by", "")}
    previous = None
    for at, place in f.places:
        words = place_words(place)
        add(at, "place", wording.sentence(f"Moved to {words}" if previous else f"Joined on {words}"))
        previous = place
    for a in f.alerts:
        add(a["at"], "alert", wording.sentence(" ".join(t for t in (a["title"], a.get("detail", "")) if t)))
    events.sort(key=lambda e: e["at"])
    seen_places: list[str] = []
    for _, place in f.places:
        words = place_words(place)
        if words not in seen_places:
            seen_places.append(words)
    names = None if f.names_today is None else [
        {"name": n, "count": c} for n, c in f.names_today if n != OTHER_NAMES][:NAMES_TOP]
    usage = None if f.usage is None else {
        span: {**f.usage[span], "words": _usage_words(f.usage[span])} for span in ("today", "week")}
    return {
        "mac": f.mac, "name": f.name, "label": f.label, "state": f.state,
        "first_seen": f.first_seen or None,
        "approved": approved,
        "places": seen_places,
        "names_today": names,
        "names_note": f.names_note,
        "usage": usage,
        "alerts": [{"at": a["at"], "kind": a["kind"], "title": a["title"], "detail": a.get("detail", "")}
                   for a in f.alerts],
        "events": events,
        "at": f.now,
    }


def _cell(value: str) -> str:
    # Names come from the LAN: one starting like a formula must not run in a spreadsheet.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def csv_text(story: dict, tz: tzinfo) -> str:
    """The story as CSV: one row per event (local time, kind, words), then the day's names
    and the usage figures as of the export, each a row of words."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(CSV_COLUMNS)
    for e in story["events"]:
        w.writerow((_when(e["at"], tz), e["kind"], _cell(e["words"])))
    now = _when(story["at"], tz)
    if story["names_today"]:
        looked = ", ".join(f"{n['name']} ({n['count']})" for n in story["names_today"])
        w.writerow((now, "names today", _cell(f"Looked up most today: {looked}.")))
    if story["usage"]:
        w.writerow((now, "usage today", _cell(wording.sentence(f"Today: {story['usage']['today']['words']}"))))
        w.writerow((now, "usage this week",
                    _cell(wording.sentence(f"This week: {story['usage']['week']['words']}"))))
    return out.getvalue()


def filename(name: str) -> str:
    """The download's file name: the device's name in safe letters."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-")[:40] or "device"
    return f"{safe}-story.csv"
