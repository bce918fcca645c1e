"""End to end: homework-dhcpd answers the devices whose lease is already decided,
on a real Open vSwitch, `[dhcp] answerer = "dhcpd"`.

A never-seen device is offered a block the controller reserved for the daemon, by the
daemon (`[dhcp] daemon_new_offers`); the controller claims the block and the device is
pending on the Guest Board as always. A device the controller knows (blacklisted before
it was ever seen, or holding a block) is the controller's to answer: its DISCOVER comes to
the controller from the daemon, unchanged. The REQUEST that takes an offer is answered by
the daemon, which tells the controller at once: the
lease is granted and the device's flows are on before it needs them; its renewals are
then answered by the daemon alone, and the controller books them (the lease's expiry moves, the renewal is in the
lease list). A blacklisted device gets no answer from either. A controller restart starts
a new daemon with the whole table, and renewals go on being answered by it. Real udhcpc."""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import time

import pytest

from conftest import emulated_home
from homelab import BARE, REPO, Home
from homelab.routing import wait_until

BINARY = REPO / "dhcpd" / "target" / "release" / "homework-dhcpd"


@pytest.fixture(scope="module")
def home():
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is not built (make deps builds it)")
    yield from emulated_home({"controller": {"components": list(BARE)},
                              "dhcp": {"answerer": "dhcpd", "dhcpd_binary": str(BINARY)}},
                             internet=False, hwdb=False)


def stats(home: Home) -> dict:
    res = home.homework("--json", "stats")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout).get("dhcp", {})


def settled_acks(home: Home) -> int:
    """The ACK counter once the daemon's answers given so far are booked (every 0.5 s)."""
    last = stats(home).get("acks", 0)
    while True:
        time.sleep(1.2)
        now = stats(home).get("acks", 0)
        if now == last:
            return now
        last = now


def daemons(home: Home) -> list[str]:
    """homework-dhcpd processes of this home's controller (not of other homes on the machine)."""
    return home.router(["pgrep", "-P", str(home._controller.pid), "homework-dhcpd"], check=False).stdout.split()


def lease_of(home: Home, mac: str) -> dict:
    return next(x for x in json.loads(home.homework("--json", "leases").stdout) if x["mac"] == mac)


def renew(dev) -> float:
    """udhcpc renews now (unicast REQUEST); seconds until its ACK reached the client."""
    sent = time.time()
    dev.renew()
    lease = dev.wait_for_lease(timeout=10, pred=lambda ls: ls.reason == "renew", after=sent)
    return lease.time - sent


def devices(home: Home) -> dict:
    return {d["mac"]: d for d in json.loads(home.homework("--json", "devices").stdout)}


def test_a_never_seen_device_is_offered_a_reserved_block_by_the_daemon(home: Home):
    """The first test of the module: no other device asks for anything meanwhile."""
    before = stats(home)
    dev = home.add_device(name="newcomer")
    dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    dev.start_udhcpc()
    addr, prefix = dev.wait_for_ipv4(20)
    assert prefix == 30
    after = stats(home)
    # no request of its reached the controller: the daemon offered and ACKed, the controller claimed
    assert after.get("dhcpd_punted", 0) == before.get("dhcpd_punted", 0)
    assert after.get("dhcpd_new_offers", 0) == before.get("dhcpd_new_offers", 0) + 1
    assert after.get("dhcpd_offers_taken", 0) == before.get("dhcpd_offers_taken", 0) + 1
    assert lease_of(home, dev.mac)["ip"] == addr
    assert devices(home)[dev.mac]["state"] == "pending"            # on the Guest Board, undecided
    assert dev.ping(dev.wait_for_gateway(5), count=1)                # its flows are on
    # known now: its lease released (udhcpc -R on exit), it asks again from scratch; that
    # is the controller's to answer, and it keeps its block
    dev.stop_dhcp()
    dev.start_udhcpc(extra=("-R",))
    assert dev.wait_for_ipv4(20)[0] == addr
    released = stats(home)
    dev.stop_dhcp()
    # its one DHCPRELEASE may be lost on a loaded userspace datapath (UDP, sent once): then
    # the pending lease (30 s) ends by itself; either way the device asks again from scratch
    wait_until(lambda: not lease_of(home, dev.mac)["active"], 60,
               "the released lease stayed active past the end of its pending lease")
    dev.run(["ip", "addr", "flush", "dev", dev.ifname])
    dev.start_udhcpc()
    assert dev.wait_for_ipv4(20)[0] == addr
    again = stats(home)
    assert again.get("dhcpd_punted", 0) > released.get("dhcpd_punted", 0)     # its DISCOVER came to us
    assert again.get("dhcpd_new_offers", 0) == after.get("dhcpd_new_offers", 0)


def test_a_mac_blacklisted_before_it_was_ever_seen_gets_no_offer(home: Home):
    before = stats(home)
    dev = home.add_device(name="troublemaker")
    dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    out = home.homework("blacklist", dev.mac)
    assert out.returncode == 0, out.stderr
    dev.start_udhcpc()
    # its DISCOVERs reach the controller (which ignores them), none gets the daemon's offer
    wait_until(lambda: stats(home).get("dhcpd_punted", 0) > before.get("dhcpd_punted", 0), 20,
               "the blacklisted MAC's DISCOVER did not reach the controller")
    time.sleep(4)
    assert dev.ipv4() is None
    assert stats(home).get("dhcpd_new_offers", 0) == before.get("dhcpd_new_offers", 0)
    assert all(lease["mac"] != dev.mac for lease in json.loads(home.homework("--json", "leases").stdout))
    dev.stop_dhcp()


def test_renewals_are_answered_by_the_daemon_and_booked_by_the_controller(home: Home):
    dev = home.add_device(name="renewer")
    dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    dev.start_udhcpc()
    addr, prefix = dev.wait_for_ipv4(20)
    assert prefix == 30
    assert "fast path: requests read from br0 by homework-dhcpd" in home.controller_log()
    joined = stats(home)
    assert joined.get("dhcpd_new_offers", 0) >= 1              # the new device: offered by the daemon
    assert joined.get("dhcpd_offers_taken", 0) >= 1            # and its offer taken through the daemon
    assert lease_of(home, dev.mac)["ip"] == addr               # booked by the controller
    assert dev.ping(dev.wait_for_gateway(5), count=1)          # with its flows
    expires = lease_of(home, dev.mac)["expires"]
    time.sleep(1.1)
    for _ in range(3):
        assert renew(dev) < 5
    # three renewals answered without the controller seeing a request, and booked by it
    # (the daemon tells its answers in 50 ms batches)
    deadline = time.monotonic() + 3
    while stats(home).get("acks", 0) < joined.get("acks", 0) + 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    after = stats(home)
    assert after.get("dhcpd_punted", 0) == joined.get("dhcpd_punted", 0)
    # (at least: a renew udhcpc sent again on a busy machine is answered and booked too)
    assert after.get("acks", 0) >= joined.get("acks", 0) + 3
    lease = lease_of(home, dev.mac)
    assert lease["ip"] == addr and lease["expires"] > expires
    assert dev.ping(dev.wait_for_gateway(5), count=1)


def test_a_lease_given_back_right_after_a_renewal_stays_ended(home: Home):
    """The daemon answers a renewal and reports it in a batch (up to 0.5 s, and the
    controller books on the same clock); the client's RELEASE, a moment later, is the
    controller's. The renewal is booked before the release, so the lease ends and is not
    brought back by the renewal's report."""
    dev = home.add_device(name="quick-leaver")
    dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    for _attempt in range(3):
        dev.run(["ip", "addr", "flush", "dev", dev.ifname])
        dev.start_udhcpc(extra=("-R",))              # -R: gives its lease back as it stops
        dev.wait_for_ipv4(20)
        wait_until(lambda: lease_of(home, dev.mac)["active"], 10, "the lease booked")
        released = stats(home).get("releases", 0)
        renew(dev)                                   # answered by the daemon, its report waits
        dev.stop_dhcp()                              # the RELEASE, within the same batch
        try:
            wait_until(lambda n=released: stats(home).get("releases", 0) > n, 10, "the RELEASE handled")
            break
        except AssertionError:                       # UDP sent once: lost on a loaded datapath
            continue
    else:
        pytest.fail("three RELEASEs in a row never reached the controller")
    # two batches on each side later, the renewal's report has been read and booked
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert not lease_of(home, dev.mac)["active"], "the renewal's report brought the lease back"
        time.sleep(0.1)


def test_devices_joining_at_once_get_their_flows_in_shared_writes_and_reach_their_gateway(home: Home):
    """A burst of new devices: their flows go to the switch in writes held a few ms to
    gather several devices (`[controller] flow_hold_ms`), and each still reaches its
    gateway (ARP, ICMP and the gateway services arrived)."""
    def counters():
        return json.loads(home.homework("--json", "stats").stdout).get("controller", {})
    held_before = counters().get("flow_writes_held", 0)
    devs = [home.add_device(name=f"crowd{i}") for i in range(8)]
    for dev in devs:
        dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    for dev in devs:
        dev.start_udhcpc()
    for dev in devs:
        addr, prefix = dev.wait_for_ipv4(20)
        assert prefix == 30
    for dev in devs:
        assert dev.ping(dev.wait_for_gateway(5), count=1), dev.name
    assert counters().get("flow_writes_held", 0) > held_before


def test_a_blacklisted_device_gets_no_answer_from_either(home: Home):
    dev = home.add_device(name="outcast")
    dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    dev.start_udhcpc()
    dev.wait_for_ipv4(20)
    assert home.homework("blacklist", dev.mac).returncode == 0
    acks = settled_acks(home)
    sent = time.time()
    dev.renew()
    with pytest.raises(TimeoutError):
        dev.wait_for_lease(timeout=4, pred=lambda ls: ls.reason == "renew", after=sent)
    assert stats(home).get("acks", 0) == acks


def test_after_a_controller_restart_a_new_daemon_answers_from_the_whole_table(home: Home):
    dev = home.add_device(name="survivor")
    dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    dev.start_udhcpc()
    addr, _ = dev.wait_for_ipv4(20)
    old = daemons(home)
    assert old
    home.restart_controller()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        new = daemons(home)
        if new and new != old:
            break
        time.sleep(0.2)
    assert new and not set(new) & set(old), (old, new)
    deadline = time.monotonic() + 5                               # the old daemon died with the old controller
    while any(os.path.exists(f"/proc/{pid}") for pid in old) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in old), old
    punted = stats(home).get("dhcpd_punted", 0)
    assert renew(dev) < 5
    assert stats(home).get("dhcpd_punted", 0) == punted      # answered by the new daemon, from its table
    assert lease_of(home, dev.mac)["ip"] == addr


def test_a_daemon_that_dies_is_started_again_and_offers_new_devices_other_blocks(home: Home):
    """homework-dhcpd killed (as a crash would end it): the controller starts it again. The
    blocks the dead daemon could offer may be held by devices it answered without telling
    anyone; the new daemon offers from other blocks, and an answered device keeps its own."""
    first = home.add_device(name="before-crash")
    first.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    first.start_udhcpc()
    first_addr, _ = first.wait_for_ipv4(20)
    # the address the next new device would have been offered from the dead daemon's reserve
    probe = home.add_device(name="probe")
    probe.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    probe.start_udhcpc()
    probe_addr, _ = probe.wait_for_ipv4(20)
    probe.stop_dhcp()
    before = stats(home)
    [pid] = daemons(home)
    os.kill(int(pid), signal.SIGKILL)
    wait_until(lambda: stats(home).get("dhcpd_restarts", 0) > before.get("dhcpd_restarts", 0), 20,
               "homework-dhcpd was not started again")
    wait_until(lambda: daemons(home) and daemons(home) != [pid], 20, "no new homework-dhcpd")
    after = home.add_device(name="after-crash")
    after.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    after.start_udhcpc()
    after_addr, _ = after.wait_for_ipv4(20)
    assert stats(home).get("dhcpd_new_offers", 0) == before.get("dhcpd_new_offers", 0) + 1   # the new daemon's offer
    step = int(ipaddress.IPv4Address(probe_addr)) - int(ipaddress.IPv4Address(first_addr))
    next_in_old_reserve = str(ipaddress.IPv4Address(probe_addr) + step)
    assert after_addr not in (first_addr, probe_addr, next_in_old_reserve)
    assert renew(first) < 5 and lease_of(home, first.mac)["ip"] == first_addr
