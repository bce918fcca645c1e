"""DNS policy model: domain validation, rule precedence, persistence (no switch, no dnsd)."""
import pytest

from homework.components.dns.names import normalize_domain
from homework.components.dns.policy import HOUSEHOLD, Policy
from homework.components.dns.reverse import ReverseCheck
from homework.state import StateStore

A = "02:00:00:00:00:0a"
B = "02:00:00:00:00:0b"


@pytest.mark.parametrize("text,want", [
    ("Example.COM", "example.com"), ("www.example.com.", "www.example.com"),
    ("*.kids.test", "kids.test"), (" test ", "test"), ("xn--bcher-kva.example", "xn--bcher-kva.example"),
    ("bücher.example", "xn--bcher-kva.example"), ("_dmarc.example.com", "_dmarc.example.com"),
])
def test_domains_are_normalized(text, want):
    assert normalize_domain(text) == want


@pytest.mark.parametrize("text", ["", ".", "a..b", "-a.com", "a-.com", "http://example.com/", "example.com/x",
                                  "exa mple.com", "a" * 64 + ".com", ("a" * 60 + ".") * 5, 42, None, "ex!ample.com",
                                  "example.com:80"])
def test_malformed_domains_are_refused_with_a_reason(text):
    with pytest.raises(ValueError) as exc:
        normalize_domain(text)
    assert str(exc.value)


def make_policy(tmp_path):
    return Policy(StateStore(tmp_path / "s.db"), lambda: 1000.0)


def test_rule_precedence(tmp_path):
    p = make_policy(tmp_path)
    p.set_rules(A, ["example.com"], "deny")
    p.set_rules(A, ["ok.example.com"], "allow")
    p.set_rules(HOUSEHOLD, ["ads.ok.example.com", "kids.test"], "deny")
    p.set_rules(B, ["kids.test"], "allow")
    assert p.verdict(A, "www.example.com") == "blocked"
    assert p.verdict(A, "example.com") == "blocked"
    assert p.verdict(A, "notexample.com") == "allowed"        # suffix match is per label
    assert p.verdict(A, "x.ok.example.com") == "allowed"      # more specific allow wins
    assert p.verdict(A, "ads.ok.example.com") == "blocked"    # more specific household deny wins
    assert p.verdict(B, "www.example.com") == "allowed"       # per-device independence
    assert p.verdict(A, "a.kids.test") == "blocked"
    assert p.verdict(B, "a.kids.test") == "allowed"           # device beats household at the same name
    assert p.verdict(B, "use-application-dns.net") == "bypass"
    assert p.restricted(B) and p.restricted("02:00:00:00:00:99")  # household rules restrict everyone


def test_allowlist_mode(tmp_path):
    p = make_policy(tmp_path)
    p.set_mode(A, "allowlist")
    p.set_rules(A, ["school.test"], "allow")
    assert p.verdict(A, "www.school.test") == "allowed"
    assert p.verdict(A, "example.com") == "blocked"
    assert p.verdict(B, "example.com") == "allowed"
    p.set_mode(A, "denylist")
    assert p.verdict(A, "example.com") == "allowed"
    with pytest.raises(ValueError):
        p.set_mode(A, "sometimes")


def test_rules_and_modes_survive_a_restart(tmp_path):
    p = make_policy(tmp_path)
    p.set_rules(A, ["example.com"], "deny")
    p.set_rules(A, ["example.com"], "allow")                  # replaces, never duplicates
    p.set_mode(B, "allowlist")
    p.set_rules(HOUSEHOLD, ["blocked.test"], "deny")
    assert p.remove_rule(HOUSEHOLD, "Blocked.Test.") is True
    assert p.remove_rule(HOUSEHOLD, "blocked.test") is False
    p.state.close()
    q = make_policy(tmp_path)
    assert q.rules == {A: {"example.com": "allow"}}
    assert q.modes == {B: "allowlist"}
    assert [r["domain"] for r in q.list_rules(A)] == ["example.com"]


def test_bulk_rules_are_one_transaction_and_all_or_nothing(tmp_path):
    p = make_policy(tmp_path)
    with pytest.raises(ValueError):
        p.set_rules(A, ["good.test", "bad..test"], "deny")
    assert p.list_rules() == [] and p.rules == {}
    p.set_rules(A, [f"site{i}.test" for i in range(2000)], "deny")
    assert len(p.list_rules(A)) == 2000


def test_reverse_check_blocks_only_addresses_whose_names_are_all_blocked(tmp_path):
    state = StateStore(tmp_path / "s.db")
    now = [1000.0]
    p = Policy(state, lambda: now[0])
    r = ReverseCheck(state, lambda: now[0])
    p.set_rules(A, ["blocked.test"], "deny")
    r.learn("blocked.test", ["203.0.113.66"], 60)
    r.learn("cdn.blocked.test", ["203.0.113.77"], 60)
    r.learn("shared.test", ["203.0.113.77"], 60)               # same address, allowed name
    assert r.wanted(A, p) == {"203.0.113.66"}
    assert r.wanted(B, p) == set()                             # B has no rules
    flows = r.sync(A, p)
    assert [f.match["ipv4_dst"] for f in flows] == ["203.0.113.66"]
    assert flows[0].priority == 40000 and flows[0].actions == ()
    p.remove_rule(A, "blocked.test")
    removed = r.sync(A, p)
    assert removed[0].strict and removed[0].match["ipv4_dst"] == "203.0.113.66"
    # an allowed alias of a blocked name does not save the address (the chain has a blocked name)
    r.learn("alias.test", ["203.0.113.66"], 60, ("blocked.test",))
    assert r.wanted(A, p) == set()      # rule removed above
    p.set_rules(A, ["blocked.test"], "deny")
    assert r.wanted(A, p) == {"203.0.113.66"}
    r.sync(A, p)
    # learned pairs persist, and expire (kept at least KEEP_SECONDS whatever the TTL)
    r2 = ReverseCheck(state, lambda: now[0])
    assert r2.addrs_of["blocked.test"] == {"203.0.113.66"} and r2.addrs_of["alias.test"] == {"203.0.113.66"}
    now[0] += 7 * 3600
    assert r2.expire() and not r2.addrs_of
