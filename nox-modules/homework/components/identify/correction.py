"""The household's correction of a guess: one check for the API, the CLI and a restored
backup row alike."""
from __future__ import annotations

from .catalog import TYPES

LABEL_MAX = 60


def check(type_: str = "", os: str = "", label: str = "") -> tuple[str, str, str]:
    """(type, os, label) as stored; ValueError with a sentence for the household. At least
    one of them: an empty correction is no correction (clear it instead)."""
    values = []
    for what, value in (("type", type_), ("os", os), ("label", label)):
        if not isinstance(value, str):
            raise ValueError(f"{what} must be text")
        value = " ".join(value.split())
        if len(value) > LABEL_MAX or any(ord(c) < 0x20 for c in value):
            raise ValueError(f"{what} must be at most {LABEL_MAX} printable characters")
        values.append(value)
    type_, os, label = values
    if type_ and type_ not in TYPES:
        raise ValueError(f"type must be one of {', '.join(TYPES)}, got {type_!r}")
    if not (type_ or os or label):
        raise ValueError("say what the device is: a type, an OS or a label")
    return type_, os, label
