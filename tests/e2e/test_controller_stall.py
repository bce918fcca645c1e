"""The controller must never stall: a burst of distinct DNS names, learned by
the reverse check, must not hold up DHCP or the control socket.

Real OVS, the real controller with dhcp + routing + dns, homework-dnsd and the router's
dnsmasq (which answers every *.stall.test name itself), dnsperf in a permitted device
namespace sending each of NAMES new names once, as fast as the emulated home carries them
(QPS), to its gateway. Meanwhile
another device renews its lease with udhcpc every 2 s and the control socket is asked for
`status` every second. Bounds named by the issue: DHCP answers within 1 s, the control
socket within 0.5 s throughout, and the controller is back under 10 % of a core within
10 s of the load ending.

The renewer has talked to its gateway before the burst (its ARP entry is fresh), as a
device that has been online for a while has: under dnsperf at full speed the userspace
datapath's LOCAL port drops some of the router's frames, and a first ARP for the gateway
lost there costs udhcpc a 2 s retry that says nothing about the controller.

The control socket is timed directly (what `homework status` sends): a CLI process's own
start-up on a 2-core machine busy with dnsperf, dnsd and dnsmasq would measure the
interpreter, not the controller.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from homelab import cpu_seconds
from homelab.dns import DnsLab, dns_home

NAMES = int(os.environ.get("STALL_NAMES", "200000"))
# dnsperf unpaced reaches 40-60k queries/s here and saturates both cores: the userspace
# datapath then drops frames of other devices (a udhcpc renew lost now and then, retried
# 2 s later), which says nothing about the controller. 20k new names/s is 200 times the rate
# that already stalled the old controller for 6.6 s, and lasts long enough (10 s) to sample.
QPS = int(os.environ.get("STALL_QPS", "20000"))
STALL_ADDR = "203.0.113.90"
CLIENT_RETRANSMIT = 2.0     # udhcpc's wait before it sends a REQUEST again
DHCP_BOUND = 1.0
CLI_BOUND = 0.5
IDLE_CPU = 10.0


def control_call(home, cmd: str, **args) -> float:
    """Seconds for one request/answer on the control socket."""
    t = time.monotonic()
    home.control(cmd, timeout=10, **args)
    return time.monotonic() - t


def renew_seconds(dev) -> float:
    """udhcpc renews (unicast REQUEST); seconds until its ACK reached the client's hook."""
    sent = time.time()
    dev.renew()
    lease = dev.wait_for_lease(timeout=10, pred=lambda ls: ls.reason == "renew", after=sent)
    return lease.time - sent


@pytest.fixture()
def lab():
    with dns_home() as home:
        yield DnsLab(home).start(captive=False, dnsmasq_args=(f"--address=/stall.test/{STALL_ADDR}",))


@pytest.mark.machine
def test_a_burst_of_new_names_does_not_stall_dhcp_or_the_control_socket(lab):
    home = lab.home
    load, renewer = lab.join("load"), lab.join("renewer")
    lab.homework("deny-dns", load.mac, "blocked.test")      # restricted: learning re-checks drops
    # works before the burst (one lost frame, one client retransmission, allowed as below)
    assert renewer.ping(renewer.default_gateway()) and renew_seconds(renewer) <= DHCP_BOUND + CLIENT_RETRANSMIT
    assert lab.dig(load, "first.stall.test") == ("NOERROR", [STALL_ADDR])
    queries = load.dir / "queries.txt"
    queries.write_text("".join(f"n{i}.stall.test A\n" for i in range(NAMES)))
    pid = home._controller.pid
    learned_before = json.loads(lab.homework("--json", "dns-stats"))["controller"]["learned"]

    perf = load.popen(["dnsperf", "-s", load.default_gateway(), "-d", str(queries), "-n", "1",
                       "-l", "600", "-q", "500", "-Q", str(QPS), "-t", "5"],
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cli, dhcp = [], []
    next_renew = time.monotonic()
    try:
        while perf.poll() is None:
            cli.append(control_call(home, "status"))
            if time.monotonic() >= next_renew:
                dhcp.append(renew_seconds(renewer))
                next_renew = time.monotonic() + 2
            time.sleep(max(0.0, 1 - cli[-1]))
    finally:
        if perf.poll() is None:
            perf.kill()
        report = perf.communicate(timeout=30)[0]
    load_ended = time.monotonic()
    # the burst did happen: (nearly) every name was answered and learned
    completed = int(re.search(r"Queries completed:\s+(\d+)", report).group(1))
    assert completed >= 0.95 * NAMES, report
    learned = 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        learned = json.loads(lab.homework("--json", "dns-stats"))["controller"]["learned"] - learned_before
        if learned >= 0.9 * completed:
            break
        time.sleep(0.5)
    assert learned >= 0.9 * completed, (learned, completed)

    # 10 s after the load: the controller is idle again (CPU over the last 2 of those s)
    time.sleep(max(0.0, load_ended + 8 - time.monotonic()))
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(2)
    idle_pct = 100 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0)

    summary = (f"{completed} names; control socket max {max(cli):.3f} s over {len(cli)} calls; "
               f"DHCP renews {[round(x, 3) for x in dhcp]} s; controller {idle_pct:.1f}% 8-10 s after")
    print(summary)
    assert len(cli) >= 5 and len(dhcp) >= 3, summary
    assert max(cli) <= CLI_BOUND, summary
    # Every renew within the bound, except that one may have needed the client's one
    # retransmission (udhcpc resends after 2 s): under this load the userspace datapath can
    # drop a frame now and then (seen once in CI: renews 4, 6, 2072, 6 ms). A controller
    # that stalled would be slow for every renew in the stall, not lose one frame.
    slow = [x for x in dhcp if x > DHCP_BOUND]
    assert len(slow) <= 1 and all(x <= DHCP_BOUND + CLIENT_RETRANSMIT for x in slow), summary
    assert idle_pct < IDLE_CPU, summary
    # and the devices still work: a fresh name still resolves, the renewer still renews
    assert lab.dig(load, "last.stall.test") == ("NOERROR", [STALL_ADDR])
    # (works, not a time bound: that was measured under the load above; a lost frame on a
    # busy machine costs the client one 2 s retransmission here, as it could anywhere)
    assert renew_seconds(renewer) <= 3 * DHCP_BOUND + 2
    # Its start-up objects are frozen (gcwatch.py): a full collection, which once paused
    # the hub for over 100 ms, walks only what the controller made since.
    counters = json.loads(home.homework("--json", "stats").stdout).get("controller", {})
    assert counters.get("gc_frozen_objects", 0) > 50000, counters
