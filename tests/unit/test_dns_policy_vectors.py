"""The controller's DNS decision against the vectors dnsd's `cargo test` also reads
(tests/vectors/dns_policy.json): the two implementations must agree on every case."""
import json
from pathlib import Path

import pytest

from homework.components.dns.policy import HOUSEHOLD, Policy
from homework.components.dns.reverse import ReverseCheck
from homework.state import StateStore

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "dns_policy.json").read_text())
ADDR = "192.0.2.10"


def mac_of(device: str) -> str:
    return HOUSEHOLD if device == "*" else f"02:00:00:00:00:{ord(device):02x}"


def checks():
    for case in VECTORS["cases"]:
        for n, check in enumerate(case["checks"]):
            yield pytest.param(case, check, id=f"{case['name'][:40]}-{n}")


def test_the_vectors_cover_every_kind_of_case():
    checks_ = [c for case in VECTORS["cases"] for c in case["checks"]]
    assert {c["verdict"] for c in checks_} == {"allowed", "blocked", "bypass"}
    assert any("cnames" in c for c in checks_) and any("sent" in c for c in checks_)
    assert any(case.get("allowlist") for case in VECTORS["cases"])


@pytest.mark.parametrize("case,check", checks())
def test_controller_policy_matches_the_vector(tmp_path, case, check):
    state = StateStore(tmp_path / "s.db")
    policy = Policy(state, lambda: 1000.0)
    for owner, domain, action in case.get("rules", []):
        policy.set_rules(mac_of(owner), [domain], action)
    for device in case.get("allowlist", []):
        policy.set_mode(mac_of(device), "allowlist")
    mac = mac_of(check["device"])
    verdict = policy.verdict(mac, check["query"])
    if check.get("cnames") and verdict == "allowed":
        # The controller's side of a CNAME chain is the reverse check: an address learned
        # through the chain gets a drop flow for this device when a name in it is blocked.
        reverse = ReverseCheck(state, lambda: 1000.0)
        reverse.learn(check["query"], [ADDR], 60, tuple(check["cnames"]))
        verdict = "blocked" if ADDR in reverse.wanted(mac, policy) else "allowed"
    assert verdict == check["verdict"], check
