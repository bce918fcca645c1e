"""A slow ISP link with a deep buffer, as a cable modem has: the bottleneck of the emulated
home's WAN, where a queue builds up unless the router shapes below it.

    Home(isp_link={"down_kbit": 20000, "up_kbit": 5000, "buffer_ms": 500})

Everything runs in the internet namespace, so the router sees an ordinary link:
  downstream  TBF on isp0's egress (towards the router) at down_kbit;
  upstream    the router's packets arriving on isp0 are redirected (tc ingress + mirred)
              to an IFB device whose TBF runs at up_kbit.
Both queues hold buffer_ms of traffic at their rate (TBF `latency`), i.e. the
bufferbloat a home router has to keep out of the modem. The dev/CI kernel has only HTB,
TBF, pfifo, ingress, u32, mirred and IFB (no netem, no fq_codel), hence TBF.
"""
from __future__ import annotations

import subprocess
from collections.abc import Callable

IFB = "ifb-isp"
# TBF needs a bucket of at least one full frame; a few frames keep its timer cost low.
BURST_BYTES = 6000


def shape_isp_link(run: Callable[..., object], down_kbit: int, up_kbit: int,
                   buffer_ms: int = 500, iface: str = "isp0") -> None:
    """Set up both directions; `run` executes a command in the internet namespace
    (e.g. Home.internet). Replaces whatever shaping was there before."""
    clear_isp_link(run, iface)
    # Offloads: TBF must see wire-sized packets, not 64 KB GSO/GRO aggregates, or the
    # rate it enforces is off (and a single super-packet may exceed the bucket).
    run(["ethtool", "-K", iface, "gso", "off", "tso", "off", "gro", "off"])
    run(["tc", "qdisc", "replace", "dev", iface, "root", "tbf", "rate", f"{down_kbit}kbit",
         "burst", str(BURST_BYTES), "latency", f"{buffer_ms}ms"])
    run(["ip", "link", "add", IFB, "type", "ifb"])
    run(["ip", "link", "set", IFB, "up"])
    run(["tc", "qdisc", "replace", "dev", IFB, "root", "tbf", "rate", f"{up_kbit}kbit",
         "burst", str(BURST_BYTES), "latency", f"{buffer_ms}ms"])
    run(["tc", "qdisc", "add", "dev", iface, "handle", "ffff:", "ingress"])
    run(["tc", "filter", "add", "dev", iface, "parent", "ffff:", "protocol", "all", "u32",
         "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", IFB])


def clear_isp_link(run: Callable[..., object], iface: str = "isp0") -> None:
    """Back to an unshaped link (a fast ISP): no qdiscs, no IFB."""
    for cmd in (["tc", "qdisc", "del", "dev", iface, "root"],
                ["tc", "qdisc", "del", "dev", iface, "ingress"],
                ["ip", "link", "del", IFB]):
        run(cmd, check=False)


def start_iperf3(home, port: int, bind: str) -> subprocess.Popen:
    """An iperf3 server in the internet namespace; stop it with stop_process (teardown
    kills it anyway)."""
    return home.internet_popen(["iperf3", "-s", "-B", bind, "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL)


def stop_process(home, proc: subprocess.Popen) -> None:
    """Stop one process the home started, by its PID."""
    from . import _kill_pid
    if proc.poll() is None:
        _kill_pid(proc.pid, 3)
    if proc in home._procs:
        home._procs.remove(proc)
