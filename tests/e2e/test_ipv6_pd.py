"""IPv6 prefix delegation end to end: the ISP (kea-dhcp6) delegates a /48 to the
router's WAN client (dhcpcd with scripts/wan-pd-hook.sh), the controller takes its
devices' /64s from it, and a device reaches the v6 internet from its own address."""
from __future__ import annotations

import ipaddress
import json

import pytest

from homelab import PD_POOL, WEB6_ADDR, Home
from homelab.routing import curl, permitted_device, wait_until


@pytest.fixture(scope="module")
def home():
    from conftest import emulated_home
    yield from emulated_home({"controller": {"components": ["dhcp", "routing"]}}, ipv6_pd=True)


def test_the_delegated_prefix_gives_each_device_its_64_and_the_internet(home: Home):
    delegated = ipaddress.IPv6Network(home.pd_prefix_file.read_text().strip())
    assert delegated.prefixlen == 48 and delegated.subnet_of(ipaddress.IPv6Network(PD_POOL))
    dev = permitted_device(home)
    [view] = [d for d in json.loads(home.homework("--json", "devices").stdout) if d["mac"] == dev.mac]
    prefix = ipaddress.IPv6Network(view["ipv6_prefix"])
    assert prefix.subnet_of(delegated)
    addrs = wait_until(dev.ipv6_global, 15, "a SLAAC address")
    assert all(ipaddress.IPv6Address(a) in prefix for a in addrs)
    out = curl(dev, f"http://[{WEB6_ADDR}]/", extra=("-6",))
    assert out.stdout == "200", out
    assert addrs[0] in (home.dir / "web.log").read_text(errors="replace")
