"""Validators for values that come from outside the controller: the API, the CLI (whose
arguments arrive as text), a restored backup. One function per kind of value, used by all
three doors, so a value one door refuses no other lets in.

Python's own parsing is too kind for that: `"²".isdigit()` is true and `int("²")` then
fails; `int("٣")` is 3 and `int("5_0")` is 50; `json.loads` of 400 KB of "[[[[" raises
RecursionError, which is no ValueError. Here:

    whole_number("42", "minutes", 1, 10080) -> 42     (ASCII digits, or an int; never a bool)
    row_id("7", "schedule") -> 7
    switch("on", "alerts") -> True                     (a bool, or the CLI's on/off, yes/no, true/false, 1/0)
    parse_json(raw, "request body") -> the document   (at most MAX_DEPTH levels deep)

Each raises BadValue (a ValueError) with a sentence for the household; the API answers
it with 400, the CLI prints it, a restore names the row."""
from __future__ import annotations

import json
from collections.abc import Iterable

MAX_NUMBER = 2 ** 62          # SQLite integers are 64-bit signed
MAX_DEPTH = 32                # levels of JSON nesting: our documents use five at most
MAX_DIGITS = 20


class BadValue(ValueError):
    pass


class TooDeep(BadValue):
    """A JSON document nested deeper than MAX_DEPTH."""


def whole_number(value, what: str, low: int = 0, high: int = MAX_NUMBER) -> int:
    """An int, or text of ASCII digits (an optional leading '-'), within [low, high]."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text.startswith("-") else text
        number = int(text) if digits.isascii() and digits.isdigit() and len(digits) <= MAX_DIGITS else None
    else:
        number = None
    span = f"at least {low}" if high >= MAX_NUMBER else f"between {low} and {high}"
    if number is None:
        raise BadValue(f"{what} must be a whole number, {span}, not {_show(value)}")
    if not low <= number <= high:
        raise BadValue(f"{what} must be {span}, not {number}")
    return number


ON_WORDS = ("on", "yes", "true", "1")
OFF_WORDS = ("off", "no", "false", "0")


def switch(value, what: str) -> bool:
    """On or off: a JSON bool, or the CLI's word for one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ON_WORDS + OFF_WORDS:
        return value.strip().lower() in ON_WORDS
    raise BadValue(f"{what} must be on or off (true or false), not {_show(value)}")


def row_id(value, what: str) -> int:
    """The id of a stored row (a schedule, a blocklist), as a path or the CLI gives it."""
    return whole_number(value, f"a {what} id", 1, MAX_NUMBER)


def depth(document) -> int:
    """How deeply lists and objects nest (iteratively: no recursion to exhaust)."""
    deepest, stack = 0, [(document, 1)]
    while stack:
        item, level = stack.pop()
        children: Iterable
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def parse_json(raw, what: str = "request body", max_depth: int = MAX_DEPTH):
    """The JSON document in `raw` (bytes or text), or BadValue saying why not."""
    try:
        document = json.loads(raw)
    except RecursionError:
        raise TooDeep(f"{what} nests deeper than {max_depth} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadValue(f"{what} is not valid JSON: {exc}") from None
    if depth(document) > max_depth:
        raise TooDeep(f"{what} nests deeper than {max_depth} levels")
    return document


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
