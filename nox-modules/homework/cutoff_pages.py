"""The page a cut-off device sees, in the household's words: one per reason (cutoff.py).

    Waiting for approval on the Guest Board          pending
    Not allowed on this network                      denied
    Paused by the household until 07:00              paused
    Bedtime: the internet is back at 07:00           bedtime
    Today's (This month's) allowance is used up      allowance

Each page is the same shell: a headline, a few sentences, and the pieces other features
add for that reason (`add_piece`: the first hour's "This is my router: set it up" offer
on the pending page is one, components/api/setup.py). The API renders it for the caller
(components/api/captive.py); the captive pages' server sends every URL a cut-off device
asks for there (conf/lighttpd-captive.conf).
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from collections.abc import Callable

from .cutoff import ALLOWANCE, BEDTIME, DENIED, PAUSED, PENDING, Cut

# reason -> pieces: fn(mac) -> HTML inserted after the page's sentences ("" for none)
_PIECES: dict[str, list[Callable[[str], str]]] = {}


def add_piece(kind: str, piece: Callable[[str], str]) -> None:
    """Once per piece (every controller in a test run registers its own)."""
    pieces = _PIECES.setdefault(kind, [])
    if piece not in pieces:
        pieces.append(piece)


@dataclass(frozen=True)
class Words:
    title: str            # the browser tab's
    headline: str
    sentences: tuple[str, ...]


def when(until: float, now: float, tz: tzinfo) -> str:
    """'07:00' within the next day, 'Tuesday 07:00' within a week, '12 May 07:00' after."""
    end = datetime.fromtimestamp(until, tz)
    clock = end.strftime("%H:%M")
    ahead = end - datetime.fromtimestamp(now, tz)
    if ahead <= timedelta(hours=24):
        return clock
    if ahead <= timedelta(days=6):
        return f"{end.strftime('%A')} {clock}"
    return f"{end.day} {end.strftime('%B')} {clock}"


def back_at(until: float, now: float, tz: tzinfo) -> str:
    """When an allowance comes back: 'at midnight', 'on 1 December', or 'at 07:00'."""
    end = datetime.fromtimestamp(until, tz)
    if end.hour == 0 and end.minute == 0:
        if end - datetime.fromtimestamp(now, tz) <= timedelta(hours=24):
            return "at midnight"
        return f"on {end.day} {end.strftime('%B')}"
    return f"at {when(until, now, tz)}"


def words(cut: Cut, name: str, now: float, tz: tzinfo) -> Words:
    """What the page says; `name` is the device's name as the household knows it."""
    who = f"This device ({name})" if name else "This device"
    if cut.kind == PENDING:
        return Words("Waiting for approval", "Waiting for approval on the Guest Board", (
            f"{who} has joined the home network, but someone in the household has to let it in: "
            "ask them to tap <em>Let in</em> beside it on the Guest Board.",
            "Once they do, this device is online straight away: just reload the page."))
    if cut.kind == DENIED:
        return Words("Not allowed on this network", "Not allowed on this network", (
            f"{who} may not use this network: someone in the household has said no on the Guest Board.",
            "If you think that is a mistake, ask them to let it in."))
    if cut.kind == PAUSED:
        at = when(cut.until, now, tz) if cut.until else ""
        return Words("Paused", f"Paused by the household until {at}" if at else "Paused by the household", (
            f"Someone in the household has paused the internet for {who[0].lower() + who[1:]}.",
            (f"It comes back by itself at {at}, " if at else "It comes back ")
            + "or as soon as they resume it on the Guest Board."))
    if cut.kind == BEDTIME:
        at = when(cut.until, now, tz) if cut.until else ""
        return Words("Bedtime", f"Bedtime: the internet is back at {at}" if at else "Bedtime", (
            f"{who} has a bedtime set by the household, and it is bedtime now.",
            f"The internet comes back by itself at {at}." if at else
            "The internet comes back by itself when bedtime ends."))
    if cut.kind == ALLOWANCE:
        span = "Today's" if cut.period == "day" else "This month's"
        back = back_at(cut.until, now, tz) if cut.until else "when the next period begins"
        return Words("Allowance used up", f"{span} allowance is used up", (
            f"{who} has used all the data the household allows it for "
            f"{'today' if cut.period == 'day' else 'this month'}.",
            f"The internet comes back {back}, or as soon as someone lifts the limit on the Guest Board."))
    raise ValueError(f"no page for {cut.kind!r}")


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 0; min-height: 100vh; display: flex;
         align-items: center; justify-content: center; background: #f4f1ea; color: #2b2b2b; }}
  main {{ max-width: 28rem; padding: 2rem; text-align: center; }}
  h1 {{ font-size: 1.6rem; margin-bottom: .5rem; }}
  p {{ line-height: 1.5; }}
  #setup {{ margin-top: 2rem; padding-top: 1rem; border-top: 1px solid #d8d2c4; text-align: left; }}
  #setup h2 {{ font-size: 1.2rem; text-align: center; }}
  #setup label {{ display: block; margin: .8rem 0; }}
  #setup input {{ display: block; width: 100%; box-sizing: border-box; font-size: 1rem; padding: .5rem;
                 margin-top: .3rem; }}
  #setup button {{ font-size: 1rem; padding: .6rem 1rem; width: 100%; }}
  #setup .error {{ color: #a02020; }}
  #setup .hint {{ font-size: .9rem; color: #555; }}
  code {{ word-break: break-all; }}
</style>
</head>
<body>
<main data-reason="{kind}">
  <h1>{headline}</h1>
{sentences}
{pieces}
</main>
</body>
</html>
"""


def render(cut: Cut, mac: str, name: str, now: float, tz: tzinfo) -> str:
    """The whole page for a cut-off device. `name` is escaped here (a device chooses its
    own host name); the sentences' own markup is ours."""
    w = words(cut, html.escape(name, quote=True), now, tz)
    pieces = "\n".join(piece(mac) for piece in _PIECES.get(cut.kind, ()))
    return PAGE.format(title=html.escape(w.title), headline=w.headline, kind=cut.kind,
                       sentences="\n".join(f"  <p>{s}</p>" for s in w.sentences), pieces=pieces)


def render_not_cut(name: str) -> str:
    """For a device that is not cut off (it reached the page some other way)."""
    who = f"This device ({html.escape(name, quote=True)})" if name else "This device"
    return PAGE.format(title="On the network", headline="On the network", kind="",
                       sentences=f"  <p>{who} may use the internet: nothing is holding it back.</p>", pieces="")
