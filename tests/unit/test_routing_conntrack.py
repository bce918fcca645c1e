"""Per-flow records of NATed connections from conntrack (routing/conntrack.py), and the
switch entries that go with them (flowsets.account_flows with the pool)."""
import dataclasses
import ipaddress
import os
import time

import pytest

from homework import pipeline as L
from homework.components.routing import flowsets as fs
from homework.components.routing.conntrack import ConntrackFlows, per_source_counts
from homework.conntrack import ConntrackReader, parse_entry
from homework.flows import Learn
from homework.leases import Lease

DEVICE = "10.2.0.6"
LIST_LINE = ("ipv4     2 tcp      6 119 TIME_WAIT src=10.2.0.6 dst=198.51.100.80 sport=47026 dport=443 "
             "packets=5 bytes=273 src=198.51.100.80 dst=192.0.2.2 sport=443 dport=47026 packets=3 bytes=164 "
             "[ASSURED] mark=0 use=1 id=4031490507")
EVENT_LINE = ("[DESTROY] ipv4     2 udp      17 src=10.2.0.6 dst=198.51.100.53 sport=5000 dport=9 packets=2 "
              "bytes=80 [UNREPLIED] src=198.51.100.53 dst=192.0.2.2 sport=9 dport=5000 packets=0 bytes=0 "
              "id=77 [USERSPACE] portid=3881200269")


def test_a_listed_entry_gives_both_directions_with_the_device_address():
    e = parse_entry(LIST_LINE)
    assert (e.id, e.proto, e.src, e.sport, e.dst, e.dport) == (4031490507, 6, DEVICE, 47026, "198.51.100.80", 443)
    assert (e.packets, e.bytes, e.reply_packets, e.reply_bytes) == (5, 273, 3, 164)


def test_an_event_line_parses_the_same_way():
    e = parse_entry(EVENT_LINE)
    assert (e.id, e.proto, e.dport, e.packets, e.reply_packets) == (77, 17, 9, 2, 0)


@pytest.mark.parametrize("line", [
    "", "conntrack v1.4.7 (conntrack-tools): 1 flow entries have been shown.",
    "ipv6     10 sctp     132 src=fd00::2 dst=fd00::3 packets=1 bytes=1 src=fd00::3 dst=fd00::2 "
    "packets=1 bytes=1 id=5",
    # no accounting: no counters
    "ipv4     2 tcp      6 119 TIME_WAIT src=10.2.0.6 dst=1.2.3.4 sport=1 dport=2 src=1.2.3.4 dst=9.9.9.9 "
    "sport=2 dport=1 [ASSURED] id=9",
    "ipv4     2 tcp      6 src=10.2.0.6 dst=1.2.3.4 sport=x dport=2 packets=1 bytes=1 src=1.2.3.4 dst=9.9.9.9 "
    "sport=2 dport=1 packets=1 bytes=1 id=9",
])
def test_what_is_not_a_flow_with_counters_is_skipped(line):
    assert parse_entry(line) is None


class Recorder:
    def __init__(self):
        self.rows = []
        self.per_host = set()
        self.flows = ConntrackFlows(lambda a: 1 if a == DEVICE else None, self.record, self.per_host.__contains__)

    def record(self, *row):
        self.rows.append(row)


def entry(line=LIST_LINE, **counters):
    return dataclasses.replace(parse_entry(line), **counters)


def test_the_first_dump_is_a_baseline_then_growth_is_reported_each_way():
    r = Recorder()
    r.flows.snapshot([entry()])
    assert r.rows == []
    r.flows.snapshot([entry(packets=8, bytes=500, reply_packets=7, reply_bytes=9164)])
    assert r.rows == [(1, 6, DEVICE, 47026, "198.51.100.80", 443, 3, 227),
                      (1, 6, "198.51.100.80", 443, DEVICE, 47026, 4, 9000)]
    r.rows.clear()
    r.flows.snapshot([entry(packets=8, bytes=500, reply_packets=7, reply_bytes=9164)])
    assert r.rows == []


def test_an_ending_reports_what_the_last_dump_did_not_and_forgets_the_entry():
    r = Recorder()
    r.flows.snapshot([])
    r.flows.snapshot([entry()])           # new since the baseline: all of it
    r.flows.ended(entry(packets=6, bytes=313, reply_packets=3, reply_bytes=164))
    assert [row[-2:] for row in r.rows] == [(5, 273), (3, 164), (1, 40)]
    r.rows.clear()
    r.flows.snapshot([])
    assert r.rows == []


def test_a_connection_that_begins_and_ends_between_dumps_is_reported_whole():
    r = Recorder()
    r.flows.snapshot([])
    r.flows.ended(parse_entry(EVENT_LINE))
    assert r.rows == [(1, 17, DEVICE, 5000, "198.51.100.53", 9, 2, 80)]


def test_a_dump_read_while_the_entry_ended_does_not_count_it_again():
    # the dump lists the connection at 900 bytes, but its DESTROY (1000 bytes) is handled
    # before the dump is: the connection counts 1000 bytes, once
    r = Recorder()
    r.flows.snapshot([])
    r.flows.ended(entry(packets=10, bytes=1000, reply_packets=0, reply_bytes=0))
    r.flows.snapshot([entry(packets=9, bytes=900, reply_packets=0, reply_bytes=0)])
    assert [row[-2:] for row in r.rows] == [(10, 1000)]
    r.rows.clear()
    r.flows.snapshot([entry(packets=9, bytes=900, reply_packets=0, reply_bytes=0)])   # a reuse later: new
    r.flows.snapshot([entry(packets=12, bytes=1200, reply_packets=0, reply_bytes=0)])
    assert [row[-2:] for row in r.rows] == [(9, 900), (3, 300)]


def test_after_a_restart_an_ending_of_an_unknown_entry_belongs_to_the_previous_process():
    r = Recorder()
    r.flows.ended(parse_entry(EVENT_LINE))
    assert r.rows == []


def test_a_reused_id_starts_from_zero():
    r = Recorder()
    r.flows.snapshot([entry(packets=100, bytes=10000)])
    r.flows.snapshot([entry(packets=2, bytes=120, reply_packets=0, reply_bytes=0)])
    assert r.rows == [(1, 6, DEVICE, 47026, "198.51.100.80", 443, 2, 120)]


def test_unknown_addresses_and_per_host_devices_get_no_rows():
    r = Recorder()
    r.flows.snapshot([])
    r.flows.snapshot([entry(src="10.9.9.9")])
    r.per_host.add(1)
    r.flows.snapshot([entry(), entry(src="10.9.9.9")])
    assert r.rows == []


def test_connections_are_counted_per_source():
    assert per_source_counts([entry(), entry(id=2), entry(src="10.2.0.10")]) == {DEVICE: 2, "10.2.0.10": 1}


# -- the switch side --------------------------------------------------------------------------
LEASE = Lease(mac="02:00:00:00:00:0a", index=1, network="10.2.0.4/30", router="10.2.0.5", ip=DEVICE,
              broadcast="10.2.0.7", expires=0, port=3)
POOL = ipaddress.IPv4Network("10.2.0.0/16")


def test_with_the_pool_only_flows_within_it_are_learned_and_the_rest_is_counted_per_host():
    flows = fs.account_flows(LEASE, 30, POOL)
    learning = [f for f in flows if any(isinstance(a, Learn) for a in f.actions)]
    per_host = [f for f in flows if not f.actions]
    assert learning and all(f.priority > L.PRIO_ACCOUNT_HOST for f in learning)
    pool = ("10.2.0.0", "255.255.0.0")
    assert all(f.match.get("ipv4_dst") == pool for f in learning if f.match["in_port"] == 3)
    assert all(f.match.get("ipv4_src") == pool for f in learning if f.match["in_port"] != 3)
    assert sorted((f.priority, f.match["in_port"]) for f in per_host) == [(L.PRIO_ACCOUNT_HOST, 3),
                                                                         (L.PRIO_ACCOUNT_HOST, 0xFFFFFFFE)]
    assert {f.cookie for f in flows} == {L.routing_cookie(L.KIND_ACCOUNT, 1)}


def test_without_the_pool_every_flow_is_learned_as_before():
    flows = fs.account_flows(LEASE, 30)
    assert all(any(isinstance(a, Learn) for a in f.actions) for f in flows)
    assert all("ipv4_dst" not in f.match or f.match["in_port"] != 3 for f in flows)


def test_an_icmp_entry_takes_the_entry_id_not_the_echo_id():
    line = ("ipv4     2 icmp     1 29 src=10.2.0.6 dst=198.51.100.1 type=8 code=0 id=1234 packets=3 bytes=252 "
            "src=198.51.100.1 dst=192.0.2.2 type=0 code=0 id=1234 packets=3 bytes=252 mark=0 use=1 id=555")
    e = parse_entry(line)
    assert (e.id, e.proto, e.sport, e.dport, e.packets, e.reply_bytes) == (555, 1, 0, 0, 3, 252)


def test_ipv6_entries_parse_and_flows_to_household_addresses_are_left_to_the_switch():
    line = ("[DESTROY] ipv6     10 tcp      6 src=2001:db8:200:1::aa dst=2001:db8:100::1 sport=40000 dport=80 "
            "packets=6 bytes=480 src=2001:db8:100::1 dst=2001:db8:200:1::aa sport=80 dport=40000 packets=4 bytes=900 "
            "[ASSURED] id=42")
    e = parse_entry(line)
    assert (e.src, e.dst, e.proto, e.reply_bytes) == ("2001:db8:200:1::aa", "2001:db8:100::1", 6, 900)
    rows = []
    site = ipaddress.IPv6Network("2001:db8:200::/48")
    flows = ConntrackFlows(lambda a: 3, lambda *row: rows.append(row),
                           inside=lambda a: ipaddress.ip_address(a) in site)
    flows.snapshot([])
    flows.ended(e)
    inward = dataclasses.replace(e, id=43, dst="2001:db8:200:2::1")
    flows.ended(inward)
    assert [r[2:5] for r in rows] == [("2001:db8:200:1::aa", 40000, "2001:db8:100::1"),
                                      ("2001:db8:100::1", 80, "2001:db8:200:1::aa")]


def test_ipv6_with_the_site_learns_only_flows_within_it():
    from homework.components.routing import flowsets6 as fs6
    site = ipaddress.IPv6Network("2001:db8:200::/48")
    flows = fs6.account_flows(LEASE, ipaddress.IPv6Network("2001:db8:200:1::/64"), 30, site)
    learning = [f for f in flows if f.actions]
    assert learning and all((f.match.get("ipv6_dst") or f.match.get("ipv6_src")) for f in learning)
    assert all(site.network_address.compressed == ipaddress.ip_address(
        (f.match["ipv6_dst"] if f.match["in_port"] == 3 else f.match["ipv6_src"])[0]).compressed for f in learning)
    assert sorted(f.priority for f in flows if not f.actions) == [L.PRIO_ACCOUNT_HOST] * 2


def _fake_conntrack(tmp_path, script: str) -> ConntrackReader:
    tool = tmp_path / "conntrack"
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(0o755)
    return ConntrackReader(str(tool))


def test_a_dump_asks_for_each_selection_and_reads_every_line(tmp_path):
    """The real `conntrack -L` output format, once per selection (NATed IPv4, all IPv6):
    `-o extended,id` for entries with counters, `-o extended` for both tuples."""
    calls = tmp_path / "calls"
    reader = _fake_conntrack(tmp_path, f'echo "$*" >> {calls}\necho "{LIST_LINE}"\necho "not a line"\n')
    entries = reader.dump()
    assert [e.id for e in entries] == [parse_entry(LIST_LINE).id] * 2
    translated = reader.dump_translated()
    assert len(translated) == 2 and translated[0].src == DEVICE
    assert calls.read_text().splitlines() == ["-L -f ipv4 --src-nat -o extended,id", "-L -f ipv6 -o extended,id",
                                              "-L -f ipv4 --src-nat -o extended", "-L -f ipv6 -o extended"]


def test_a_dump_that_cannot_run_is_logged_and_gives_nothing(tmp_path):
    reader = ConntrackReader(str(tmp_path / "gone"))     # removed under a running controller
    assert reader.dump() is None and reader.dump_translated() == []


def test_a_dump_with_a_failed_selection_is_no_dump_not_a_partial_one(tmp_path):
    # a partial list would read as the connections of the failed family gone, and their
    # next sighting as new ones, counted again from zero
    reader = _fake_conntrack(tmp_path, f'[ "$3" = ipv4 ] || exit 1\necho "{LIST_LINE}"\n')
    assert reader.dump() is None and reader.dump_translated() == []


def test_a_dump_parses_only_the_lines_that_changed_but_for_their_timeout(tmp_path, monkeypatch):
    """A busy router's dump is mostly entries that did not move since the last one (TIME_WAIT,
    idle): they take the last dump's entry; a line whose counters or state changed is parsed."""
    from homework import conntrack as ct
    listing = tmp_path / "listing"
    reader = _fake_conntrack(tmp_path, f'[ "$3" = ipv4 ] || exit 0\ncat {listing}\n')
    grown = LIST_LINE.replace("packets=3 bytes=164", "packets=4 bytes=216")
    other = LIST_LINE.replace("sport=47026", "sport=47028").replace("dport=47026", "dport=47028").replace(
        "id=4031490507", "id=4031490509")
    listing.write_text(f"{LIST_LINE}\n{other}\n")
    first = reader.dump()
    assert [e.id for e in first] == [4031490507, 4031490509]
    parsed = []
    monkeypatch.setattr(ct, "parse_entry", lambda line: parsed.append(line) or parse_entry(line))
    listing.write_text(f"{LIST_LINE.replace(' 119 ', ' 117 ')}\n{other.replace(' 119 ', ' 109 ')}\n")
    assert reader.dump() == first and parsed == []
    listing.write_text(f"{grown.replace(' 119 ', ' 108 ')}\n{other.replace(' 119 ', ' 107 ')}\n")
    again = reader.dump()
    assert len(parsed) == 1 and "packets=4 bytes=216" in parsed[0]
    assert (again[0].reply_packets, again[0].reply_bytes) == (4, 216) and again[1] == first[1]
    # what the last dump no longer listed is forgotten: listed again, it is parsed again
    listing.write_text(f"{grown}\n")
    reader.dump()
    listing.write_text(f"{grown}\n{other}\n")
    parsed.clear()
    assert [e.id for e in reader.dump()] == [4031490507, 4031490509] and parsed == [other]


def test_an_ending_read_after_a_dump_that_left_the_entry_out_reports_only_its_growth():
    # endings are read a pipeful at a time: the kernel dropped the entry, the next dump no
    # longer listed it, and only then is its ending read
    r = Recorder()
    r.flows.snapshot([])
    r.flows.snapshot([entry()])
    r.flows.snapshot([])
    r.flows.ended(entry())
    assert [row[-2:] for row in r.rows] == [(5, 273), (3, 164)]
    r.flows.snapshot([])
    r.flows.ended(entry(id=7, packets=6, bytes=313))         # the same late, with one last packet
    assert [row[-2:] for row in r.rows] == [(5, 273), (3, 164), (6, 313), (3, 164)]


def test_a_dump_looks_each_address_up_once():
    asked = []
    rows = []

    def index_of(address):
        asked.append(address)
        return 1 if address == DEVICE else None
    flows = ConntrackFlows(index_of, lambda *row: rows.append(row))
    flows.snapshot([])
    many = [entry(id=i, sport=40000 + i) for i in range(50)] + [entry(id=99, src="10.9.9.9")]
    flows.snapshot(many)
    assert len(rows) == 100 and sorted(asked) == sorted([DEVICE, "10.9.9.9"])
    # the next dump asks again (a lease may have changed in between), for what moved only
    asked.clear()
    flows.snapshot(many[:49] + [entry(id=49, sport=40049, packets=9)])
    assert asked == [DEVICE] and rows[-1][-2:] == (4, 0)


def _tool_writing(tmp_path, script: str) -> ConntrackReader:
    """A conntrack whose -E (the endings) runs `script` (its arguments go to events-calls)."""
    return _fake_conntrack(tmp_path, f'[ "$1" = -E ] || exit 0\necho "$*" >> {tmp_path}/events-calls\n{script}\n')


def _follow_until(reader, want):
    ended = []
    reader.follow(ended.append)
    deadline = time.monotonic() + 60
    while len(ended) < want and time.monotonic() < deadline:
        time.sleep(0.05)
    reader.stop()
    return ended


def test_endings_are_read_a_pipeful_at_a_time_not_one_wake_up_each(tmp_path, monkeypatch):
    from homework import conntrack as ct
    reads = []
    real_read = os.read
    monkeypatch.setattr(ct.os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    lines = tmp_path / "endings"
    lines.write_text("".join(EVENT_LINE.replace("id=77", f"id={i}") + "\n" for i in range(200)))
    reader = _tool_writing(tmp_path, f"cat {lines}; sleep 30")
    ended = _follow_until(reader, 200)
    assert sorted(e.id for e in ended) == list(range(200))
    assert len(reads) < 20


def test_an_ending_split_between_two_writes_is_read_whole(tmp_path):
    head, tail = EVENT_LINE[:90], EVENT_LINE[90:]
    reader = _tool_writing(tmp_path, f"printf '%s' '{head}'; sleep 0.5; printf '%s\\n' '{tail}'; sleep 30")
    [e] = _follow_until(reader, 1)
    assert e == parse_entry(EVENT_LINE)


def test_one_tool_reads_the_endings_of_both_families_and_keeps_what_a_dump_would(tmp_path):
    # the DNS interception's: destination NAT to the router, no source NAT (the reply goes
    # back to the device's own address): a dump's --src-nat leaves it out, and so do endings
    intercepted = ("[DESTROY] ipv4     2 udp      17 src=10.2.0.6 dst=192.0.2.53 sport=5353 dport=53 packets=1 "
                   "bytes=60 src=10.2.0.5 dst=10.2.0.6 sport=53 dport=5353 packets=1 bytes=90 id=78")
    v6 = ("[DESTROY] ipv6     10 tcp      6 src=2001:db8:200:1::aa dst=2001:db8:100::1 sport=40000 dport=80 "
          "packets=6 bytes=480 src=2001:db8:100::1 dst=2001:db8:200:1::aa sport=80 dport=40000 packets=4 bytes=900 "
          "[ASSURED] id=42")
    lines = tmp_path / "endings"
    lines.write_text(f"{intercepted}\n{EVENT_LINE}\n{v6}\n")
    reader = _tool_writing(tmp_path, f"cat {lines}; sleep 30")
    ended = _follow_until(reader, 2)
    assert sorted(e.id for e in ended) == [42, 77]
    assert [e.reply_dst for e in sorted(ended, key=lambda e: e.id)] == ["2001:db8:200:1::aa", "192.0.2.2"]
    [call] = (tmp_path / "events-calls").read_text().splitlines()
    assert call.startswith("-E -e DESTROY -o extended,id") and "-f" not in call.split()


def test_the_ending_of_an_entry_that_did_not_move_reads_as_its_last_listing():
    # the real formats (conntrack-tools 1.4.7): a dump's line has the timeout, mark and use
    # count; the ending has neither, and may carry more after the id
    from homework.conntrack import _as_listed, _without_timeout
    ending = ("[DESTROY] ipv4     2 tcp      6 TIME_WAIT src=10.2.0.6 dst=198.51.100.80 sport=47026 dport=443 "
              "packets=5 bytes=273 src=198.51.100.80 dst=192.0.2.2 sport=443 dport=47026 packets=3 bytes=164 "
              "[ASSURED] id=4031490507")
    assert _as_listed(ending) == _as_listed(ending + " [USERSPACE] portid=3881200269") == _without_timeout(LIST_LINE)
    assert _as_listed(ending.replace("packets=3 bytes=164", "packets=4 bytes=216")) != _without_timeout(LIST_LINE)
    assert _as_listed(ending) != _without_timeout(LIST_LINE.replace("mark=0", "mark=4096"))   # parsed instead
    # ICMP: the echo id inside the tuples is not the entry's
    icmp = ("[DESTROY] ipv4     2 icmp     1 src=10.2.0.6 dst=198.51.100.80 type=8 code=0 id=1234 packets=1 "
            "bytes=84 src=198.51.100.80 dst=192.0.2.2 type=0 code=0 id=1234 packets=1 bytes=84 id=99")
    assert _as_listed(icmp).endswith("bytes=84 mark=0 use=1 id=99")
    assert _as_listed("not a line") == "not a line"


def test_an_ending_the_last_dump_listed_unchanged_is_not_parsed_nor_handed_on(tmp_path, monkeypatch):
    """Most endings are of connections the dumps saw closed, their counters final: they add
    nothing. One that grew after the dump, or that no dump listed, is handed on."""
    from homework import conntrack as ct
    same = ("[DESTROY] ipv4     2 tcp      6 TIME_WAIT src=10.2.0.6 dst=198.51.100.80 sport=47026 dport=443 "
            "packets=5 bytes=273 src=198.51.100.80 dst=192.0.2.2 sport=443 dport=47026 packets=3 bytes=164 "
            "[ASSURED] id=4031490507")
    grew = same.replace("packets=3 bytes=164", "packets=4 bytes=216")
    endings = tmp_path / "endings"
    endings.write_text(f"{same}\n{grew.replace('id=4031490507', 'id=5')}\n{EVENT_LINE}\n")
    listing = tmp_path / "listing"
    listing.write_text(f"{LIST_LINE}\n{LIST_LINE.replace('id=4031490507', 'id=5')}\n")
    reader = _fake_conntrack(tmp_path, f'[ "$1" = -E ] && {{ cat {endings}; sleep 30; exit 0; }}\n'
                                       f'[ "$3" = ipv4 ] || exit 0\ncat {listing}\n')
    assert len(reader.dump()) == 2
    parsed = []
    monkeypatch.setattr(ct, "parse_entry", lambda line: parsed.append(line) or parse_entry(line))
    ended = _follow_until(reader, 2)
    assert sorted((e.id, e.reply_bytes) for e in ended) == [(5, 216), (77, 0)]
    assert len(parsed) == 2 and same not in parsed


def test_a_dump_is_read_once_the_tool_is_done_not_through_a_pipe(tmp_path):
    # through a pipe the controller wakes for every few kilobytes the tool writes
    reader = _fake_conntrack(tmp_path, f'[ "$3" = ipv4 ] || exit 0\n[ -p /dev/stdout ] && exit 3\n'
                                       f'for i in $(seq 1 300); do echo "{LIST_LINE}"; done\n')
    entries = reader.dump()
    assert len(entries) == 300 and entries[0] == parse_entry(LIST_LINE)


def test_closed_connections_stay_a_minute_never_longer_than_the_kernel_says(tmp_path, monkeypatch):
    """TIME_WAIT: the kernel's 120 s becomes 60 s (an endpoint's own); a shorter setting is
    kept; a namespace where it cannot be written is logged and the records go on."""
    from homework import conntrack as ct
    setting = tmp_path / "nf_conntrack_tcp_timeout_time_wait"
    monkeypatch.setattr(ct, "TIME_WAIT_FILE", str(setting))
    setting.write_text("120\n")
    assert ConntrackReader.shorten_time_wait() is True and setting.read_text().strip() == "60"
    setting.write_text("30\n")
    assert ConntrackReader.shorten_time_wait() is True and setting.read_text().strip() == "30"
    monkeypatch.setattr(ct, "TIME_WAIT_FILE", str(tmp_path / "absent" / "file"))
    assert ConntrackReader.shorten_time_wait() is False
