"""The captive set writer never loses a change: a batch writes the addresses it changed,
and a failed batch is counted and retried as a rewrite of the whole set."""
import subprocess
import time

import pytest

from homework.components.dns import netfilter


class FlakyNft:
    """Stands in for `nft -f -`: fails the first `failures` calls, records the rest."""

    def __init__(self, failures):
        self.failures = failures
        self.applied = []

    def __call__(self, cmd, input="", **kw):
        if self.failures > 0:
            self.failures -= 1
            return subprocess.CompletedProcess(cmd, 1, "", "Error: Could not process rule")
        self.applied.append(input)
        return subprocess.CompletedProcess(cmd, 0, "", "")


def wait_for(pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return False


def test_script_is_the_whole_wanted_set():
    net = netfilter.DnsNet("br0", "169.254.53.53:5300")
    net._wanted = {"10.2.0.6", "10.2.0.2"}
    assert net.script() == ("flush set inet homework_dns captive4\n"
                            "add element inet homework_dns captive4 { 10.2.0.2, 10.2.0.6 }\n")
    net._wanted = set()
    assert net.script() == "flush set inet homework_dns captive4\n"


def test_failed_batches_are_retried_until_the_set_is_right(monkeypatch):
    nft = FlakyNft(failures=3)
    monkeypatch.setattr(netfilter.subprocess, "run", nft)
    monkeypatch.setattr(netfilter, "_library", lambda: None)       # the nft command's path
    monkeypatch.setattr(netfilter.DnsNet, "RETRY_SECONDS", 0.05)
    net = netfilter.DnsNet("br0", "169.254.53.53:5300")
    for i in range(730):
        net.captive(f"10.2.{i // 64}.{(i % 64) * 4 + 2}", True)
    net.captive("10.2.0.2", False)
    assert wait_for(lambda: nft.applied and "10.2.0.6," in nft.applied[-1]
                    and net.counters.get("dns.nft_failures") >= 3)
    last = nft.applied[-1]
    assert last.count(",") + 1 == 729 and " 10.2.0.2," not in last and "{ 10.2.0.2," not in last
    assert net.counters.get("dns.nft_failures") == 3


def test_dns_over_tls_to_the_routers_own_addresses_goes_to_dnsd():
    rules = netfilter.ruleset("br0", "169.254.53.53", 5300, ("fd00:53::53", 5300),
                              dot=("169.254.53.53", 853), dot6=("fd00:53::53", 853))
    assert ('iifname "br0" meta nfproto ipv4 tcp dport 853 fib daddr type local dnat ip to 169.254.53.53:853'
            in rules)
    assert 'iifname "br0" meta nfproto ipv6 tcp dport 853 fib daddr type local dnat ip6 to [fd00:53::53]:853' in rules
    assert "853" not in netfilter.ruleset("br0", "169.254.53.53", 5300), "no DoT configured, no rule"
def test_a_batch_writes_only_its_addresses_removing_without_error_what_is_not_there(monkeypatch):
    nft = FlakyNft(failures=0)
    monkeypatch.setattr(netfilter.subprocess, "run", nft)
    monkeypatch.setattr(netfilter, "_library", lambda: None)       # the nft command's path
    net = netfilter.DnsNet("br0", "169.254.53.53:5300")
    net._wanted = {f"10.2.{i // 64}.{(i % 64) * 4 + 2}" for i in range(500)}
    net.captive("10.2.9.2", True)
    net.captive("10.2.0.2", False)
    net.flush()
    script = "".join(nft.applied)
    assert "flush" not in script and script.count("add element") == 2 and script.count("delete element") == 1
    assert "delete element inet homework_dns captive4 { 10.2.0.2 }" in script
    assert script.index("add element inet homework_dns captive4 { 10.2.0.2 }") < script.index("delete element")


def test_batches_go_through_libnftables_where_it_is_installed(monkeypatch):
    """In-process (no nft process per batch); a failure there is retried as the command's is."""
    class Library:
        def __init__(self):
            self.scripts, self.failures = [], 1

        def cmd(self, script):
            self.scripts.append(script)
            if self.failures:
                self.failures -= 1
                return 1, "", "Error: Could not process rule: No buffer space available"
            return 0, "", ""

    lib = Library()
    monkeypatch.setattr(netfilter, "_library", lambda: lib)
    monkeypatch.setattr(netfilter.subprocess, "run", lambda *a, **k: pytest.fail("no nft process"))
    monkeypatch.setattr(netfilter.DnsNet, "RETRY_SECONDS", 0.05)
    net = netfilter.DnsNet("br0", "169.254.53.53:5300")
    net.captive("10.2.0.2", True)
    assert wait_for(lambda: len(lib.scripts) >= 2)
    assert lib.scripts[0] == "add element inet homework_dns captive4 { 10.2.0.2 }\n"
    assert lib.scripts[1] == ("flush set inet homework_dns captive4\n"
                              "add element inet homework_dns captive4 { 10.2.0.2 }\n")     # the whole set again
    assert net.counters.get("dns.nft_failures") == 1


def test_captive6_is_a_plain_set_of_prefix_starts_matched_by_mask():
    """A device's /64 is its first address in captive6, and a source address is masked to
    its /64: a hash set, whose changes need no read of every member (an interval set did)."""
    rules = netfilter.ruleset("br0", "169.254.53.53", 5300, ("fd00:53::53", 5300))
    assert "set captive6 { type ipv6_addr; }" in rules
    assert ('iifname "br0" ip6 saddr & ffff:ffff:ffff:ffff:: @captive6 tcp dport 80 '
            'dnat ip6 to [fd00:53::53]:8088') in rules
    net = netfilter.DnsNet("br0", "169.254.53.53:5300", listen6="[fd00:53::53]:5300")
    net._wanted = {"2001:db8:100:5::"}
    assert net.script(["2001:db8:100:5::"]) == "add element inet homework_dns captive6 { 2001:db8:100:5:: }\n"
