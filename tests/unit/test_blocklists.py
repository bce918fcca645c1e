"""Blocklist subscriptions: parsing the formats people use, fetching with its
errors, the names file and its lookups, and the component on a fake dnsd link: what it
tells dnsd, the policy twin's verdicts, failures that change nothing, restarts."""
import random
import socket
import subprocess
import sys
import time

import pytest

from homework.commands import CommandError
from homework.components.blocklists.compile import compile_file
from homework.components.blocklists.parse import ListError
from homework.components.blocklists.store import SortedNames
from homework.httpout import HttpOutError, download
from homework.netguard import Guard
from conftest import make_core
from test_dhcp_server import join
from test_dns_component import FakeLink

A = "02:00:00:00:00:0a"
B = "02:00:00:00:00:0b"

HOSTS = """# a hosts file
127.0.0.1 localhost
0.0.0.0 ads.example.com
0.0.0.0 tracker.test  metrics.tracker.test # two on a line
::1 ip6-localhost
10.1.1.1 not-a-sink.test
"""
ABP = """[Adblock Plus 2.0]
! Title: test list
||ads.test^
||Banners.Test^$important
@@||ok.ads.test^
@@||unrelated.test^
example.org##.banner
/ads/*.js
||video.test^$third-party
"""


def compiled(tmp_path, text, max_names=1000):
    """(counts, the names file) of a list's text, compiled as the controller does."""
    raw, out = tmp_path / "list.raw", tmp_path / "list.names"
    raw.write_bytes(text.encode() if isinstance(text, str) else text)
    return compile_file(raw, out, max_names), out


def test_hosts_files_are_read_and_odd_lines_counted(tmp_path):
    result, out = compiled(tmp_path, HOSTS)
    assert out.read_text().split() == ["ads.example.com", "metrics.tracker.test", "tracker.test"]
    assert (result.rules, result.skipped) == (3, 1)    # 10.1.1.1 is not a sink address: not a blocklist line


def test_abp_lists_keep_domain_rules_and_exceptions_and_skip_the_rest(tmp_path):
    result, out = compiled(tmp_path, ABP)
    # an exception to nothing is dropped
    assert out.read_text().split() == ["@@ok.ads.test", "ads.test", "banners.test"]
    assert (result.rules, result.exceptions, result.skipped) == (2, 1, 3)


@pytest.mark.parametrize("text", ["", "<html><body>Not Found</body></html>\n", "hello world\nfoo bar baz\n",
                                  "\x00\x01binary\x00"])
def test_garbage_is_not_a_blocklist(tmp_path, text):
    with pytest.raises(ListError):
        compiled(tmp_path, text)
    assert not list(tmp_path.glob("list.names*"))          # nothing left behind


def test_a_list_over_the_cap_is_refused_with_its_size(tmp_path):
    many = "".join(f"0.0.0.0 n{i}.test\n" for i in range(1500))
    with pytest.raises(ListError, match="1,500 names, more than the 1,000"):
        compiled(tmp_path, many * 1)
    with pytest.raises(ListError, match="more than 1,000 names"):      # stops reading well before the end
        compiled(tmp_path, "".join(f"||x{i}.test^\n" for i in range(50_000)))
    result, _ = compiled(tmp_path, many * 2, max_names=1500)           # duplicates count once
    assert result.rules == 1500


def test_the_names_file_answers_like_a_set(tmp_path):
    rng = random.Random(7)
    names = {f"h{rng.randrange(10**6)}.{rng.choice(['a', 'bb', 'ccc'])}.test" for _ in range(5000)}
    result, out = compiled(tmp_path, "\n".join(names) + "\n@@||ok.h1.a.test^\n||h1.a.test^\n", max_names=10_000)
    names.add("h1.a.test")
    s = SortedNames(out)
    assert len(s) == len(names) == result.rules
    for name in list(names)[:500]:
        assert name in s and s.covers("www." + name)
    for _ in range(500):
        probe = f"h{rng.randrange(10**6)}.x.test"
        assert (probe in s) == (probe in names)
    assert s.covers("h1.a.test") and not s.covers("ok.h1.a.test") and not s.covers("a.test")


@pytest.fixture
def server(tmp_path):
    """`python3 -m http.server` in its own process, serving tmp_path/www (404 for others)."""
    root = tmp_path / "www"
    root.mkdir()
    for name, body in (("hosts.txt", HOSTS.encode()), ("abp.txt", ABP.encode()), ("garbage.txt", b"<html>oops</html>"),
                       ("big.txt", b"0.0.0.0 big.test\n" * 2000)):
        (root / name).write_bytes(body)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory",
                             str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_fetch_errors_say_what_went_wrong_without_the_servers_words(server, tmp_path):
    guard = Guard()
    dest = tmp_path / "got"
    assert download(server + "/hosts.txt", dest, cap=1 << 20, seconds=10, guard=guard, allow_local=True) > 0
    assert "ads.example.com" in dest.read_text()
    with pytest.raises(HttpOutError, match="answered with an error"):
        download(server + "/missing.txt", dest, cap=1 << 20, seconds=10, guard=guard, allow_local=True)
    with pytest.raises(HttpOutError, match="more than"):
        download(server + "/big.txt", dest, cap=1024, seconds=10, guard=guard, allow_local=True)
    with pytest.raises(HttpOutError, match="local address"):            # 127.0.0.1, not allowed
        download(server + "/hosts.txt", dest, cap=1 << 20, seconds=10, guard=guard)


def make(tmp_path):
    core = make_core(tmp_path, components=("dhcp", "routing", "dns", "blocklists"), dns_control="",
                     dns_intercept=False)
    core.ctx.component("dns").link = FakeLink()
    return core, core.ctx.component("dns"), core.ctx.component("blocklists")


def call(core, name, **kw):
    return core.commands.call(name, **kw)


def test_a_list_is_stored_pushed_and_enforced_below_rules(tmp_path, server):
    core, dns, _ = make(tmp_path)
    with pytest.raises(CommandError, match="allow local addresses"):      # the server is on loopback
        call(core, "blocklist-add", url=server + "/hosts.txt")
    view = call(core, "blocklist-add", url=server + "/hosts.txt", allow_local=True)
    assert (view["id"], view["rules"], view["owner"], view["error"]) == (1, 3, "household", "")
    path = tmp_path / "blocklists" / "1.list"
    assert f"list 1 * {path}" in dns.link.take()
    assert dns.policy.verdict(A, "x.ads.example.com") == "blocked"
    assert dns.policy.verdict(A, "example.com") == "allowed"
    assert dns.policy.restricted(A)
    call(core, "household-permit-dns", domain="x.ads.example.com")         # an allow rule un-blocks
    assert dns.policy.verdict(A, "x.ads.example.com") == "allowed"
    assert dns.policy.verdict(A, "y.ads.example.com") == "blocked"
    with pytest.raises(CommandError, match="already subscribed"):
        call(core, "blocklist-add", url=server + "/hosts.txt", allow_local=True)
    # the snapshot (dnsd restarted) carries the lists and safe-search
    assert f"list 1 * {path}" in dns._snapshot() and "safesearch off" in dns._snapshot()


def test_bad_lists_are_refused_and_nothing_changes(tmp_path, server):
    core, dns, _ = make(tmp_path)
    for url, why in ((server + "/missing.txt", "answered with an error"), (server + "/garbage.txt", "not a blocklist"),
                     ("gopher://x.test/", "http")):
        with pytest.raises(CommandError, match=why) as err:
            call(core, "blocklist-add", url=url, allow_local=True)
        assert err.value.status == 400
    assert call(core, "blocklists")["blocklists"] == []
    assert not [p for p in (tmp_path / "blocklists").glob("*")] if (tmp_path / "blocklists").exists() else True
    assert not [line for line in dns.link.take() if line.startswith("list")]


def test_a_failed_refresh_keeps_the_old_names_and_shows_the_error(tmp_path, server):
    core, dns, _ = make(tmp_path)
    call(core, "blocklist-add", url=server + "/abp.txt", allow_local=True)
    (tmp_path / "www" / "abp.txt").write_bytes(b"<html>gone</html>")
    with pytest.raises(CommandError, match="previous names stay"):
        call(core, "blocklist-refresh", id="1")
    row = call(core, "blocklists")["blocklists"][0]
    assert "not a blocklist" in row["error"] and row["rules"] == 2
    assert dns.policy.verdict(A, "ads.test") == "blocked"
    (tmp_path / "www" / "abp.txt").write_bytes(b"||new.test^\n")
    assert call(core, "blocklist-refresh", id="1")["rules"] == 1
    assert dns.policy.verdict(A, "ads.test") == "allowed" and dns.policy.verdict(A, "new.test") == "blocked"
    with pytest.raises(CommandError, match="no blocklist") as err:
        call(core, "blocklist-refresh", id="9")
    assert err.value.status == 404


def test_owner_lists_follow_the_owners_devices(tmp_path, server):
    core, dns, _ = make(tmp_path)
    path = tmp_path / "blocklists" / "1.list"
    call(core, "blocklist-add", url=server + "/hosts.txt", owner="Kids", allow_local=True)
    assert f"list 1 - {path}" in dns.link.take()                 # nobody's yet
    join(core, A, port=1)
    join(core, B, port=2)
    core.devices.set_meta(A, owner="Kids")
    assert f"list 1 {A} {path}" in dns.link.take()
    assert dns.policy.verdict(A, "ads.example.com") == "blocked"
    assert dns.policy.verdict(B, "ads.example.com") == "allowed"
    assert call(core, "blocklists")["blocklists"][0]["devices"] == [A]


def test_lists_and_safe_search_survive_a_restart_without_fetching(tmp_path, server):
    core, dns, _ = make(tmp_path)
    call(core, "blocklist-add", url=server + "/hosts.txt", allow_local=True)
    assert call(core, "safe-search", enabled=True) == {"enabled": True}
    (tmp_path / "www" / "hosts.txt").unlink()                 # the list is gone from the internet
    core2, dns2, _ = make(tmp_path)
    assert dns2.policy.verdict(A, "ads.example.com") == "blocked"
    assert "safesearch on" in dns2._snapshot()
    assert call(core2, "blocklists")["blocklists"][0]["rules"] == 3
    call(core2, "blocklist-remove", id="1")
    assert "unlist 1" in dns2.link.take()
    assert dns2.policy.verdict(A, "ads.example.com") == "allowed"
    assert not (tmp_path / "blocklists" / "1.list").exists()
    with pytest.raises(CommandError, match="true or false"):
        call(core2, "safe-search", enabled="maybe")


def test_the_household_total_is_capped_and_a_refresh_counts_itself_once(tmp_path, server):
    core = make_core(tmp_path, components=("dhcp", "routing", "dns", "blocklists"), dns_control="",
                     dns_intercept=False, blocklists_max_names=1000, blocklists_max_names_total=1000)
    core.ctx.component("dns").link = FakeLink()
    (tmp_path / "www" / "half.txt").write_text("".join(f"0.0.0.0 a{i}.test\n" for i in range(600)))
    (tmp_path / "www" / "more.txt").write_text("".join(f"0.0.0.0 b{i}.test\n" for i in range(600)))
    assert call(core, "blocklist-add", url=server + "/half.txt", allow_local=True)["rules"] == 600
    with pytest.raises(CommandError, match="1,200, more than the 1,000 the router keeps in all"):
        call(core, "blocklist-add", url=server + "/more.txt", allow_local=True)
    assert len(call(core, "blocklists")["blocklists"]) == 1
    assert call(core, "blocklist-refresh", id="1")["rules"] == 600        # its own old names do not count
    assert not [p for p in (tmp_path / "blocklists").glob("new-*")]       # nothing staged is left
