"""The fingerprint catalog (components/identify/fingerprints.json): every rule is checked
against its example, and the devices a household has get the type and label they should
from what they really send (the recorded fingerprints the catalog's sources give)."""
import json

import pytest

from homework import fingerprint
from homework.components.identify import catalog
from homework.components.identify.catalog import CatalogError, load
from homework.components.identify.classify import classify

RULES, SOURCES = load()
RAW = {r["id"]: r for r in json.loads(catalog.CATALOG.read_text())["rules"]}


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_matches_its_example_and_guesses_what_it_says(rule):
    guess = classify(rule.example, RULES)
    assert rule.id in guess.rules, f"{rule.id} does not match its own example {rule.example}"
    for key in ("type", "os"):
        if key in rule.guess:
            assert getattr(guess, key) == rule.guess[key], f"{rule.id}: {key}"
    assert guess.label and guess.why, rule.id
    assert 0 < guess.confidence < 1, "one clue is never certainty"
    assert rule.source in SOURCES


def test_every_source_is_cited_by_a_rule():
    assert {r.source for r in RULES} == set(SOURCES)


@pytest.mark.parametrize("bad, why", [
    ({"match": {"colour": "red"}}, "unknown evidence field"),
    ({"type": "toaster"}, "is not one of"),
    ({"weight": 1.0}, "between 0 and 1"),
    ({"source": "rumour"}, "is not in sources"),
    ({"match": {"prl": "1,3,("}}, "rule x"),
])
def test_a_bad_rule_is_refused_with_its_id(tmp_path, bad, why):
    rule = {"id": "x", "match": {"prl": "1,3"}, "type": "phone", "weight": 0.5, "why": "because",
            "source": "s", **bad}
    path = tmp_path / "fp.json"
    path.write_text(json.dumps({"sources": {"s": "a source"}, "rules": [rule]}))
    with pytest.raises(CatalogError, match=why):
        load(path)


def dhcp4(prl, vendor=b"", hostname=b"", client_id=b"\x01\x02\x00\x00\x00\x00\x01", max_size=b"\x05\xdc"):
    options = {61: client_id, 57: max_size}
    if hostname:
        options[12] = hostname
    if vendor:
        options[60] = vendor
    options[55] = bytes(prl)
    return fingerprint.dhcp4(options)


# What real devices send (the option 55 lists and vendor classes the catalog's sources
# recorded), and what the household should read.
HOUSEHOLD = [
    ("Windows 11", dhcp4([1, 3, 6, 15, 31, 33, 43, 44, 46, 47, 119, 121, 249, 252], b"MSFT 5.0", b"DESKTOP-4K2J7QF"),
     "laptop", "Windows PC (Windows 10 or 11)"),
    ("Android 14", dhcp4([1, 3, 6, 15, 26, 28, 51, 58, 59, 43, 114, 108], b"android-dhcp-14"),
     "phone", "Android phone (Android 14)"),
    ("iPhone", dhcp4([1, 121, 3, 6, 15, 108, 114, 119, 252], hostname=b"Toms-iPhone"),
     "phone", "iPhone (iOS 15 or later)"),
    ("macOS", dhcp4([1, 121, 3, 6, 15, 108, 114, 119, 252, 95, 44, 46], hostname=b"Annas-MacBook-Air"),
     "laptop", "Mac (macOS 12 or later)"),
    ("Linux laptop", dhcp4([1, 28, 2, 3, 15, 6, 119, 12, 44, 47, 26, 121, 42], hostname=b"thinkpad"),
     "laptop", "Linux computer"),
    ("Brother printer", dhcp4([6, 3, 1, 15, 66, 67, 13, 44, 2, 42, 12], hostname=b"BRW3C2AF4E1B7D9"),
     "printer", "Brother printer"),
    ("ESP8266", dhcp4([1, 3, 28, 6], hostname=b"ESP_3A4F1C", client_id=b""), "IoT", "ESP8266 smart-home device"),
    ("PlayStation 5", dhcp4([1, 3, 15, 6], hostname=b"PS5-7C2E9A"), "console", "PlayStation 5"),
    ("Google Home Mini", {"mdns_services": "_googlecast._tcp", "mdns_model": "Google Home Mini"},
     "speaker", "Google Home Mini speaker"),
]


@pytest.mark.parametrize("what, evidence, type_, label", HOUSEHOLD, ids=[h[0] for h in HOUSEHOLD])
def test_a_households_devices_get_their_type_and_label(what, evidence, type_, label):
    guess = classify(evidence, RULES)
    assert (guess.type, guess.label) == (type_, label)
    assert guess.level in ("likely", "sure")


def test_two_clues_that_agree_are_surer_than_one_and_a_disagreeing_one_lowers_it():
    prl = {"prl": "1,121,3,6,15,108,114,119,252"}
    alone = classify(prl, RULES).confidence
    assert classify({**prl, "hostname": "Toms-iPhone"}, RULES).confidence > alone
    assert classify({**prl, "hostname": "DESKTOP-4K2J7QF"}, RULES).confidence < alone


def test_evidence_that_matches_nothing_guesses_nothing():
    guess = classify({"prl": "9,9,9", "hostname": "dhcpcd3"}, RULES)
    assert (guess.type, guess.label, guess.confidence, guess.why) == ("", "", 0.0, [])


def test_the_panel_says_why_in_words():
    guess = classify({"prl": "1,121,3,6,15,108,114,119,252", "hostname": "Toms-iPhone"}, RULES)
    assert guess.why == ["calls itself “Toms-iPhone”", "asked for an address as iOS 15 and later do"]


def test_the_index_picks_every_rule_that_matches_and_guesses_as_trying_every_rule_does():
    plain = list(RULES)
    samples = [r.example for r in RULES]
    samples += [{**a, **b} for a, b in zip(samples, samples[7:] + samples[:7], strict=True)]   # mixed evidence
    samples += [{k: v.upper() for k, v in s.items()} for s in samples[:20]]                   # any case
    samples += [{"prl": "1,2,3"}, {"hostname": "dhcpcd3"}, {}]
    for evidence in samples:
        picked = RULES.candidates(evidence)
        assert {r.id for r in plain if r.groups(evidence) is not None} <= {r.id for r in picked}, evidence
        assert classify(evidence, RULES).as_dict() == classify(evidence, plain).as_dict(), evidence
    # a request list is a lookup, not a try of every rule
    assert len(RULES.candidates({"prl": "1,121,3,6,15,108,114,119,252"})) < 10
