"""End to end: real DHCP clients in device namespaces get their own /30 from the
controller through a real Open vSwitch."""
from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from homelab import GARBAGE, REPO, Device, Home

CLIENTS = ("dhclient", "udhcpc", "dhcpcd")
POOL = ipaddress.IPv4Network("10.2.0.0/16")


def dhcp_stats(home: Home) -> dict:
    res = home.homework("--json", "stats")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout).get("dhcp", {})


def check_slash30(dev: Device, home: Home, lease_time: int | None = 30) -> ipaddress.IPv4Network:
    """The device holds .2 of its own /30, with router and DNS .1 and broadcast .3."""
    addr, prefix = dev.wait_for_ipv4(20)
    assert prefix == 30, f"{dev.client} got {addr}/{prefix}"
    net = ipaddress.IPv4Network(f"{addr}/30", strict=False)
    assert net.subnet_of(POOL)
    router, device, bcast = (str(net.network_address + i) for i in (1, 2, 3))
    assert addr == device
    lease = dev.wait_for_lease(10)
    assert lease.ip == device
    assert lease.mask == "255.255.255.252"
    assert lease.router == router
    assert lease.dns == [router]
    assert lease.broadcast == bcast
    assert lease.server_id in (None, router)  # dhclient's script does not pass it on
    if lease_time is not None:
        assert lease.lease_time == lease_time
    assert dev.wait_for_gateway(5) == router
    assert f"{router}/30" in home.router_addresses()
    assert dev.ping(router, count=2), f"{dev.client} on {device} cannot ping its gateway {router}"
    return net


@pytest.mark.parametrize("client", CLIENTS)
def test_client_gets_its_own_slash30(home: Home, client: str):
    dev = home.add_device(name=f"{client}-1"[:15])
    dev.start_dhcp(client)
    check_slash30(dev, home, lease_time=30)
    assert "nameserver" in dev.resolv_conf()
    devices = home.homework("--json", "devices")
    assert devices.returncode == 0, devices.stderr
    assert dev.mac in devices.stdout


def test_three_clients_at_once_get_distinct_blocks(home: Home):
    devs = [home.add_device() for _ in CLIENTS]
    for dev, client in zip(devs, CLIENTS, strict=True):
        dev.start_dhcp(client)
    nets = [check_slash30(dev, home) for dev in devs]
    assert len(set(nets)) == 3


def test_permit_gives_the_long_lease_at_next_renewal(home: Home):
    devs = [home.add_device() for _ in CLIENTS]
    for dev, client in zip(devs, CLIENTS, strict=True):
        dev.start_dhcp(client)
    first = {}
    for dev in devs:
        check_slash30(dev, home, lease_time=30)  # pending: 30 s
        first[dev.mac] = dev.lease()
    permitted_at = time.time()
    for dev in devs:
        out = home.homework("permit", dev.mac)
        assert out.returncode == 0, out.stderr + out.stdout
    listing = home.homework("--json", "devices").stdout
    for dev in devs:
        assert dev.mac in listing
    # Each client renews at T1 (half of 30 s) on its own; the renewal carries 3600 s.
    for dev in devs:
        renewed = dev.wait_for_lease(30, pred=lambda ls: ls.reason in ("renew", "rebind", "bound"),
                                     after=permitted_at)
        assert renewed.lease_time == 3600, f"{dev.client}: {renewed}"
        assert renewed.ip == first[dev.mac].ip


def test_same_address_after_controller_restart(home: Home):
    a, b = home.add_device(), home.add_device()
    a.start_dhclient()   # comes back with INIT-REBOOT (REQUEST from its lease file)
    b.start_udhcpc()     # comes back with a fresh DISCOVER
    addr_a, addr_b = a.wait_for_ipv4(15)[0], b.wait_for_ipv4(15)[0]
    for d in (a, b):
        d.stop_dhcp()
        d.run(["ip", "addr", "flush", "dev", d.ifname])
    home.restart_controller()
    a.start_dhclient()
    b.start_udhcpc()
    assert a.wait_for_ipv4(20)[0] == addr_a
    assert b.wait_for_ipv4(20)[0] == addr_b
    assert a.ping(str(ipaddress.IPv4Address(addr_a) - 1))


def test_twenty_devices_at_once_get_distinct_blocks(home: Home):
    devs = [home.add_device() for _ in range(20)]
    start = time.monotonic()
    with ThreadPoolExecutor(20) as pool:
        list(pool.map(lambda d: d.start_dhcp(CLIENTS[d.index % 3]), devs))
    addrs = {}
    for dev in devs:
        addr, prefix = dev.wait_for_ipv4(max(5.0, 45 - (time.monotonic() - start)))
        assert prefix == 30
        addrs[dev.mac] = addr
    nets = {ipaddress.IPv4Network(f"{a}/30", strict=False) for a in addrs.values()}
    assert len(nets) == 20, addrs
    for a in addrs.values():
        net = ipaddress.IPv4Network(f"{a}/30", strict=False)
        assert a == str(net.network_address + 2)
    assert len([a for a in home.router_addresses() if a.endswith("/30")]) >= 20


def test_new_devices_take_router_addresses_already_on_the_bridge(home: Home):
    """the .1 of the next free blocks sit on br0 before any device asks, so new
    devices at once change no address (each change costs Open vSwitch a routing-table
    reload), and once they stop coming the next blocks' addresses go on."""
    from homework.components.dhcp.server import EXPIRY_CHECK_SECONDS, SPARES_QUIET_SECONDS
    time.sleep(EXPIRY_CHECK_SECONDS + SPARES_QUIET_SECONDS + 0.5)    # earlier tests' devices: topped up
    before = set(home.router_addresses())
    stats0 = dhcp_stats(home)
    devs = [home.add_device() for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda d: d.start_udhcpc(), devs))
    for dev in devs:
        net = check_slash30(dev, home)      # the device pings its gateway
        assert f"{net.network_address + 1}/30" in before, f"{net}'s router was not on br0 ahead"
    stats1 = dhcp_stats(home)
    assert stats1.get("router_address_spares_taken", 0) - stats0.get("router_address_spares_taken", 0) == 8
    assert stats1.get("router_address_writes", 0) == stats0.get("router_address_writes", 0)
    deadline = time.monotonic() + 3 * (EXPIRY_CHECK_SECONDS + SPARES_QUIET_SECONDS)
    while len(set(home.router_addresses()) - before) < 8:
        assert time.monotonic() < deadline, "the spares were not topped up"
        time.sleep(0.2)


def test_garbage_does_not_disturb_a_good_client(home: Home):
    good = home.add_device(name="good")
    good.start_udhcpc()
    net = check_slash30(good, home)
    before = good.lease()
    bad = home.add_device(name="bad")
    malformed_before = dhcp_stats(home).get("malformed", 0)
    out = bad.run(["/usr/bin/python3", str(GARBAGE), bad.ifname, "25", "7"], timeout=60)
    assert "sent" in out.stdout
    assert home.controller_running(), home.controller_log()[-3000:]
    # Dropped and counted: the counter moves.
    deadline = time.monotonic() + 5
    while dhcp_stats(home).get("malformed", 0) == malformed_before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert dhcp_stats(home).get("malformed", 0) > malformed_before
    # The good client renews and keeps its block.
    t = time.time()
    good.renew()
    after = good.wait_for_lease(10, after=t)
    assert after.ip == before.ip and after.lease_time == 30
    assert good.ipv4() == (str(net.network_address + 2), 30)
    assert good.ping(str(net.network_address + 1))
    # And a newcomer is still served.
    late = home.add_device(name="late")
    late.start_dhclient()
    check_slash30(late, home)
    assert "Traceback" not in home.controller_log()


def test_cli_wrapper_from_a_checkout(home: Home):
    """scripts/homework (the command `make run` prints) reaches the controller."""
    dev = home.add_device()
    dev.start_dhcp("udhcpc")
    dev.wait_for_ipv4(15)
    wrapper = REPO / "scripts" / "homework"
    listed = subprocess.run([str(wrapper), "--socket", str(home.control_socket), "devices"],
                            capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0 and dev.mac in listed.stdout, listed.stderr
    permitted = subprocess.run([str(wrapper), "--socket", str(home.control_socket), "permit", dev.mac],
                               capture_output=True, text=True, timeout=30)
    assert permitted.returncode == 0 and "permitted" in permitted.stdout, permitted.stderr


def test_make_run_smoke_mode():
    """`make run` with HOMEWORK_RUN_SECONDS exits by itself after showing three leases."""
    env = dict(os.environ, HOMEWORK_RUN_SECONDS="12", HOMELAB_ARTIFACTS="")
    proc = subprocess.run(["bash", str(REPO / "scripts" / "run-home.sh")], capture_output=True,
                          text=True, timeout=90, env=env, cwd=str(REPO))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    for client in CLIENTS:
        assert f"({client})" in out, out[-4000:]
    assert out.count("/30") >= 3, out[-4000:]
    assert "IPv6 (SLAAC in its own /64): 2001:db8:100:" in out, out[-4000:]
    assert "scripts/homework --socket" in out and "permit" in out
    assert "DNS interception on" in out or not (REPO / "dnsd" / "target" / "release" / "homework-dnsd").exists()
    assert "torn down" in out
