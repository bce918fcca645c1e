"""A device's guess from its evidence: which catalog rules it matches, and what they add up to.

Each matching rule votes for the type, OS, model and label it guesses, with its weight.
The type (and the OS) with the most weight wins; its confidence is the chance that at
least one of the clues for it is right (1 - the product of 1 - weight), halved by the
weight of clues for another type. The label is that of the heaviest clue for the winning
type, with the OS and its version when the label does not say them ("iPhone (iOS 15 or
later)"). Plain Python, no I/O: a classification tries the rules the catalog's index
picks (catalog.Rules), a handful of patterns, microseconds; identify runs it on its timer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import Rule, Rules

SURE, LIKELY = 0.8, 0.5
# A type's own words, for a guess of a type that no clue names more closely.
TYPE_WORDS = {"phone": "phone", "laptop": "computer", "tablet": "tablet", "TV": "TV", "console": "game console",
              "speaker": "speaker", "printer": "printer", "camera": "camera", "IoT": "smart-home device"}


@dataclass
class Guess:
    type: str = ""
    os: str = ""
    os_version: str = ""
    model: str = ""
    label: str = ""
    confidence: float = 0.0
    why: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)

    @property
    def level(self) -> str:
        """"sure", "likely" or "maybe" (the board's wording of the confidence)."""
        if self.confidence >= SURE:
            return "sure"
        return "likely" if self.confidence >= LIKELY else "maybe"

    def as_dict(self) -> dict:
        return {"type": self.type, "os": self.os, "os_version": self.os_version, "model": self.model,
                "label": self.label, "confidence": round(self.confidence, 2), "level": self.level,
                "why": list(self.why), "rules": list(self.rules)}


def _fill(template: str, values: dict[str, str]) -> str | None:
    try:
        return template.format_map(values).strip()
    except (KeyError, ValueError, IndexError):
        return None


def _noisy_or(weights: list[float]) -> float:
    miss = 1.0
    for w in weights:
        miss *= 1.0 - w
    return 1.0 - miss


def classify(evidence: dict[str, str], rules: list[Rule]) -> Guess:
    """The guess of `evidence` by `rules` (the catalog's indexed Rules, or a plain list: every
    rule tried)."""
    hits: list[tuple[Rule, dict[str, str], dict[str, str]]] = []
    for rule in rules.candidates(evidence) if isinstance(rules, Rules) else rules:
        groups = rule.groups(evidence)
        if groups is None:
            continue
        values = {**evidence, **groups}
        guess = {k: v for k, t in rule.guess.items() if (v := _fill(t, values))}
        if guess:
            hits.append((rule, guess, values))
    if not hits:
        return Guess()
    hits.sort(key=lambda h: -h[0].weight)
    out = Guess()
    out.type, type_conf = _vote(hits, "type")
    out.os, os_conf = _vote(hits, "os")
    agree = [h for h in hits if not out.type or h[1].get("type") in (None, out.type)]
    agree_os = [h for h in agree if h[1].get("os") in (None, out.os)]
    out.os_version = next((h[1]["os_version"] for h in agree_os if h[1].get("os_version") and out.os), "")
    out.model = next((h[1]["model"] for h in agree if h[1].get("model")), "")
    label = next((h[1]["label"] for h in agree if h[1].get("label")), "") or TYPE_WORDS.get(out.type, "")
    if out.os and out.os.split()[0].lower() not in label.lower():
        os_text = f"{out.os} {out.os_version}".strip()
        label = f"{label} ({os_text})" if label else f"{os_text} device"
    elif out.os_version and label:
        label = f"{label} ({out.os} {out.os_version})"
    out.label = label
    # without a type or an OS, the label's own clue says how sure it is
    out.confidence = type_conf if out.type else os_conf if out.os else (hits[0][0].weight if label else 0.0)
    used = [h for h in agree_os if h[1].keys() & {"type", "os", "model", "label"}]
    out.why = _dedupe(w for h in used if (w := _fill(h[0].why, h[2])))
    out.rules = [h[0].id for h in used]
    return out


def _vote(hits, key: str) -> tuple[str, float]:
    weights: dict[str, list[float]] = {}
    for rule, guess, _ in hits:
        if guess.get(key):
            weights.setdefault(guess[key], []).append(rule.weight)
    if not weights:
        return "", 0.0
    best = max(weights, key=lambda v: (sum(weights[v]), max(weights[v])))
    against = [w for v, ws in weights.items() if v != best for w in ws]
    return best, _noisy_or(weights[best]) * (1.0 - _noisy_or(against) / 2)


def _dedupe(items) -> list[str]:
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out
