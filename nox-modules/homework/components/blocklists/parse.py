"""Blocklist formats people subscribe to, read into one set of names:

  hosts files        `0.0.0.0 ads.example.com` / `127.0.0.1 a b c` / `:: name` (# comments)
  AdGuard / ABP      `||ads.example.com^` (also `$important`), `@@||ok.example.com^` exceptions,
                     `!` comments, `[Adblock Plus 2.0]` headers
  plain lists        one name per line

Every other line (cosmetic `##` rules, URL patterns, regexes, rules with other options)
cannot be enforced by a resolver: it is skipped and counted, never an error. A text with
no usable line at all is not a blocklist (an HTML error page, a binary): ListError.

One line at a time (`classify`): compile.py streams a whole list through it into dnsd's
file, so a list of millions of names never becomes a Python set.
"""
from __future__ import annotations

import re

from ..dns.names import normalize_domain

SINK_ADDRESSES = frozenset({"0.0.0.0", "127.0.0.1", "::", "::1", "0", "255.255.255.255", "fe80::1%lo0",
                            "ff00::0", "ff02::1", "ff02::2", "ff02::3", "fe00::0"})
# Names hosts files map to themselves for the machine's sake, never list entries.
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "local", "broadcasthost", "ip6-localhost",
                         "ip6-loopback", "ip6-localnet", "ip6-mcastprefix", "ip6-allnodes", "ip6-allrouters",
                         "ip6-allhosts", "0.0.0.0"})
# One regex for the usual case (an ASCII name of valid labels); others go through the
# rules' own normalisation (IDN, trailing dot, upper case).
PLAIN_NAME = re.compile(r"^(?=.{1,253}$)(?!-)[a-z0-9_-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9_-]{1,63}(?<!-))+$")
TRAILING_COMMENT = re.compile(r"\s#")
ABP = re.compile(r"^(@@)?\|\|([^/^$|*]+)\^(\$important)?$")


class ListError(ValueError):
    """The text is not a blocklist; the message says why."""


def _name(text: str) -> str | None:
    if PLAIN_NAME.match(text):
        return None if text in LOCAL_NAMES or text.replace(".", "").isdigit() else text
    try:
        name = normalize_domain(text)
    except ValueError:
        return None
    # a list entry must be a domain, not a bare label or an address
    if "." not in name or name in LOCAL_NAMES or name.replace(".", "").isdigit():
        return None
    return name


def classify(line: str) -> tuple[list[str], str | None, int]:
    """(names the line blocks, the exception it makes or None, lines skipped: 0 or more)."""
    line = line.strip()
    if not line or line[0] in "#!" or (line[0] == "[" and line[-1] == "]"):
        return [], None, 0
    m = ABP.match(line)
    if m:
        name = _name(m.group(2))
        if name is None:
            return [], None, 1
        return ([], name, 0) if m.group(1) else ([name], None, 0)
    fields = TRAILING_COMMENT.split(line, 1)[0].split()     # "name # note"; "site##.ad" is cosmetic
    if len(fields) >= 2 and fields[0] in SINK_ADDRESSES:
        names, skipped = [], 0
        for text in fields[1:]:
            name = _name(text)
            if name is not None:
                names.append(name)
            elif text not in LOCAL_NAMES:
                skipped += 1
        return names, None, skipped
    if len(fields) == 1:
        name = _name(fields[0])
        if name is not None:
            return [name], None, 0
    return [], None, 1
