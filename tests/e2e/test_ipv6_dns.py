"""DNS over IPv6: a device's queries over IPv6, to the router's ::1 that its
Router Advertisements name, or to any outside resolver, are answered by homework-dnsd
under the same per-device rules as over IPv4, the device found by its /64."""
from __future__ import annotations

import ipaddress
import json

import pytest

from homelab import LAN6_SITE, WEB6_ADDR
from homelab.dns import WEB, DnsLab, dns_home
from homelab.routing import wait_until


@pytest.fixture(scope="module")
def lab():
    with dns_home(config={"ipv6": {"enabled": True, "prefix": LAN6_SITE}}) as home:
        home._dns_lab = DnsLab(home).start()
        yield home._dns_lab


def router6(lab, dev) -> str:
    [view] = [d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == dev.mac]
    prefix = ipaddress.IPv6Network(view["ipv6_prefix"])
    wait_until(dev.ipv6_global, 15, f"{dev.name}: a SLAAC address")
    return str(prefix.network_address + 1)


def test_a_device_asks_over_ipv6_and_its_rules_apply_from_the_first_query(lab):
    a, b = lab.join("a6"), lab.join("b6")
    ra, rb = router6(lab, a), router6(lab, b)
    assert lab.dig(a, "example.com", server=ra) == ("NOERROR", [WEB])
    lab.homework("deny-dns", a.mac, "school.test")            # never asked before by anyone
    assert lab.dig(a, "www.school.test", "AAAA", server=ra)[0] == "NXDOMAIN"
    assert lab.dig(a, "school.test", server=ra)[0] == "NXDOMAIN"
    assert lab.dig(b, "school.test", server=rb)[0] == "NOERROR"  # b has no rule
    # the same over IPv4: one device, one policy
    assert lab.dig(a, "school.test")[0] == "NXDOMAIN"


def test_v6_dns_to_an_outside_resolver_is_answered_by_the_router(lab):
    a = lab.join("c6")
    router6(lab, a)
    lab.homework("deny-dns", a.mac, "kids.test")
    assert lab.dig(a, "example.com", server=WEB6_ADDR) == ("NOERROR", [WEB])
    assert lab.dig(a, "kids.test", server=WEB6_ADDR)[0] == "NXDOMAIN"


def test_a_pending_device_over_ipv6_gets_the_waiting_page_address(lab):
    d = lab.join("p6", permit=False)
    status, answer = lab.dig(d, "example.com", server=router6(lab, d))
    assert (status, answer) == ("NOERROR", [d.default_gateway()])


RS_AND_LISTEN = r"""
import sys
from scapy.all import AsyncSniffer, Ether, IPv6, ICMPv6ND_RS, ICMPv6NDOptRDNSS, sendp
sniffer = AsyncSniffer(iface="eth0", filter="icmp6 and ip6[40] == 134", count=1, timeout=5)
sniffer.start()
import time; time.sleep(0.3)
sendp(Ether(dst="33:33:00:00:00:02") / IPv6(src=sys.argv[1], dst="ff02::2", hlim=255) / ICMPv6ND_RS(),
      iface="eth0", verbose=False)
sniffer.join()
for p in sniffer.results or []:
    if ICMPv6NDOptRDNSS in p:
        print(" ".join(p[ICMPv6NDOptRDNSS].dns))
"""


def dns_servers_heard(lab, name: str, script: str) -> tuple[str, list[str]]:
    """(the device's router ::1, the DNS servers `script` (scapy, run in a new device with
    its link-local address as argument) printed from the router's answer)."""
    a = lab.join(name)
    router = router6(lab, a)
    res = a.run(["/usr/bin/python3", "-c", script, a.ipv6_link_local()], check=False, timeout=30)
    return router, res.stdout.split()


def test_router_advertisements_name_the_routers_own_address_as_dns_server(lab):
    router, heard = dns_servers_heard(lab, "r6", RS_AND_LISTEN)
    assert heard == [router]


INFO_REQUEST = r"""
import sys
from scapy.all import (AsyncSniffer, Ether, IPv6, UDP, DHCP6_InfoRequest, DHCP6OptClientId, DUID_LL,
                       DHCP6OptOptReq, DHCP6OptDNSServers, get_if_hwaddr, sendp)
mac = get_if_hwaddr("eth0")
sniffer = AsyncSniffer(iface="eth0", filter="udp and dst port 546", count=1, timeout=5)
sniffer.start()
import time; time.sleep(0.3)
sendp(Ether(src=mac, dst="33:33:00:01:00:02") / IPv6(src=sys.argv[1], dst="ff02::1:2") / UDP(sport=546, dport=547)
      / DHCP6_InfoRequest(trid=0x1234) / DHCP6OptClientId(duid=DUID_LL(lladdr=mac)) / DHCP6OptOptReq(reqopts=[23]),
      iface="eth0", verbose=False)
sniffer.join()
for p in sniffer.results or []:
    if DHCP6OptDNSServers in p:
        print(" ".join(p[DHCP6OptDNSServers].dnsservers))
"""


def test_stateless_dhcpv6_gives_the_same_dns_server(lab):
    router, heard = dns_servers_heard(lab, "i6", INFO_REQUEST)
    assert heard == [router]


def test_the_internets_resolver_answers_the_router_over_ipv6(lab):
    """The emulated internet's resolver is reachable over IPv6 from the router's WAN."""
    from homelab.dns import UPSTREAM6
    out = lab.home.router(["dig", f"@{UPSTREAM6}", "example.com", "A", "+short", "+time=2", "+tries=2"], check=False)
    assert out.stdout.split() == [WEB], out


def test_an_ipv6_address_of_a_blocked_name_learned_from_another_device_is_dropped(lab):
    """The reverse check (seed §4.5) with AAAA answers: once anyone's lookup shows that an
    address belongs to a name a device may not use, that device loses it, over IPv6 too."""
    a, b = lab.join("a7"), lab.join("b7")
    router6(lab, a)
    rb = router6(lab, b)
    url = f"http://[{WEB6_ADDR}]/"

    def reach(dev):
        return dev.run(["curl", "-6", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "2", url],
                       check=False).stdout == "200"
    lab.homework("deny-dns", a.mac, "v6games.test")
    assert reach(a), "A reaches the address while nobody has looked it up"
    assert lab.dig(b, "v6games.test", "AAAA", server=rb) == ("NOERROR", [WEB6_ADDR])
    assert wait_until(lambda: not reach(a), 5, "the address of a name A may not use is dropped")
    assert reach(b)
    assert f"ipv6_dst={WEB6_ADDR}" in lab.home.dump_flows()
    lab.homework("remove-dns-rule", "v6games.test", a.mac)
    assert wait_until(lambda: reach(a), 5, "reachable again once the rule is gone")


def test_dhcpcd_with_ipv6_takes_its_64_and_the_routers_dns_server(lab):
    """A real dual-stack client: dhcpcd does its own SLAAC from our RA and asks stateless
    DHCPv6 (the RA's O flag) for the DNS server, which it writes to resolv.conf, and hears
    the captive portal API's URL there too (option 103, RFC 8910)."""
    d = lab.home.add_device("dc6")
    d.start_dhcpcd(ipv6=True, conf="define6 103 string captive_portal6\n")
    d.wait_for_ipv4(20)
    lab.homework("permit", d.mac)
    router = router6(lab, d)
    prefix = ipaddress.IPv6Network((ipaddress.IPv6Address(router) - 1, 64))
    assert all(ipaddress.IPv6Address(x) in prefix for x in d.ipv6_global())
    wait_until(lambda: router in d.resolv_conf(), 20, "dhcpcd wrote the router's ::1 to resolv.conf")
    assert "lan" in d.resolv_conf().split("search", 1)[-1], d.resolv_conf()     # the household's domain
    assert lab.dig(d, "example.com", server=router) == ("NOERROR", [WEB])
    heard = [e.get("new_dhcp6_captive_portal6") for e in d.events() if e.get("new_dhcp6_captive_portal6")]
    assert heard and heard[-1] == f"https://[{router}]/ws.v1/captive-portal", [e.get("reason") for e in d.events()]


def test_systemd_networkd_in_a_device_namespace_gets_both_families(lab):
    d = lab.home.add_device("nd6")
    d.start_networkd()
    d.wait_for_ipv4(30)
    assert d.ipv4()[1] == 30
    lab.homework("permit", d.mac)
    router = router6(lab, d)
    prefix = ipaddress.IPv6Network((ipaddress.IPv6Address(router) - 1, 64))
    assert all(ipaddress.IPv6Address(x) in prefix for x in d.ipv6_global())
    out = d.run(["curl", "-6", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "3", f"http://[{WEB6_ADDR}]/"],
                check=False)
    assert out.stdout == "200", out
