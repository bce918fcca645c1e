"""Domain names as the household types them ("Example.COM.", "*.kids.test",
"https://www.example.com/path") turned into the one form rules are stored in, or a
ValueError that says what is wrong (the API turns it into a 400)."""
from __future__ import annotations

import re

LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
MAX_NAME = 253


def normalize_domain(text: object) -> str:
    """'WWW.Example.com.' -> 'www.example.com'. A leading '*.' is accepted and dropped:
    every rule already covers the subdomains of its name."""
    if not isinstance(text, str):
        raise ValueError("domain must be text")
    name = text.strip().lower()
    if name.startswith("*."):
        name = name[2:]
    name = name.rstrip(".") if name.endswith(".") and not name.endswith("..") else name
    if not name:
        raise ValueError("domain is empty")
    if "://" in name or "/" in name or ":" in name or " " in name:
        raise ValueError(f"{text!r} is not a domain name (give only the name, e.g. example.com)")
    try:
        name = name.encode("idna").decode("ascii") if not name.isascii() else name
    except UnicodeError:
        raise ValueError(f"{text!r} is not a valid internationalised domain name") from None
    if len(name) > MAX_NAME:
        raise ValueError(f"domain is longer than {MAX_NAME} characters")
    for label in name.split("."):
        if not LABEL.match(label):
            raise ValueError(f"{text!r} is not a valid domain name (bad label {label!r})")
    return name


def suffixes(name: str):
    """'a.b.c' -> 'a.b.c', 'b.c', 'c': the names whose rules cover `name`, most specific first."""
    while True:
        yield name
        dot = name.find(".")
        if dot < 0:
            return
        name = name[dot + 1:]
