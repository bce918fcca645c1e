"""The dns component on a fake switch with a fake dnsd link: what it tells dnsd, which
flows it installs, which events it publishes, and the commands' errors."""
import pytest

from homework.commands import CommandError
from homework.components.dns import reverse
from homework.components.dns.reverse import LearnedPairs
from homework.flows import LOCAL, Datapath
from conftest import Clock, make_core
from test_dhcp_server import join

A = "02:00:00:00:00:0a"
B = "02:00:00:00:00:0b"
DP = Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1, "d2": 2})


class FakeDnsNet:
    """Unit tests: remembers what would be in the captive set."""

    def __init__(self, *args, **kw):
        self.captive_ips: set[str] = set()
        self.set_up = False

    def setup(self) -> None:
        self.set_up = True

    def captive(self, ip: str, on: bool) -> None:
        (self.captive_ips.add if on else self.captive_ips.discard)(ip)

    def flush(self, timeout=None) -> bool:
        return True


class FakeLink:
    def __init__(self):
        self.lines = []
        self.waits = 0            # pushes that waited for dnsd, and settles

    def push(self, lines, timeout=0, wait=True):
        self.lines += lines
        self.waits += wait
        return True

    def settle(self, timeout=0):
        self.waits += 1
        return True

    def take(self):
        out, self.lines = self.lines, []
        return out

    def stats(self):
        return {"connected": True}

    def stop(self):
        pass


def make(tmp_path, clock=None, **config):
    core = make_core(tmp_path, components=("dhcp", "routing", "dns"), clock=clock,
                     dns_control="", dns_intercept=False, **config)
    dns = core.ctx.component("dns")
    dns.link, dns.net = FakeLink(), FakeDnsNet()
    core.datapath_up(DP)
    events = []
    core.bus.subscribe("dns_query", lambda t, p: events.append((t, p)))
    core.bus.subscribe("dns_answer", lambda t, p: events.append((t, p)))
    return core, dns, events


def prio(core, pkt):
    flow = core.switch.lookup(pkt)
    return flow.priority if flow else None


def call(core, name, **kw):
    return core.commands.call(name, **kw)


def dot(mac):
    return {"in_port": 1, "eth_src": mac, "eth_type": 0x0800, "ip_proto": 6, "tcp_dst": 853, "ipv4_dst": "1.1.1.1"}


def test_port_53_to_any_address_goes_to_the_router(tmp_path):
    core, dns, _ = make(tmp_path)
    for proto, port in ((17, "udp_dst"), (6, "tcp_dst")):
        for dst in ("10.2.0.1", "203.0.113.53", "8.8.8.8"):
            pkt = {"in_port": 1, "eth_src": A, "eth_type": 0x0800, "ip_proto": proto, port: 53, "ipv4_dst": dst}
            assert core.switch.outputs(pkt) == [LOCAL]
        pkt6 = {"in_port": 1, "eth_src": A, "eth_type": 0x86DD, "ip_proto": proto, port: 53}
        assert core.switch.outputs(pkt6) == [LOCAL]
    flow = core.switch.lookup({"in_port": 1, "eth_type": 0x0800, "ip_proto": 17, "udp_dst": 53})
    assert flow.priority == 50000


def test_devices_reach_dnsd_with_their_state_and_pending_ones_are_captive(tmp_path):
    core, dns, _ = make(tmp_path)
    join(core, A, port=1)
    assert dns.link.take() == [f"device 10.2.0.2 {A} pending denylist 10.2.0.1"]
    assert dns.net.captive_ips == {"10.2.0.2"}
    core.devices.permit(A)
    assert dns.link.take() == [f"device 10.2.0.2 {A} permitted denylist 10.2.0.1"]
    assert dns.net.captive_ips == set()
    core.devices.deny(A)
    assert dns.link.take()[0].split()[3] == "denied" and dns.net.captive_ips == {"10.2.0.2"}
    snapshot = dns._snapshot()
    assert snapshot[0] == "blocked nxdomain" and f"device 10.2.0.2 {A} denied denylist 10.2.0.1" in snapshot


def test_rules_commands_push_to_dnsd_and_block_dot(tmp_path):
    core, dns, _ = make(tmp_path)
    join(core, A, port=1)
    join(core, B, port=2)
    core.devices.permit(A)
    core.devices.permit(B)
    dns.link.take()
    assert core.switch.outputs(dot(A)) == []        # dropped by default anyway (no forwarding yet)
    res = call(core, "deny-dns", mac=A.upper().replace(":", "-"), domain="Example.COM")
    assert res == {"owner": A, "action": "deny", "domains": ["example.com"]}
    assert dns.link.take() == [f"rule {A} example.com deny"]
    dot_flow = core.switch.lookup(dot(A))
    assert dot_flow.priority == 50000 and dot_flow.actions == ()
    assert prio(core, dot(B)) != 50000
    call(core, "permit-dns", mac=A, domain="ok.example.com")
    call(core, "dns-mode", mac=B, mode="allowlist")
    assert dns.link.take() == [f"rule {A} ok.example.com allow", f"device 10.2.0.6 {B} permitted allowlist 10.2.0.5"]
    assert core.switch.lookup(dot(B)).priority == 50000
    view = call(core, "dns-rules", mac=A)
    assert [(r["domain"], r["action"]) for r in view["rules"]] == [("example.com", "deny"), ("ok.example.com", "allow")]
    assert call(core, "dns-mode", mac=B) == {"mac": B, "mode": "allowlist"}
    call(core, "household-deny-dns", domain="blocked.test")
    assert dns.link.take() == ["rule * blocked.test deny"]
    assert call(core, "dns-rules", mac="household")["rules"][0]["owner"] == "household"
    call(core, "remove-dns-rule", mac=A, domain="example.com")
    call(core, "remove-dns-rule", mac=A, domain="ok.example.com")
    call(core, "remove-dns-rule", domain="blocked.test")
    call(core, "dns-mode", mac=B, mode="denylist")
    assert dns.link.take()[:3] == [f"unrule {A} example.com", f"unrule {A} ok.example.com", "unrule * blocked.test"]
    assert prio(core, dot(A)) != 50000 and prio(core, dot(B)) != 50000


def test_a_restricted_devices_dns_over_tls_reaches_the_router_and_nothing_else(tmp_path):
    core, dns, _ = make(tmp_path, ipv6_enabled=True, ipv6_prefix="2001:db8:100::/48")
    join(core, A, port=1)
    core.devices.permit(A)
    call(core, "deny-dns", mac=A, domain="example.com")
    assert core.switch.lookup(dot(A)).priority == 50000 and core.switch.outputs(dot(A)) == []
    for gateway in ("10.2.0.1", "10.2.0.5", "10.2.255.253"):          # the .1 of any /30 of the pool
        assert core.switch.outputs({**dot(A), "ipv4_dst": gateway}) == [LOCAL], gateway
    for other in ("10.2.0.2", "10.2.0.7"):                          # a device's address, a broadcast
        assert core.switch.outputs({**dot(A), "ipv4_dst": other}) == [], other
    dot6 = {"in_port": 1, "eth_src": A, "eth_type": 0x86DD, "ip_proto": 6, "tcp_dst": 853}
    assert core.switch.outputs({**dot6, "ipv6_dst": "2001:db8:100:7::1"}) == [LOCAL]     # any /64's ::1
    assert core.switch.outputs({**dot6, "ipv6_dst": "2001:db8:100:7::2"}) == []
    assert core.switch.outputs({**dot6, "ipv6_dst": "2606:4700:4700::1111"}) == []


@pytest.mark.parametrize("name,kwargs,status", [
    ("deny-dns", {"mac": A, "domain": "bad..name"}, 400),
    ("deny-dns", {"mac": A, "domain": "http://example.com/"}, 400),
    ("deny-dns", {"mac": "not-a-mac", "domain": "example.com"}, 400),
    ("deny-dns", {"mac": "02:00:00:00:00:99", "domain": "example.com"}, 404),
    ("permit-dns", {"mac": A}, 400),
    ("dns-mode", {"mac": A, "mode": "sometimes"}, 400),
    ("remove-dns-rule", {"mac": A, "domain": "never-added.test"}, 400),
    ("import-dns-rules", {"mac": A, "domains": ""}, 400),
])
def test_bad_commands_get_clear_errors(tmp_path, name, kwargs, status):
    core, dns, _ = make(tmp_path)
    join(core, A, port=1)
    with pytest.raises(CommandError) as exc:
        call(core, name, **kwargs)
    assert exc.value.status == status and str(exc.value)
    assert dns.policy.rules == {}


def test_events_are_published_and_reverse_check_uses_other_devices_lookups(tmp_path):
    core, dns, events = make(tmp_path)
    join(core, A, port=1)
    join(core, B, port=2)
    core.devices.permit(A)
    core.devices.permit(B)
    call(core, "deny-dns", mac=A, domain="blocked.test")
    # B looks blocked.test up (allowed for B); dnsd reports the query and the answer
    dns._on_events([f"q {B} 1 allowed 412 blocked.test 3", f"a {B} 300 blocked.test 203.0.113.66,2001:db8::66 -",
                    f"q {A} 1 blocked 0 www.blocked.test 1", "q - 1 unknown 0 x.test", "garbage line"])
    assert events[0] == ("dns_query", {"mac": B, "name": "blocked.test", "qtype": 1, "verdict": "allowed",
                                       "latency_us": 412, "count": 3})
    assert events[1] == ("dns_answer", {"mac": B, "name": "blocked.test",
                                        "addresses": ["203.0.113.66", "2001:db8::66"]})
    assert events[2][1]["verdict"] == "blocked" and events[3][1]["mac"] is None
    to_blocked = {"in_port": 1, "eth_src": A, "eth_type": 0x0800, "ip_proto": 6, "ipv4_dst": "203.0.113.66",
                  "tcp_dst": 80}
    flow = core.switch.lookup(to_blocked)
    assert flow.priority == 40000 and flow.actions == ()
    assert core.switch.lookup({"eth_src": A, "eth_type": 0x86DD, "ipv6_dst": "2001:db8::66"}).priority == 40000
    assert prio(core, dict(to_blocked, eth_src=B, in_port=2)) != 40000
    # a rule added after the learning applies too; removing the rules removes the drops
    call(core, "deny-dns", mac=B, domain="blocked.test")
    assert core.switch.lookup(dict(to_blocked, eth_src=B, in_port=2)).priority == 40000
    call(core, "remove-dns-rule", mac=A, domain="blocked.test")
    call(core, "remove-dns-rule", mac=B, domain="blocked.test")
    assert not [f for f in core.switch.flows if f.priority == 40000]


def test_drops_and_rules_come_back_after_a_restart(tmp_path):
    core, dns, _ = make(tmp_path)
    join(core, A, port=1)
    core.devices.permit(A)
    call(core, "deny-dns", mac=A, domain="blocked.test")
    dns._on_events([f"a {A} 30 blocked.test 203.0.113.66"])
    core.state.close()
    core2, dns2, _ = make(tmp_path)
    assert dns2.policy.rules == {A: {"blocked.test": "deny"}}
    assert f"rule {A} blocked.test deny" in dns2._snapshot()
    assert core2.switch.lookup({"eth_src": A, "eth_type": 0x0800, "ipv4_dst": "203.0.113.66"}).priority == 40000
    assert core2.switch.lookup(dot(A)).priority == 50000


def test_bulk_import(tmp_path):
    core, dns, _ = make(tmp_path)
    res = call(core, "import-dns-rules", domains="a.test, b.test\nc.test", action="deny")
    assert res["owner"] == "household" and res["domains"] == ["a.test", "b.test", "c.test"]
    assert dns.link.take() == ["rule * a.test deny", "rule * b.test deny", "rule * c.test deny"]


# -- learning at scale: the data structure behind the reverse check ------------------------------
def drops(core, mac):
    return sorted(f.match["ipv4_dst"] for f in core.switch.flows
                  if f.priority == 40000 and f.match.get("eth_src") == mac)


def learned_rows(core):
    return {(r["name"], r["addr"]) for r in core.state.execute("SELECT name, addr FROM dns_learned")}


def test_learned_pairs_evict_the_oldest_and_keep_the_indexes_right():
    pairs = LearnedPairs()
    pairs.add("a.test", "192.0.2.1", 10.0)
    pairs.add("b.test,a.test", "192.0.2.1", 20.0)      # a.test reaches .1 through two chains
    pairs.add("c.test", "192.0.2.3", 30.0)
    pairs.add("a.test", "192.0.2.1", 40.0)             # refreshed: no longer the oldest
    assert pairs.pop_oldest(before=15.0) is None
    assert pairs.pop_oldest() == ("b.test,a.test", "192.0.2.1")
    assert pairs.addrs_of == {"a.test": {"192.0.2.1"}, "c.test": {"192.0.2.3"}}
    assert pairs.names_of == {"192.0.2.1": {"a.test"}, "192.0.2.3": {"c.test"}}
    assert pairs.pop_oldest() == ("c.test", "192.0.2.3")
    assert pairs.pop_oldest() == ("a.test", "192.0.2.1")
    assert pairs.pop_oldest() is None and pairs.addrs_of == {} and pairs.names_of == {} and len(pairs) == 0


def test_refreshes_do_not_grow_the_eviction_heap_without_bound():
    pairs = LearnedPairs()
    for i in range(20_000):
        pairs.add("a.test", "192.0.2.1", float(i))
    assert len(pairs) == 1 and len(pairs._heap) <= 2 * len(pairs) + 1024


def test_eviction_drops_the_oldest_names_and_forgets_exactly_their_drops(tmp_path, monkeypatch):
    monkeypatch.setattr(reverse, "MAX_LEARNED", 3)
    clock = Clock()
    core, dns, _ = make(tmp_path, clock=clock)
    join(core, A, port=1)
    core.devices.permit(A)
    call(core, "deny-dns", mac=A, domain="blocked.test")

    def answer(name, addr):
        clock.advance(1)
        dns._on_events([f"a {B} 300 {name} {addr} -"])

    answer("shared.test", "198.51.100.7")         # allowed name on the address: no drop yet
    answer("blocked.test", "198.51.100.7")
    answer("x.blocked.test", "198.51.100.8")
    assert drops(core, A) == ["198.51.100.8"]
    answer("new1.test", "198.51.100.20")          # 4 pairs: shared.test, the oldest, goes
    assert "shared.test" not in dns.reverse.addrs_of
    assert dns.reverse.names_of["198.51.100.7"] == {"blocked.test"}
    assert drops(core, A) == ["198.51.100.7", "198.51.100.8"]   # only blocked names left on .7
    answer("new2.test", "198.51.100.21")          # blocked.test goes: its drop goes, .8 stays
    assert drops(core, A) == ["198.51.100.8"]
    answer("new3.test", "198.51.100.22")          # x.blocked.test goes too
    assert drops(core, A) == []
    assert set(dns.reverse.addrs_of) == {"new1.test", "new2.test", "new3.test"}
    # SQLite holds what memory holds: evicted pairs are deleted, not left to pile up
    assert learned_rows(core) == set(dns.reverse.pairs.expires)


def test_one_new_name_costs_the_same_whatever_was_learned_before(tmp_path):
    """The stall of every new name re-checked everything learned, for every
    restricted device. Count policy look-ups instead of timing them."""
    core, dns, _ = make(tmp_path)
    join(core, A, port=1)
    core.devices.permit(A)
    call(core, "deny-dns", mac=A, domain="blocked.test")
    dns._on_events([f"a {B} 300 n{i}.test 10.9.{i // 250}.{i % 250} -" for i in range(3000)])
    looked_up = []
    allowed = dns.policy.name_allowed
    dns.policy.name_allowed = lambda mac, name: looked_up.append(name) or allowed(mac, name)
    dns._on_events([f"a {B} 300 blocked.test 203.0.113.66 -", f"a {B} 300 more.test 203.0.113.67 -"])
    assert drops(core, A) == ["203.0.113.66"]
    assert len(looked_up) <= 4


def test_with_ipv6_dnsd_also_knows_the_device_by_its_64_and_follows_a_renumbering(tmp_path):
    prefix_file = tmp_path / "delegated"
    prefix_file.write_text("2001:db8:200::/48\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "dns"), dns_control="", dns_intercept=False,
                     ipv6_enabled=True, ipv6_prefix="", ipv6_prefix_file=str(prefix_file))
    dns = core.ctx.component("dns")
    dns.link, dns.net = FakeLink(), FakeDnsNet()
    core.datapath_up(DP)
    ip = join(core, A, 1)[1].yiaddr
    net = str(core.ctx.ipv6.device_prefix(core.ctx.leases.get(A).index).network_address)
    lines = dns.link.take()
    # both keys carry the router's address in the /64 too (a cut-off device's AAAA answer,
    # the router's name, its encrypted DNS)
    assert f"device {ip} {A} pending denylist 10.2.0.1 2001:db8:200::1" in lines
    assert f"device {net} {A} pending denylist 10.2.0.1 2001:db8:200::1" in lines
    # its web traffic goes to the page, both families (its /64 by its first address)
    assert dns.net.captive_ips == {ip, net}
    call(core, "permit", mac=A)
    assert f"device {net} {A} permitted denylist 10.2.0.1 2001:db8:200::1" in dns.link.take()
    assert dns.net.captive_ips == set()
    prefix_file.write_text("2001:db8:300::/48\n")
    core.check_site_prefix()
    new = str(core.ctx.ipv6.device_prefix(core.ctx.leases.get(A).index).network_address)
    lines = dns.link.take()
    assert f"nodevice {net}" in lines and f"device {new} {A} permitted denylist 10.2.0.1 2001:db8:300::1" in lines


def test_a_group_decision_waits_for_dnsd_once_not_once_a_device(tmp_path):
    core, dns, _ = make(tmp_path)
    macs = [f"02:00:00:00:02:{i:02x}" for i in range(5)]
    for i, mac in enumerate(macs):
        join(core, mac, 1 + i % 2)
    dns.link.take()
    dns.link.waits = 0
    core.commands.call("decide-group", decision="permit", macs=macs)
    lines = dns.link.take()
    assert sum(line.startswith("device ") and " permitted " in line for line in lines) == 5
    assert dns.link.waits == 1                 # one settle at the end of the command


def test_a_device_let_in_is_out_of_the_captive_set_when_the_command_answers(tmp_path, monkeypatch):
    """The captive set is written by a worker in batches; a permit answers only once its
    change is in the set, or the device's next page is still the captive page (seen in CI:
    a device just let in got the captive server's answer to its first request)."""
    import subprocess
    import threading
    import time
    from homework.components.dns import netfilter
    sets: list[str] = []
    nft_started = threading.Event()

    def slow_nft(cmd, input="", **kw):          # a loaded machine's nft: a while to run
        nft_started.set()
        time.sleep(0.3)
        sets.append(input)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    core, dns, _ = make(tmp_path)
    monkeypatch.setattr(netfilter.subprocess, "run", slow_nft)
    monkeypatch.setattr(netfilter, "_library", lambda: None)       # the nft command's path
    dns.net = netfilter.DnsNet("br0", "169.254.53.53:5300")
    join(core, A, port=1)
    assert dns.net.flush(timeout=5)
    assert sets == ["add element inet homework_dns captive4 { 10.2.0.2 }\n"]
    nft_started.clear()
    call(core, "permit", mac=A)
    assert nft_started.is_set() and sets[-1].endswith("delete element inet homework_dns captive4 { 10.2.0.2 }\n")


def lines_from(sock):
    """The lines a fake homework-dnsd reads from the controller's side, until it closes."""
    buf = b""
    while True:
        try:
            data = sock.recv(65536)
        except OSError:           # closed at the end of the test
            return
        if not data:
            return
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line


def test_the_link_settles_every_push_with_one_write_and_one_confirmation(monkeypatch):
    import socket
    import threading
    from homework.components.dns import dnsd_link
    from homework.components.dns.dnsd_link import DnsdLink
    monkeypatch.setattr(dnsd_link, "FLUSH_AFTER", 30.0)     # only the settle sends them
    ours, theirs = socket.socketpair()
    link = DnsdLink("", snapshot=list, on_events=lambda lines: None)
    link._sock = ours
    applied, syncs = [], []

    def dnsd():          # applies lines in order and confirms each sync, as dnsd does
        for line in lines_from(theirs):
            text = line.decode()
            if text.startswith("sync "):
                syncs.append(text)
                theirs.sendall(f"ok {text.split()[1]} devices=0 rules=0\n".encode())
            else:
                applied.append(text)
    threading.Thread(target=dnsd, daemon=True).start()
    reader = threading.Thread(target=link._read, args=(ours,), daemon=True)
    reader.start()
    for i in range(3):
        assert link.push([f"device 10.2.0.{4 * i + 2} x pending default 10.2.0.1"], wait=False)
    assert applied == [] and link.settle(timeout=5)
    assert len(applied) == 3 and len(syncs) == 1
    assert link.settle(timeout=0.01)          # nothing unconfirmed: no wait
    link._stopped = True
    theirs.shutdown(socket.SHUT_RDWR)
    ours.close()
    theirs.close()


def test_commands_settling_at_once_all_wait_for_the_one_confirmation(monkeypatch):
    """Two commands settle while dnsd has not yet confirmed the first one's lines: the
    second waits for that confirmation too (it covers its lines), not answering early."""
    import socket
    import threading
    from homework.components.dns import dnsd_link
    from homework.components.dns.dnsd_link import DnsdLink
    monkeypatch.setattr(dnsd_link, "FLUSH_AFTER", 30.0)
    ours, theirs = socket.socketpair()
    link = DnsdLink("", snapshot=list, on_events=lambda lines: None)
    link._sock = ours
    release, syncs = threading.Event(), []

    def dnsd():          # confirms only when the test says so
        for line in lines_from(theirs):
            if line.startswith(b"sync "):
                syncs.append(line)
                release.wait(30)
                theirs.sendall(b"ok " + line.split()[1] + b" devices=0 rules=0\n")
    threading.Thread(target=dnsd, daemon=True).start()
    threading.Thread(target=link._read, args=(ours,), daemon=True).start()
    answers: list = []
    assert link.push(["device 10.2.0.2 x permitted default 10.2.0.1"], wait=False)
    first = threading.Thread(target=lambda: answers.append(("first", link.settle(timeout=30))))
    first.start()
    while not syncs:                           # the first command's sync is out, unconfirmed
        threading.Event().wait(0.01)
    second = threading.Thread(target=lambda: answers.append(("second", link.settle(timeout=30))))
    second.start()
    second.join(0.3)
    assert answers == []                        # neither answered before dnsd confirmed
    release.set()
    first.join(30)
    second.join(30)
    assert sorted(answers) == [("first", True), ("second", True)] and len(syncs) == 1
    link._stopped = True
    theirs.shutdown(socket.SHUT_RDWR)
    ours.close()
    theirs.close()
