"""The generated parts of docs/: `make docs` writes them, and unit tests fail while any is
stale. docs/config.md whole (config.markdown(), from KEYS), and in docs/architecture.md the
Events table (events.markdown()) and the Manifests table (manifest.markdown()), each
between its `<!-- NAME:begin -->` and `<!-- NAME:end -->` marks."""
from __future__ import annotations

import sys
from pathlib import Path

from . import config, events, manifest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def splice(text: str, name: str, table: str) -> str:
    begin, end = f"<!-- {name}:begin -->\n", f"\n<!-- {name}:end -->"
    head, rest = text.split(begin, 1)
    return head + begin + table + end + rest.split(end, 1)[1]


def main() -> int:
    (DOCS / "config.md").write_text(config.markdown() + "\n")     # as `--markdown > docs/config.md` writes it
    arch = DOCS / "architecture.md"
    text = splice(arch.read_text(), "events", events.markdown())
    arch.write_text(splice(text, "manifests", manifest.markdown()))
    print(f"wrote {DOCS / 'config.md'} and {arch}'s events and manifests tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
