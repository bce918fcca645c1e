"""The changelog's additions, from the route declarations: `make openapi` names in
docs/api-changelog.md's **Unreleased** section every operation, live event and field added
since the release (surface.txt) that the section does not name yet, one line each under
"From the route declarations", with the operation's summary. The unit test that fails on
an unnamed addition (tests/unit/test_api_contract.py) then passes without a hand edit; a
line may be rewritten into prose later, as long as the prose names what it names.
"""
from __future__ import annotations

from pathlib import Path

from . import openapi

CHANGELOG = Path(__file__).resolve().parents[4] / "docs" / "api-changelog.md"
UNRELEASED = "## Unreleased\n"
SECTION = "### From the route declarations (`make openapi`)\n"


def line_for(surface_line: str, doc: dict, widened: bool) -> str:
    """One changelog line naming one addition the way unnamed_additions() reads names."""
    head, _, kind = surface_line.partition(": ")
    parts = head.split(" ")
    method, path = parts[1], parts[2]
    where = f"`{method} /ws.v1{path}`"
    if surface_line.startswith("op ") and " event " in surface_line:
        return f"- Added the live event `{parts[4]}` of {where}."
    if surface_line.startswith("op "):
        summary = doc["paths"][path][method.lower()].get("summary", "").rstrip(".")
        return f"- Added {where}: {summary}."
    side = "request" if parts[0] == "in" else "answer"
    name = parts[-1].rsplit(".", 1)[-1].replace("[]", "")
    verb = "Widened" if widened else "Added"
    return f"- {verb}: `{name}` in the {side} of {where} ({kind.strip()})."


def with_additions(text: str, released: list[str], current: list[str], doc: dict) -> str:
    """The changelog with a line for each addition its Unreleased section does not name."""
    missing = openapi.unnamed_additions(released, current, text)
    if not missing:
        return text
    if UNRELEASED not in text:
        raise ValueError(f"{CHANGELOG.name} has no '{UNRELEASED.strip()}' section")
    known = {openapi._key(line)[0] for line in released}
    lines = "".join(line_for(m, doc, openapi._key(m)[0] in known) + "\n" for m in missing)
    before, after = text.split(UNRELEASED, 1)
    if SECTION in after:
        above, rest = after.split(SECTION, 1)
        listed, sep, below = rest.partition("\n\n")        # the section's lines end at a blank line
        return before + UNRELEASED + above + SECTION + listed.rstrip("\n") + "\n" + lines + ("\n" if sep else "") \
            + below
    return before + UNRELEASED + "\n" + SECTION + "\n" + lines + after
