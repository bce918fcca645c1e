"""Encrypted DNS to the router, end to end: from device namespaces, real kdig asks the
router over TLS (853, homework-dnsd's own TLS) and over HTTPS (the Guest Board's lighttpd,
/dns-query, SCGI to dnsd), over IPv4 and IPv6, and gets the answers port 53 gives: the
device's own rules (a denied name stays denied), the waiting page's address for a pending
device, the query log. `_dns.resolver.arpa SVCB` (DDR) names both endpoints with the
device's own gateway; the router's name is that gateway; a restricted device reaches the
router's DoT while its DoT to the internet stays dropped."""
from __future__ import annotations

import base64
import ipaddress
import json
import re
import struct

import pytest

from homelab.dns import GAMES_WEB, NEW_DOMAIN, PUBLIC, ROUTER_NAME, WEB
from homelab.routing import wait_until
from homelab.web import api


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    from homelab import LAN6_SITE
    # hwdb: the household's query log
    yield from dns_web_lab(("dhcp", "routing", "dns", "hwdb_sync"), hwdb=True,
                           extra={"ipv6": {"enabled": True, "prefix": LAN6_SITE}})


def kdig(dev, server: str, name: str, how: str, qtype: str = "A", extra=()) -> tuple[str, list[str]]:
    """(status, answers) as kdig in the device's namespace sees them: how = tls | https | udp."""
    opts = {"tls": ["+tls"], "https": ["+https"], "udp": []}[how]
    out = dev.run(["kdig", f"@{server}", name, qtype, *opts, *extra, "+time=5", "+retry=1"], check=False,
                  timeout=30)
    status = re.search(r"opcode: \w+; status: (\w+)", out.stdout)
    answers = [line.split()[-1] for line in out.stdout.split(";; ANSWER SECTION:")[-1].splitlines()
               if line and not line.startswith(";") and len(line.split()) >= 5] if status else []
    return (status.group(1) if status else f"FAILED {out.stdout[-300:]} {out.stderr[-300:]}"), answers


def router6(lab, dev) -> str:
    [view] = [d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == dev.mac]
    wait_until(dev.ipv6_global, 15, f"{dev.name}: a SLAAC address")
    return str(ipaddress.IPv6Network(view["ipv6_prefix"]).network_address + 1)


def dnsd(lab) -> dict:
    return json.loads(lab.homework("--json", "dns-stats"))["dnsd"]


@pytest.mark.parametrize("how", ["tls", "https"])
def test_a_device_gets_its_own_rules_over_tls_and_https(lab, how):
    kid, other = lab.join(f"kid-{how}"), lab.join(f"other-{how}")
    lab.homework("deny-dns", kid.mac, "example.com")
    before = dnsd(lab)
    for family in (4, 6):
        gw, gw_other = ((kid.default_gateway(), other.default_gateway()) if family == 4 else
                        (router6(lab, kid), router6(lab, other)))
        assert kdig(kid, gw, "example.com", how)[0] == "NXDOMAIN", lab.debug()      # denied stays denied
        assert kdig(kid, gw, "www.example.com", how, "AAAA")[0] == "NXDOMAIN"
        assert kdig(kid, gw, "school.test", how)[0] == "NOERROR"
        assert kdig(other, gw_other, "example.com", how) == ("NOERROR", [WEB])     # no rule for this one
    after = dnsd(lab)
    counter = "dot_queries" if how == "tls" else "doh_queries"
    assert after[counter] - before[counter] >= 8, after
    assert after["blocked"] - before["blocked"] >= 4


def test_a_pending_device_gets_the_waiting_page_over_tls_too(lab):
    dev = lab.join("pending", permit=False)
    gw = dev.default_gateway()
    assert kdig(dev, gw, "example.com", "tls") == ("NOERROR", [gw])
    assert kdig(dev, router6(lab, dev), "example.com", "tls") == ("NOERROR", [gw])


def test_ddr_names_the_routers_encrypted_dns_with_the_devices_gateway(lab):
    dev = lab.join("phone")
    gw, gw6 = dev.default_gateway(), router6(lab, dev)
    out = dev.run(["dig", f"@{gw}", "_dns.resolver.arpa", "SVCB", "+short"], check=False, timeout=20).stdout
    lines = sorted(out.strip().splitlines())
    assert len(lines) == 2, out
    assert lines[0].startswith(f'1 {ROUTER_NAME}. alpn="dot" port=853 ipv4hint={gw} ipv6hint={gw6}'), out
    assert lines[1].startswith(f'2 {ROUTER_NAME}. alpn="h2" port=443 ipv4hint={gw} ipv6hint={gw6}'), out
    assert 'dohpath="/dns-query{?dns}"' in lines[1] or "key7=" in lines[1], out
    # the same over IPv6, and the router's name is the device's own gateway
    out6 = dev.run(["dig", f"@{gw6}", "_dns.resolver.arpa", "SVCB", "+short"], check=False, timeout=20).stdout
    assert sorted(out6.strip().splitlines()) == lines
    assert lab.dig(dev, ROUTER_NAME) == ("NOERROR", [gw])
    assert lab.dig(dev, ROUTER_NAME, "AAAA") == ("NOERROR", [gw6])


def test_the_routers_certificate_is_checked_by_name_where_a_device_trusts_its_authority(lab):
    dev = lab.join("strict")
    ca = lab.ca.path
    gw = dev.default_gateway()
    strict = (f"+tls-ca={ca}", f"+tls-hostname={ROUTER_NAME}")
    assert kdig(dev, gw, "example.com", "tls", extra=strict) == ("NOERROR", [WEB])
    assert kdig(dev, gw, "example.com", "tls", extra=(f"+tls-ca={ca}", "+tls-hostname=someone.else"))[0] \
        .startswith("FAILED"), "a name the certificate does not carry is refused"


def logged(lab, dev, verdict) -> set[str]:
    """The names the household's query log (hwdb, through the API) shows for `dev`."""
    rows = api(lab.home.web, "GET", f"dns/queries?mac={dev.mac}&verdict={verdict}", role="read-only").json()["queries"]
    return {r["name"] for r in rows}


def test_encrypted_lookups_reach_the_query_log_and_the_reverse_check(lab):
    """What port 53's answers feed, TLS's and HTTPS's feed too, over IPv4 and IPv6: the
    query log names the device and the verdict, and an address learned from another
    device's lookup over TLS is dropped for the device whose rules block its names."""
    kid, other = lab.join("log-kid"), lab.join("log-other")
    lab.homework("deny-dns", kid.mac, "games.test")
    url = f"http://{GAMES_WEB}/"
    assert lab.http(kid, url)[0] == 200, "the kid reaches the address while nobody has looked it up"
    assert kdig(other, other.default_gateway(), "www.games.test", "tls") == ("NOERROR", [GAMES_WEB])
    wait_until(lambda: lab.http(kid, url, timeout=2)[0] == 0, 10, "the learned address dropped for the kid")
    assert lab.http(other, url)[0] == 200
    assert kdig(other, router6(lab, other), "games.test", "https") == ("NOERROR", [GAMES_WEB])
    assert kdig(kid, kid.default_gateway(), "games.test", "https")[0] == "NXDOMAIN"
    assert kdig(kid, router6(lab, kid), "www.games.test", "tls")[0] == "NXDOMAIN"
    wait_until(lambda: {"www.games.test", "games.test"} <= logged(lab, other, "allowed"), 15,
               "the other device's lookups in the query log")
    wait_until(lambda: {"www.games.test", "games.test"} <= logged(lab, kid, "blocked"), 15,
               "the kid's blocked lookups in the query log")


# -- many queries at once: what a phone sends when a page opens ------------------------------------
# Each name is new (every name under NEW_DOMAIN exists upstream), so each goes to the
# validating resolver, all of them at once: every one must come back answered.
PIPELINED = 200


def new_names(tag: str) -> list[str]:
    return [f"{tag}-{i}.{NEW_DOMAIN}" for i in range(PIPELINED)]


@pytest.mark.parametrize("family", [4, 6])
def test_pipelined_new_names_over_tls_are_all_answered(lab, tmp_path, family):
    dev = lab.join(f"pipe-tls{family}")
    server = dev.default_gateway() if family == 4 else router6(lab, dev)
    names = tmp_path / "names.txt"
    names.write_text("".join(f"{n} A\n" for n in new_names(f"tls{family}-{lab.home.run_id}")))
    # dnsperf: one TLS connection, every query sent without waiting (RFC 7766 pipelining),
    # a client's patience far beyond any answer of a working resolver
    out = dev.run(["dnsperf", "-m", "dot", "-s", server, "-p", "853", "-d", str(names), "-n", "1", "-c", "1",
                   "-q", str(PIPELINED), "-t", "20", "-l", "120"], timeout=180).stdout
    assert re.search(rf"Queries completed:\s+{PIPELINED}\b", out), out
    assert re.search(r"Response codes:\s+NOERROR \d+ \(100\.00%\)", out), out


def doh_query(name: str) -> str:
    """A query for `name` A, base64url without padding (RFC 8484 GET, id 0)."""
    wire = struct.pack(">6H", 0, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0" + struct.pack(">2H", 1, 1)
    return base64.urlsafe_b64encode(wire).decode().rstrip("=")


@pytest.mark.parametrize("family", [4, 6])
def test_pipelined_new_names_over_https_are_all_answered(lab, tmp_path, family):
    dev = lab.join(f"pipe-https{family}")
    host = dev.default_gateway() if family == 4 else f"[{router6(lab, dev)}]"
    # 64 at once: lighttpd takes 8 streams a connection, so curl opens 8 connections (a device
    # may hold 64 to the router's web server)
    cmd = ["curl", "-s", "-k", "--http2", "--parallel", "--parallel-max", "64", "--max-time", "30",
           "-H", "accept: application/dns-message", "-w", "%{http_code} %{filename_effective}\n"]
    for i, name in enumerate(new_names(f"https{family}-{lab.home.run_id}")):
        cmd += [f"https://{host}/dns-query?dns={doh_query(name)}", "-o", str(tmp_path / f"{i}.dns")]
    out = dev.run(cmd, check=False, timeout=120).stdout
    statuses = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert statuses == ["200"] * PIPELINED, out[-2000:]
    rcodes = [(tmp_path / f"{i}.dns").read_bytes()[3] & 0x0F for i in range(PIPELINED)]
    assert rcodes == [0] * PIPELINED, f"{sum(1 for r in rcodes if r == 2)} SERVFAIL"


def tcp_open(dev, addr, port, timeout=2):
    res = dev.run(["/usr/bin/python3", "-c", "import socket; socket.create_connection"
                   f"(('{addr}', {port}), timeout={timeout}); print('open')"], check=False, timeout=timeout + 5)
    return "open" in res.stdout


def test_a_restricted_device_reaches_the_routers_dot_but_not_the_internets(lab):
    dev = lab.join("restricted")
    lab.homework("deny-dns", dev.mac, "games.test")
    wait_until(lambda: not tcp_open(dev, PUBLIC, 853, timeout=1), 5, "its DoT to the internet is dropped")
    assert kdig(dev, dev.default_gateway(), "school.test", "tls")[0] == "NOERROR"
    assert kdig(dev, dev.default_gateway(), "games.test", "tls")[0] == "NXDOMAIN"


DNR_LISTEN = r"""
import sys, time
from scapy.all import AsyncSniffer, Ether, IPv6, ICMPv6ND_RS, ICMPv6ND_RA, UDP, get_if_hwaddr, raw, sendp
from scapy.layers.dhcp6 import DHCP6_InfoRequest, DHCP6OptClientId, DHCP6OptOptReq, DUID_LL
ll, mac = sys.argv[1], get_if_hwaddr("eth0")
sniffer = AsyncSniffer(iface="eth0", filter="icmp6 and ip6[40] == 134", count=1, timeout=8)
sniffer.start()
time.sleep(0.3)
sendp(Ether(src=mac, dst="33:33:00:00:00:02") / IPv6(src=ll, dst="ff02::2", hlim=255) / ICMPv6ND_RS(),
      iface="eth0", verbose=False)
sniffer.join()
for p in sniffer.results or []:
    print("RA", raw(p[ICMPv6ND_RA].payload).hex())
sniffer = AsyncSniffer(iface="eth0", filter="udp and dst port 546", count=1, timeout=8)
sniffer.start()
time.sleep(0.3)
sendp(Ether(src=mac, dst="33:33:00:01:00:02") / IPv6(src=ll, dst="ff02::1:2") / UDP(sport=546, dport=547)
      / DHCP6_InfoRequest(trid=0x4242) / DHCP6OptClientId(duid=DUID_LL(lladdr=mac))
      / DHCP6OptOptReq(reqopts=[23, 144]), iface="eth0", verbose=False)
sniffer.join()
replies = sniffer.results or []
print("DHCP6", raw(replies[0][UDP].payload).hex() if replies else "none")
"""


def ra_options(hexdata: str) -> dict[int, list[bytes]]:
    data, out, i = bytes.fromhex(hexdata), {}, 0
    while i + 2 <= len(data) and data[i + 1]:
        out.setdefault(data[i], []).append(data[i:i + 8 * data[i + 1]])
        i += 8 * data[i + 1]
    return out


def dhcp6_options(hexdata: str) -> dict[int, list[bytes]]:
    data, out, i = bytes.fromhex(hexdata)[4:], {}, 0      # after msg-type and transaction id
    while i + 4 <= len(data):
        code, length = int.from_bytes(data[i:i + 2], "big"), int.from_bytes(data[i + 2:i + 4], "big")
        out.setdefault(code, []).append(data[i + 4:i + 4 + length])
        i += 4 + length
    return out


def test_dhcp_and_router_advertisements_announce_the_routers_encrypted_dns(lab):
    from homework import dnr
    from homework.config import load
    endpoints = dnr.Endpoints.of(load(lab.home.config_path))
    # DHCPv4: udhcpc asks for option 162 (-O 162) and its hook sees it (opt162)
    dev = lab.home.add_device("dnr4")
    dev.start_udhcpc(extra=["-O", "162"])
    dev.wait_for_ipv4(20)
    lab.homework("permit", dev.mac)
    got = wait_until(lambda: next((e.env.get("opt162") for e in dev.leases() if e.env.get("opt162")), None), 15,
                     "a lease event with option 162")
    assert got == endpoints.v4_option(dev.default_gateway())[0][1].hex()
    # IPv6: the Router Advertisement carries option 144, and stateless DHCPv6 when asked for it
    gw6 = ipaddress.IPv6Address(router6(lab, dev))
    ll = dev.run(["ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link"]).stdout.split()[3].split("/")[0]
    out = dev.run(["/usr/bin/python3", "-c", DNR_LISTEN, ll], timeout=60).stdout
    ra = next(line.split()[1] for line in out.splitlines() if line.startswith("RA "))
    lifetime = int.from_bytes(ra_options(ra)[144][0][4:8], "big")
    assert b"".join(ra_options(ra)[144]) == endpoints.ra_options(gw6, lifetime)
    dhcp6 = next(line.split()[1] for line in out.splitlines() if line.startswith("DHCP6 "))
    assert dhcp6 != "none", out
    v6 = dhcp6_options(dhcp6)[144]
    assert b"".join(len(o).to_bytes(2, "big") for o in v6) and \
        endpoints.v6_options(gw6) == b"".join(b"\x00\x90" + len(o).to_bytes(2, "big") + o for o in v6)
