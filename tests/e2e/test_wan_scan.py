"""What the internet sees: nmap (Debian's) in the emulated internet scans the router's WAN
address, every TCP port and the UDP ports that matter, and a device's IPv6 address. Open
are exactly the household's forwards (one TCP, one UDP) and remote access's WireGuard port;
everything else is refused (closed), the Guest Board, the API, DNS, SSDP, NAT-PMP/PCP and
miniupnpd's HTTP port included. Over IPv6 only the forward's pinhole is open on the device."""
from __future__ import annotations

import re

import pytest

from homelab import LAN6_SITE, ROUTER_WAN_ADDR
from homelab.reach import serve_hello
from homelab.routing import PY, permitted_device, wait_until

UDP_ECHO = r"""
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(("::", int(sys.argv[1])))
while True:
    data, peer = s.recvfrom(2048)
    s.sendto(b"echo:" + data, peer)
"""
# UDP ports worth a look (a full UDP scan waits on the kernel's rate-limited ICMP errors)
UDP_PORTS = (53, 67, 68, 123, 137, 161, 500, 546, 1900, 4500, 5000, 5351, 5353, 8080, 9001, 51820)


@pytest.fixture(scope="module")
def home():
    from conftest import emulated_home
    yield from emulated_home({"controller": {"components": ["dhcp", "routing", "reach", "remote"]},
                              "ipv6": {"enabled": True, "prefix": LAN6_SITE}})


def nmap(home, *args: str) -> dict[tuple[str, int], str]:
    """(protocol, port) -> state, from nmap's grepable output."""
    out = home.internet(["nmap", "-n", "-Pn", "-T4", "-oG", "-", *args], timeout=600).stdout
    found = {}
    for m in re.finditer(r"(\d+)/(open\|filtered|open|closed|filtered)/(tcp|udp)//", out):
        found[(m.group(3), int(m.group(1)))] = m.group(2)
    return found


def test_the_internet_sees_only_what_the_household_opened(home):
    nas = permitted_device(home, "nas")
    serve_hello(nas.popen, "nas", 8080)
    nas.popen([PY, "-c", UDP_ECHO, "9001"])
    wait_until(lambda: nas.ipv6_global(), 15, "the nas has its IPv6 address")
    for args in (["forward", "add", nas.mac, "9000", "--to", "8080"],
                 ["forward", "add", nas.mac, "9001", "--protocol", "udp"]):
        out = home.homework(*args)
        assert out.returncode == 0, out.stderr
    wait_until(lambda: home.control("remote-status")["running"], 30, "remote access running")

    tcp = nmap(home, "-sS", "-p-", "--max-retries", "1", ROUTER_WAN_ADDR)
    assert {p for (proto, p), state in tcp.items() if state != "closed"} == {9000}, tcp
    # one probe a second: the kernel answers a closed UDP port once a second per sender (its
    # ICMP rate limit), and a probe answered late would look "open|filtered"
    udp = nmap(home, "-sU", "--scan-delay", "1100ms", "--max-retries", "3", "-p", ",".join(map(str, UDP_PORTS)),
               ROUTER_WAN_ADDR)
    assert udp[("udp", 9001)] == "open"                    # the forward: the nas's echo answers
    assert udp[("udp", 51820)] == "open|filtered"           # WireGuard: silent to strangers
    refused = {p for (proto, p), state in udp.items() if state == "closed"}
    assert refused == set(UDP_PORTS) - {9001, 51820}, udp

    v6 = nas.ipv6_global()[0]
    over6 = nmap(home, "-6", "-sS", "-p", "1-1024,5000,8080,8443,9000", "--max-retries", "1", v6)
    assert {p for (proto, p), state in over6.items() if state == "open"} == {8080}, over6
