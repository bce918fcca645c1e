"""DNS interception end to end: real OVS, the real controller, homework-dnsd, dnsmasq on the
router and in the internet, lighttpd for the captive page; dig and curl in device
namespaces."""
from __future__ import annotations

import json
import time

import pytest

from homelab.dns import GAMES_WEB, NEW_ADDR, NEW_DOMAIN, PUBLIC, ROUTER_RECORDS, UPSTREAM, WEB, DnsLab, dns_home


@pytest.fixture(scope="module")
def lab():
    with dns_home() as home:
        home._dns_lab = DnsLab(home).start()
        yield home._dns_lab


@pytest.fixture(autouse=True)
def fresh(lab):
    yield
    lab.home.remove_devices()
    for rule in json.loads(lab.homework("--json", "dns-rules", "household"))["rules"]:
        lab.homework("remove-dns-rule", rule["domain"])
    if not lab.home.controller_running():
        lab.home.start_controller()


def wait_until(check, timeout=5.0, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return check()


def http(dev, url, timeout=3):
    """(status code or 0, body) of a GET from the device (names via the device's resolver)."""
    return dev.home._dns_lab.http(dev, url, timeout)


def tcp_open(dev, addr, port, timeout=2):
    res = dev.run(["/usr/bin/python3", "-c", "import socket,sys; socket.create_connection"
                   f"(('{addr}', {port}), timeout={timeout}); print('open')"], check=False, timeout=timeout + 5)
    return "open" in res.stdout


def test_allowed_denied_per_device_and_subdomains(lab):
    a, b = lab.join("a"), lab.join("b")
    assert lab.dig(a, "example.com") == ("NOERROR", [WEB])
    lab.homework("deny-dns", a.mac, "Example.COM")
    assert lab.dig(a, "example.com")[0] == "NXDOMAIN"
    assert lab.dig(a, "www.example.com")[0] == "NXDOMAIN"            # a rule covers subdomains
    assert lab.dig(a, "www.example.com", "AAAA")[0] == "NXDOMAIN"
    assert lab.dig(b, "www.example.com") == ("NOERROR", [WEB])       # B has no rule
    assert lab.dig(a, "school.test")[0] == "NOERROR"                 # other names still resolve
    lab.homework("permit-dns", a.mac, "www.example.com")            # a more specific allow wins
    assert lab.dig(a, "www.example.com") == ("NOERROR", [WEB])
    assert lab.dig(a, "example.com")[0] == "NXDOMAIN"
    lab.homework("remove-dns-rule", "example.com", a.mac)
    assert lab.dig(a, "example.com") == ("NOERROR", [WEB])           # changes apply to the next query


def test_household_rules_and_allowlist_mode(lab):
    a, kid = lab.join("a"), lab.join("kid")
    lab.homework("household-deny-dns", "kids.test")
    assert lab.dig(a, "kids.test")[0] == "NXDOMAIN"
    lab.homework("permit-dns", kid.mac, "kids.test")                 # a device rule beats the household's
    assert lab.dig(kid, "kids.test")[0] == "NOERROR"
    lab.homework("dns-mode", kid.mac, "allowlist")
    lab.homework("permit-dns", kid.mac, "school.test")
    assert lab.dig(kid, "www.school.test")[0] == "NOERROR"
    assert lab.dig(kid, "example.com")[0] == "NXDOMAIN"
    assert lab.dig(a, "example.com")[0] == "NOERROR"
    lab.homework("dns-mode", kid.mac, "denylist")
    assert lab.dig(kid, "example.com")[0] == "NOERROR"


def test_tcp_and_hardcoded_public_resolvers_are_intercepted_and_policed(lab):
    a = lab.join("a")
    lab.homework("deny-dns", a.mac, "example.com")
    for server in (PUBLIC, "8.8.8.8", "192.0.2.53"):                 # 8.8.8.8 does not even exist here
        assert lab.dig(a, "example.com", server=server)[0] == "NXDOMAIN", f"{server}\n{lab.debug()}"
        assert lab.dig(a, "school.test", server=server)[0] == "NOERROR", server
    assert lab.dig(a, "example.com", tcp=True)[0] == "NXDOMAIN"
    assert lab.dig(a, "school.test", tcp=True)[0] == "NOERROR"
    assert lab.dig(a, "example.com", server=PUBLIC, tcp=True)[0] == "NXDOMAIN"
    # a CNAME to a blocked name is blocked too
    lab.homework("deny-dns", a.mac, "blocked.test")
    assert lab.dig(a, "alias.test")[0] == "NXDOMAIN"


def test_address_of_a_blocked_name_learned_from_another_device_is_dropped(lab):
    a, b = lab.join("a"), lab.join("b")
    lab.homework("deny-dns", a.mac, "games.test")
    url = f"http://{GAMES_WEB}/"
    assert http(a, url)[0] == 200, "A reaches the address while nobody has looked it up"
    assert lab.dig(b, "www.games.test") == ("NOERROR", [GAMES_WEB])
    assert wait_until(lambda: http(a, url, timeout=2)[0] == 0, timeout=5), "hard-coded address still reachable"
    assert http(b, url)[0] == 200                                    # B may reach it
    assert f"nw_dst={GAMES_WEB}" in lab.home.dump_flows()
    lab.homework("remove-dns-rule", "games.test", a.mac)
    assert wait_until(lambda: http(a, url, timeout=2)[0] == 200, timeout=5)
    # a rule added after the lookup applies at once too
    lab.homework("deny-dns", b.mac, "games.test")
    assert wait_until(lambda: http(b, url, timeout=2)[0] == 0, timeout=5)


def test_dot_blocked_for_restricted_devices_and_doh_canary(lab):
    a, b = lab.join("a"), lab.join("b")
    assert tcp_open(a, PUBLIC, 853)
    lab.homework("deny-dns", a.mac, "example.com")
    assert wait_until(lambda: not tcp_open(a, PUBLIC, 853, timeout=1), timeout=5)
    assert tcp_open(b, PUBLIC, 853)                                  # unrestricted device unaffected
    for dev in (a, b):
        # the internet's resolver has records for these; NXDOMAIN comes from the router
        assert lab.dig(dev, "use-application-dns.net")[0] == "NXDOMAIN"
        assert lab.dig(dev, "mask.icloud.com")[0] == "NXDOMAIN"


def test_pending_device_lands_on_the_waiting_page_until_permitted(lab):
    dev = lab.join("guest", permit=False)
    gateway = dev.default_gateway()
    assert lab.dig(dev, "example.com") == ("NOERROR", [gateway])
    assert lab.dig(dev, "anything.at.all.test") == ("NOERROR", [gateway])
    assert lab.dig(dev, "example.com", "AAAA") == ("NOERROR", [])
    for url in ("http://connectivitycheck.gstatic.com/generate_204", "http://captive.apple.com/hotspot-detect.html",
                "http://www.msftconnecttest.com/connecttest.txt", "http://example.com/some/page?x=1"):
        code, body = http(dev, url)
        assert code == 200 and "Waiting for approval on the Guest Board" in body, (url, code, body[:200])
    lab.homework("permit", dev.mac)
    assert lab.dig(dev, "example.com") == ("NOERROR", [WEB])         # real answers at once
    assert wait_until(lambda: "Hello from the homelab internet" in http(dev, "http://example.com/")[1], 5)


def test_malformed_dns_never_breaks_anything(lab):
    fuzzer, victim = lab.join("fuzzer"), lab.join("victim")
    before = json.loads(lab.homework("--json", "dns-stats"))["dnsd"]
    script = r"""
import os, random, socket, struct, sys
random.seed(5)
targets = [(sys.argv[1], 53), ("203.0.113.99", 53)]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def name(n):
    return b"".join(bytes([len(l)]) + l for l in n.split(b".")) + b"\0"
hdr = lambda flags=0x0100, qd=1, an=0, ns=0, ar=0: struct.pack("!HHHHHH", random.getrandbits(16), flags, qd, an, ns, ar)
cases = [
    lambda: b"",
    lambda: os.urandom(random.randint(1, 11)),                                  # shorter than a header
    lambda: os.urandom(random.randint(12, 600)),                                # garbage
    lambda: hdr() + name(b"example.com")[:random.randint(0, 12)],               # truncated question
    lambda: hdr() + b"\xc0\x0c\x00\x01\x00\x01",                                # pointer loop in the question
    lambda: hdr(qd=65535, an=65535, ns=65535, ar=65535) + name(b"a.test") + b"\0\1\0\1",  # huge counts
    lambda: hdr(qd=0),
    lambda: hdr(flags=0x8180) + name(b"example.com") + b"\0\1\0\1",            # a response, not a query
    lambda: hdr(flags=0x2800) + name(b"example.com") + b"\0\1\0\1",            # UPDATE opcode
    lambda: hdr() + b"\x3f" + b"a" * 63 + b"\x40" + b"b" * 64 + b"\0\0\1\0\1", # label too long
    lambda: hdr() + (b"\x01a" * 200) + b"\0\0\1\0\1",                          # name too long
    lambda: hdr() + b"\x0ckids.test\0\0\1\0\1",                                # dot inside a label
    lambda: hdr() + name(b"example.com") + b"\0\1\0\1" + os.urandom(random.randint(0, 300)),  # trailing junk
]
import time
for i in range(int(sys.argv[2])):
    u.sendto(random.choice(cases)(), random.choice(targets))
    if i % 200 == 0:
        time.sleep(0.01)     # a flood, but one the veth queues can hold on a loaded machine
# and over TCP: bad lengths, truncated frames, garbage
for i in range(50):
    try:
        t = socket.create_connection((sys.argv[1], 53), timeout=2)
        t.sendall(random.choice([b"\0\0", b"\xff\xff" + os.urandom(100), struct.pack("!H", 40) + os.urandom(12),
                                 os.urandom(random.randint(1, 500))]))
        t.close()
    except OSError:
        pass
print("sent")
"""
    gateway = fuzzer.default_gateway()
    fuzz = fuzzer.popen(["/usr/bin/python3", "-c", script, gateway, "6000"])
    ok = 0
    for _ in range(10):                                              # others keep resolving meanwhile
        ok += lab.dig(victim, "example.com", timeout=2, tries=3) == ("NOERROR", [WEB])
    assert fuzz.wait(timeout=120) == 0
    assert ok == 10, f"{ok}/10 lookups by another device succeeded during the fuzz\n{lab.debug()}"
    assert lab.dnsd_alive() and lab.home.controller_running()
    after = json.loads(lab.homework("--json", "dns-stats"))["dnsd"]
    assert after["queries"] - before["queries"] >= 3000, after   # most of the 6000 arrived (UDP may drop some)
    assert after["malformed"] - before["malformed"] >= 1500, after
    assert after["panics"] == 0
    assert lab.dig(fuzzer, "example.com") == ("NOERROR", [WEB])      # the fuzzer itself still resolves


def test_policy_survives_controller_and_dnsd_restarts(lab):
    a = lab.join("a")
    lab.homework("deny-dns", a.mac, "example.com")
    lab.home.restart_controller()
    assert lab.dig(a, "example.com")[0] == "NXDOMAIN"                # dnsd kept the policy meanwhile
    lab.dnsd.terminate()
    lab.dnsd.wait(5)
    lab.start_dnsd()                                                 # a fresh dnsd gets the snapshot
    assert wait_until(lambda: lab.dig(a, "example.com", timeout=1, tries=1)[0] == "NXDOMAIN", timeout=10)
    assert lab.dig(a, "school.test")[0] == "NOERROR"


def test_cli_rejects_a_malformed_domain_clearly(lab):
    a = lab.join("a")
    res = lab.home.homework("deny-dns", a.mac, "http://example.com/x")
    assert res.returncode != 0 and "not a domain name" in res.stderr
    res = lab.home.homework("deny-dns", "02:00:00:99:99:99", "example.com")
    assert res.returncode != 0 and "no device" in res.stderr


# -- uncached names in one hop: dnsd asks the upstream itself --------------------

def new_name(label: str) -> str:
    """A name nobody asked before (every name under NEW_DOMAIN exists upstream)."""
    return f"{label}-{time.monotonic_ns()}.{NEW_DOMAIN}"


def dnsd_stats(lab) -> dict:
    return json.loads(lab.homework("--json", "dns-stats"))["dnsd"]


def test_a_blocked_name_is_blocked_on_its_very_first_query(lab):
    a = lab.join("a")
    first = new_name("first")
    lab.homework("deny-dns", a.mac, first)
    lab.homework("household-deny-dns", f"ads.{NEW_DOMAIN}")
    before, dnsmasq_before = dnsd_stats(lab), lab.router_dnsmasq_queries()
    assert lab.dig(a, first)[0] == "NXDOMAIN"                       # exists upstream: the policy answered
    assert lab.dig(a, f"x{time.monotonic_ns()}.ads.{NEW_DOMAIN}")[0] == "NXDOMAIN"
    after = dnsd_stats(lab)
    assert after["forwarded"] == before["forwarded"], "a blocked name must never leave the router"
    assert lab.router_dnsmasq_queries() == dnsmasq_before


def test_a_new_allowed_name_goes_straight_upstream_not_through_dnsmasq(lab):
    a = lab.join("a")
    before, dnsmasq_before = dnsd_stats(lab), lab.router_dnsmasq_queries()
    names = [new_name(f"n{i}") for i in range(5)]
    for name in names:
        assert lab.dig(a, name) == ("NOERROR", [NEW_ADDR]), lab.debug()
    after = dnsd_stats(lab)
    assert after["direct"] - before["direct"] == len(names), after
    assert after["via_dnsmasq"] == before["via_dnsmasq"]
    assert lab.router_dnsmasq_queries() == dnsmasq_before, "the router's dnsmasq saw the queries"
    # The answers were learned for the reverse check, as before (dns_answer events).
    lab.homework("deny-dns", a.mac, names[0])
    assert lab.dig(a, names[0])[0] == "NXDOMAIN"                    # cached answer, policy still first


def test_household_names_are_still_answered_by_the_routers_dnsmasq(lab):
    a = lab.join("a")
    (name, addr), = ROUTER_RECORDS.items()
    before, dnsmasq_before = dnsd_stats(lab), lab.router_dnsmasq_queries()
    assert lab.dig(a, name) == ("NOERROR", [addr]), lab.debug()
    status, answers = lab.dig(a, ".".join(reversed(addr.split("."))) + ".in-addr.arpa", "PTR")
    assert status == "NOERROR" and answers == [f"{name}."]         # PTR of the LAN pool, from dnsmasq too
    assert dnsd_stats(lab)["via_dnsmasq"] - before["via_dnsmasq"] == 2
    assert lab.router_dnsmasq_queries() - dnsmasq_before == 2


@pytest.fixture(scope="module")
def direct_lab():
    """A home without the validating resolver ([dns] resolver = ""): dnsd asks the WAN
    lease's resolvers itself, with dnsmasq as its fallback."""
    with dns_home(dns={"resolver": ""}) as home:
        yield DnsLab(home).start(captive=False)


def wait_for_resolver(lab, *servers):
    """The controller has moved the resolver's forwarders to the new WAN lease's servers."""
    household = lab.home.state_dir / "resolver" / "household.conf"
    assert wait_until(lambda: all(f"forward-addr: {s}@53" in household.read_text() for s in servers)
                      and household.read_text().count("forward-addr") == len(servers), timeout=10), \
        household.read_text()


def test_the_resolver_follows_the_wan_lease_and_never_goes_around(lab):
    a = lab.join("a")
    try:
        lab.set_upstreams("203.0.113.254", UPSTREAM)               # the first one never answers
        wait_for_resolver(lab, "203.0.113.254", UPSTREAM)
        for i in range(3):
            assert lab.dig(a, new_name(f"half{i}"), timeout=5, tries=1) == ("NOERROR", [NEW_ADDR]), lab.debug()
        lab.set_upstreams("203.0.113.254")                          # nobody answers
        wait_for_resolver(lab, "203.0.113.254")
        before, dnsmasq_before = dnsd_stats(lab), lab.router_dnsmasq_queries()
        assert lab.dig(a, new_name("down"), timeout=6, tries=1)[0] in ("SERVFAIL", "TIMEOUT")
        assert dnsd_stats(lab)["via_dnsmasq"] == before["via_dnsmasq"], "no unvalidated way around the resolver"
        assert lab.router_dnsmasq_queries() == dnsmasq_before
    finally:
        lab.set_upstreams(UPSTREAM)
    wait_for_resolver(lab, UPSTREAM)
    assert wait_until(lambda: lab.dig(a, new_name("back")) == ("NOERROR", [NEW_ADDR]), timeout=10)


def dnsd_uses(lab, servers: str) -> None:
    """dnsd has re-read the resolv file (it looks every second) and says so in its log."""
    log = lab.dir / "dnsd.log"
    assert wait_until(lambda: log.read_text().rstrip().endswith(f"upstream resolvers: {servers}"), timeout=10), \
        log.read_text()[-500:]


def test_upstream_down_falls_back_to_dnsmasq_then_comes_back(direct_lab):
    a = direct_lab.join("a")
    try:
        direct_lab.set_upstreams("203.0.113.254")                          # nobody answers there
        dnsd_uses(direct_lab, "203.0.113.254:53")
        before = dnsd_stats(direct_lab)
        t0 = time.monotonic()
        assert direct_lab.dig(a, new_name("down"), timeout=3, tries=1) == ("NOERROR", [NEW_ADDR]), direct_lab.debug()
        first = time.monotonic() - t0
        after = dnsd_stats(direct_lab)
        assert after["retries"] - before["retries"] == 1 and after["via_dnsmasq"] > before["via_dnsmasq"], after
        # The silent resolver is now skipped: the next new name goes to dnsmasq at once.
        t0 = time.monotonic()
        assert direct_lab.dig(a, new_name("down2"), timeout=3, tries=1) == ("NOERROR", [NEW_ADDR])
        assert time.monotonic() - t0 < first
        assert dnsd_stats(direct_lab)["retries"] == after["retries"]
    finally:
        direct_lab.set_upstreams(UPSTREAM)
    dnsd_uses(direct_lab, f"{UPSTREAM}:53")
    before = dnsd_stats(direct_lab)
    assert direct_lab.dig(a, new_name("back")) == ("NOERROR", [NEW_ADDR])
    assert dnsd_stats(direct_lab)["direct"] - before["direct"] == 1        # a new resolv file: asked directly again
