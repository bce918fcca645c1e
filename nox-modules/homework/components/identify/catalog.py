"""The fingerprint catalog (fingerprints.json): rules that read a device's evidence, each
with what it guesses, how much one such clue weighs, why (for the panel) and its source.

Loaded and checked once at start; a bad rule stops the controller with the rule's id, as
a bad config key does (the file ships with the code, so a test catches it first).

The rules come indexed (`Rules`): a rule whose one pattern is a literal (most request
lists are) is found by a dictionary lookup of the device's value, and the others are
tried only when the device said every field they read, so a classification tries a
handful of patterns rather than every rule's.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

CATALOG = Path(__file__).with_name("fingerprints.json")
TYPES = ("phone", "laptop", "tablet", "TV", "console", "speaker", "printer", "camera", "IoT")
GUESSES = ("type", "os", "os_version", "model", "label")
# Evidence fields a rule may read (fingerprint.py, mdns.py, ssdp.py, the component's own).
FIELDS = ("prl", "options", "vendor", "max_size", "client_id", "hostname",
          "v6_oro", "v6_duid", "v6_vendor", "v6_fqdn",
          "oui", "names", "mdns_name", "mdns_services", "mdns_model", "mdns_maker", "ssdp_server")


class CatalogError(ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    id: str
    match: tuple[tuple[str, re.Pattern], ...]
    guess: dict[str, str]           # some of GUESSES, may name the match's groups: "{version}"
    weight: float
    why: str                        # a phrase; may name evidence fields and groups
    source: str
    example: dict[str, str]

    def groups(self, evidence: dict[str, str]) -> dict[str, str] | None:
        """The match's named groups (and the fields it read) when every field matches, else None."""
        found: dict[str, str] = {}
        for field, pattern in self.match:
            value = evidence.get(field)
            if value is None:
                return None
            m = pattern.fullmatch(value)
            if m is None:
                return None
            found[field] = value
            found.update({k: v for k, v in m.groupdict().items() if v})
        return found


class Rules(list):
    """The catalog's rules in their order, with the index `candidates` reads."""

    def __init__(self, rules):
        super().__init__(rules)
        # field -> {the literal, lower case -> positions}: single-field rules whose pattern is one string
        self._literal: dict[str, dict[str, list[int]]] = {}
        # (fields every one of them reads, positions): the other rules
        by_fields: dict[frozenset[str], list[int]] = {}
        for at, rule in enumerate(self):
            literal = _literal(rule)
            if literal is not None:
                self._literal.setdefault(rule.match[0][0], {}).setdefault(literal, []).append(at)
            else:
                by_fields.setdefault(frozenset(f for f, _ in rule.match), []).append(at)
        self._by_fields = list(by_fields.items())

    def candidates(self, evidence: dict[str, str]) -> list[Rule]:
        """The rules that may match `evidence`, in the catalog's order (every rule that
        matches is among them)."""
        picked: list[int] = []
        for field, table in self._literal.items():
            value = evidence.get(field)
            if value is not None:
                picked += table.get(value.lower(), ())
        present = evidence.keys()
        for fields, positions in self._by_fields:
            if fields <= present:
                picked += positions
        picked.sort()
        return [self[at] for at in picked]


def _literal(rule: Rule) -> str | None:
    """The one string a single-field rule's pattern matches (any case), or None."""
    if len(rule.match) != 1:
        return None
    pattern = rule.match[0][1].pattern
    if not pattern.isascii() or re.escape(pattern) != pattern:
        return None
    return pattern.lower()


def load(path: Path = CATALOG) -> tuple[Rules, dict[str, str]]:
    """(rules, sources) of the catalog; CatalogError naming the rule that is wrong."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sources = data["sources"]
    rules, seen = [], set()
    for raw in data["rules"]:
        rid = raw.get("id", "?")
        try:
            rules.append(_rule(raw, sources))
        except (KeyError, TypeError, ValueError, re.error) as exc:
            raise CatalogError(f"{path.name}: rule {rid}: {exc}") from None
        if rid in seen:
            raise CatalogError(f"{path.name}: rule {rid} twice")
        seen.add(rid)
    return Rules(rules), sources


def _rule(raw: dict, sources: dict) -> Rule:
    match = raw["match"]
    if not match or not isinstance(match, dict):
        raise ValueError("match: at least one field")
    for field in match:
        if field not in FIELDS:
            raise ValueError(f"match: unknown evidence field {field!r}")
    guess = {k: raw[k] for k in GUESSES if raw.get(k)}
    if not guess:
        raise ValueError("guesses nothing")
    if "type" in guess and guess["type"] not in TYPES:
        raise ValueError(f"type {guess['type']!r} is not one of {', '.join(TYPES)}")
    weight = float(raw["weight"])
    if not 0 < weight < 1:
        raise ValueError("weight: between 0 and 1 (a clue is never certainty)")
    if raw["source"] not in sources:
        raise ValueError(f"source {raw['source']!r} is not in sources")
    if not raw.get("why"):
        raise ValueError("why: the panel's phrase")
    compiled = tuple((f, re.compile(p, re.IGNORECASE)) for f, p in match.items())
    example = raw.get("example") or dict(match)
    return Rule(raw["id"], compiled, guess, weight, raw["why"], raw["source"], example)
