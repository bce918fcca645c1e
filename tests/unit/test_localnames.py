"""Local names: DNS labels from free-text names, conflicts settled in one fixed
order, the hosts file dnsmasq reads, and the component keeping it in step with devices."""
import pytest

from conftest import make_core
from homework.components.localnames.hostsfile import FILE_NAME, domains_of, render, write_atomically
from homework.components.localnames.labels import GIVEN, HOSTNAME, Candidate, assign, candidate, dns_label
from homework.flows import Datapath
from test_dhcp_server import join

A, B, C = "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"


@pytest.mark.parametrize("text, label", [
    ("TV", "tv"), ("Tom's Laptop", "toms-laptop"), ("Zoë’s iPad", "zoes-ipad"),
    ("  living room  TV ", "living-room-tv"),
    ("---nas---", "nas"), ("printer_2.lan", "printer-2-lan"), ("a" * 80, "a" * 63),
    ("x" * 62 + "-y", "x" * 62), ("😀", None), ("", None), ("---", None), ("日本", None),
    ("localhost", None), ("WPAD", None), ("isatap", None), (None, None),
])
def test_dns_label(text, label):
    assert dns_label(text) == label


def test_a_given_name_beats_a_hostname_and_hostnames_without_labels_give_nothing():
    assert candidate(A, "Kitchen TV", "android-123", 5) == Candidate(A, "kitchen-tv", GIVEN, 5)
    assert candidate(A, "", "Android-123", 5) == Candidate(A, "android-123", HOSTNAME, 5)
    assert candidate(A, "😀", "tv", 5) == Candidate(A, "tv", HOSTNAME, 5)
    assert candidate(A, "", "", 5) is None


def test_conflicts_first_seen_keeps_the_name_then_the_mac_decides():
    later, first = Candidate(A, "tv", GIVEN, 20), Candidate(C, "tv", GIVEN, 10)
    same_time = Candidate(B, "tv", GIVEN, 20)
    got = assign([later, first, same_time])
    assert got == {C: "tv", A: "tv-2", B: "tv-3"}
    assert assign([same_time, first, later]) == got          # the order of the input does not matter


def test_a_given_name_beats_an_older_hostname_and_suffixes_never_take_anothers_own_label():
    hostname_tv = Candidate(A, "tv", HOSTNAME, 1)
    named_tv = Candidate(B, "tv", GIVEN, 99)
    named_tv2 = Candidate(C, "tv-2", GIVEN, 50)
    assert assign([hostname_tv, named_tv, named_tv2]) == {B: "tv", C: "tv-2", A: "tv-3"}


def test_a_suffix_keeps_the_label_within_63_characters():
    long = "a" * 63
    got = assign([Candidate(A, long, GIVEN, 1), Candidate(B, long, GIVEN, 2)])
    assert got[A] == long and got[B] == "a" * 61 + "-2" and len(got[B]) == 63


def test_hosts_file_puts_home_arpa_first_for_ptr_and_is_sorted():
    domains = domains_of("lan, home.arpa.,lan")
    assert domains == ["home.arpa", "lan"]
    text = render({"10.2.0.6": "tv", "10.2.0.2": "nas"}, domains)
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert lines == ["10.2.0.2 nas.home.arpa nas.lan nas", "10.2.0.6 tv.home.arpa tv.lan tv"]
    assert render({}, domains_of("")).startswith("#") and domains_of("") == []


def test_hosts_file_written_atomically_once(tmp_path):
    d = tmp_path / "hosts.d"
    assert write_atomically(d, "10.2.0.2 a\n") is True
    assert (d / FILE_NAME).read_text() == "10.2.0.2 a\n"
    assert (d / FILE_NAME).stat().st_mode & 0o777 == 0o644
    assert write_atomically(d, "10.2.0.2 a\n") is False      # unchanged: not touched
    assert sorted(p.name for p in d.iterdir()) == [FILE_NAME]  # no temp file left behind


# -- the component, over a real core (DHCP leases, device registry) --------------------------------
@pytest.fixture
def core(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "localnames"), clock=clock,
                     localnames_hosts_dir=tmp_path / "hosts.d")
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2, "d3": 3}))
    return core


def hosts(core) -> list[str]:
    """The hosts file once the component's next pass has run (events only mark it stale)."""
    core.ctx.component("localnames").tick()
    path = core.config.localnames_hosts_dir / FILE_NAME
    return [ln for ln in path.read_text().splitlines() if not ln.startswith("#")] if path.exists() else []


def test_only_permitted_devices_are_named_and_changes_follow(core, clock):
    join(core, A, 1, hostname=b"nas")                 # 10.2.0.2
    clock.advance(1)
    join(core, B, 2, hostname=b"Living-Room-TV")      # 10.2.0.6
    assert hosts(core) == []                          # pending: a hostname cannot squat a name
    core.commands.call("permit", mac=A)
    core.commands.call("permit", mac=B)
    assert hosts(core) == ["10.2.0.6 living-room-tv.home.arpa living-room-tv.lan living-room-tv",
                           "10.2.0.2 nas.home.arpa nas.lan nas"]     # by label
    core.commands.call("set-meta", mac=B, name="TV")                       # a name change
    assert "10.2.0.6 tv.home.arpa tv.lan tv" in hosts(core)
    core.commands.call("set-meta", mac=A, name="TV")                       # same label, seen first: keeps it
    assert hosts(core) == ["10.2.0.2 tv.home.arpa tv.lan tv", "10.2.0.6 tv-2.home.arpa tv-2.lan tv-2"]
    view = core.commands.call("status", mac=B)
    assert view["dns_name"] == "tv-2.home.arpa"
    assert core.commands.call("local-names") == [
        {"label": "tv", "name": "tv.home.arpa", "mac": A, "ip": "10.2.0.2"},
        {"label": "tv-2", "name": "tv-2.home.arpa", "mac": B, "ip": "10.2.0.6"}]
    core.commands.call("deny", mac=A)                                      # denied: no name; B gets tv
    assert hosts(core) == ["10.2.0.6 tv.home.arpa tv.lan tv"]
    core.commands.call("forget", mac=B)
    assert hosts(core) == [] and core.commands.call("local-names") == []


def test_events_only_mark_names_stale_until_the_next_pass(core):
    join(core, A, 1, hostname=b"nas")
    core.commands.call("permit", mac=A)
    path = core.config.localnames_hosts_dir / FILE_NAME
    assert "nas" not in path.read_text()
    core.ctx.component("localnames").tick()
    assert "10.2.0.2 nas.home.arpa" in path.read_text()


def test_names_are_written_again_at_start(tmp_path, clock):
    hosts_dir = tmp_path / "hosts.d"
    first = make_core(tmp_path, components=("dhcp", "routing", "localnames"), clock=clock,
                      localnames_hosts_dir=hosts_dir)
    first.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1}))
    join(first, A, 1, hostname=b"printer")
    first.commands.call("permit", mac=A)
    first.stop()
    (hosts_dir / FILE_NAME).unlink()
    second = make_core(tmp_path, components=("localnames", "dhcp", "routing"), clock=clock,
                       localnames_hosts_dir=hosts_dir)     # even listed before dhcp: the first pass
    assert hosts(second) == ["10.2.0.2 printer.home.arpa printer.lan printer"]


def test_a_renewal_that_changes_nothing_named_costs_no_pass(core, clock):
    join(core, A, 1, hostname=b"nas")
    join(core, B, 2, hostname=b"tv")
    core.commands.call("permit", mac=A)
    assert hosts(core) == ["10.2.0.2 nas.home.arpa nas.lan nas"]
    names = core.ctx.component("localnames")
    for mac, port in ((A, 1), (B, 2)):      # a named device renews as it was; a pending one renews
        join(core, mac, port, hostname=b"nas" if mac == A else b"tv")
        assert names._stale is False
    join(core, A, 1, hostname=b"fileserver")          # a new hostname is a change
    assert names._stale is True
    assert hosts(core) == ["10.2.0.2 fileserver.home.arpa fileserver.lan fileserver"]


def test_a_crowd_of_pending_devices_costs_no_pass(core, clock):
    """New pending devices (seen, leased, renamed before anyone let them in) change no name;
    permitting one does, and so does denying a named one."""
    names = core.ctx.component("localnames")
    names.tick()
    for i, mac in enumerate((A, B)):
        join(core, mac, i + 1, hostname=b"guest")
        core.commands.call("set-meta", mac=mac, name="Guest phone")
        assert names._stale is False
    core.commands.call("permit", mac=A)
    assert names._stale is True
    assert hosts(core) == ["10.2.0.2 guest-phone.home.arpa guest-phone.lan guest-phone"]
    core.commands.call("deny", mac=A)
    assert names._stale is True
    assert hosts(core) == []
