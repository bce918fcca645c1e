"""The README stays a front door and the docs stay true to the code: docs/config.md is
generated from KEYS, every component and top-level folder has its place, links resolve,
and neither docs nor code speak of tickets."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from homework import config

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TICKET = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)     # "issue\n11" too, wrapped
TEXT_SUFFIXES = {".py", ".rs", ".sh", ".js", ".mjs", ".md", ".toml", ".conf", ".in", ".html", ".css",
                 ".service", ".hwdb", ".txt"}


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True).stdout
    return [ROOT / line for line in out.splitlines() if line and "node_modules" not in line]


def test_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; details belong in docs/"


def test_config_md_is_generated_from_keys():
    current = (ROOT / "docs/config.md").read_text()
    assert current == config.markdown() + "\n", (
        "docs/config.md is out of date: run "
        "`make docs`")


def test_config_md_lists_every_key():
    text = (ROOT / "docs/config.md").read_text()
    for key in config.KEYS:
        section, _, name = key.name.partition(".")
        assert f"## [{section}]" in text and f"| `{name}` |" in text, key.name


def test_every_component_has_a_page_and_a_row_in_the_readme():
    readme = README.read_text()
    for name in config.KNOWN_COMPONENTS:
        assert f"| `{name}` |" in readme, f"README's component table lacks {name}"
        pages = [p for p in (ROOT / "docs").glob("*.md") if f"components/{name}/" in p.read_text()]
        assert pages, f"no page in docs/ names nox-modules/homework/components/{name}/"


def test_every_top_level_folder_is_in_the_layout():
    readme = README.read_text()
    for entry in sorted(ROOT.iterdir()):
        if entry.is_dir() and not entry.name.startswith(".") and (ROOT / ".git").exists():
            tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", entry.name],
                                     capture_output=True, text=True).stdout.strip()
            if tracked:
                assert f"| `{entry.name}/` |" in readme, f"README's layout lacks {entry.name}/"


def test_paths_named_in_readme_and_docs_exist():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for ref in re.findall(r"`((?:docs|image|hwdb)/[A-Za-z0-9_./-]+\.md)`", page.read_text()):
            assert (ROOT / ref).exists(), f"{page.name} names {ref}, which does not exist"
        for ref in re.findall(r"\]\(([a-z0-9_-]+\.md)(?:#[a-z0-9-]+)?\)", page.read_text()):
            assert (ROOT / "docs" / ref).exists(), f"{page.name} links {ref}, which does not exist"


def test_anchors_into_config_and_performance_exist():
    headings = {}
    for name in ("config.md", "performance.md"):
        text = (ROOT / "docs" / name).read_text()
        headings[name] = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
                          for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    for page in sorted((ROOT / "docs").glob("*.md")):
        for target, anchor in re.findall(r"\]\((config\.md|performance\.md)#([a-z0-9-]+)\)", page.read_text()):
            assert anchor in headings[target], f"{page.name} links {target}#{anchor}, no such heading"


def test_no_tickets_in_docs_or_code():
    """Docs and code speak of the project, not of the tickets that built it."""
    found = []
    for path in tracked_files():
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        lines = text.split("\n")
        for hit in TICKET.finditer(text):          # the whole text: a wrapped line hides no number
            number = text.count("\n", 0, hit.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{number}: {lines[number - 1].strip()[:100]}")
    assert not found, "ticket numbers in docs or code:\n" + "\n".join(found[:40])


def test_docs_date_their_measurements_not_by_work_rounds():
    """A figure or a change is placed by its date and commit ("2026-11-27, `cba6ae5`"), not by
    the team's numbered rounds of work ("stop 44"), which a reader cannot look up."""
    found = []
    for path in [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "image" / "README.md"]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bstops? \d+\b", line, re.IGNORECASE):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "numbered work rounds in docs:\n" + "\n".join(found[:40])
