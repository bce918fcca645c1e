"""The dns component on a fake switch with a fake dnsd link: what it tells dnsd, which
flows it installs, which events it publishes, and the commands' errors."""
import pytest

from homework.commands import CommandError
from homework.components.dns.netfilter import FakeDnsNet
from homework.flows import LOCAL, Datapath
from conftest import make_core
from test_dhcp_server import join

A = "02:00:00:00:00:0a"
B = "02:00:00:00:00:0b"
DP = Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1, "d2": 2})


class FakeLink:
    def __init__(self):
        self.lines = []

    def push(self, lines, timeout=0, wait=True):
        self.lines += lines
        return True

    def take(self):
        out, self.lines = self.lines, []
        return out

    def stats(self):
        return {"connected": True}

    def stop(self):
        pass


def make(tmp_path, clock=None):
    core = make_core(tmp_path, components=("dhcp", "routing", "dns"), clock=clock,
                     dns_control="", dns_intercept=False)
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
