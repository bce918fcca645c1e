#!/usr/bin/env python3
"""OpenFlow encoding: the controller's lean encoder against os-ken's message classes.

The flows a device costs (its ARP, gateway and forwarding flows, accounting, IPv6) are
built by the real flowsets for N devices, pending and permitted, and packed to OpenFlow
1.3 bytes both ways: os-ken (`to_message` + `serialize`, what the adapter did for every
message) and `adapter/ofencode.py`. The two must give the same bytes (checked here too).
Medians of RUNS passes; CPU time of this process, so a busy machine skews it little.
Environment: BENCH_OF_DEVICES (1000), BENCH_OF_RUNS (3).
"""
from __future__ import annotations

import ipaddress
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "nox-modules"))

from os_ken.ofproto import ofproto_v1_3, ofproto_v1_3_parser  # noqa: E402

from homework.adapter import ofencode  # noqa: E402
from homework.adapter.osken_app import to_message  # noqa: E402
from homework.components.routing import flowsets as fs  # noqa: E402
from homework.components.routing import flowsets6 as fs6  # noqa: E402
from homework.leases import Lease  # noqa: E402

DEVICES = int(os.environ.get("BENCH_OF_DEVICES", "1000"))
RUNS = int(os.environ.get("BENCH_OF_RUNS", "3"))
ROUTER_MAC = "02:00:00:00:00:01"
SITE = ipaddress.ip_network("fd00:1:2::/48")


class Datapath:
    ofproto, ofproto_parser = ofproto_v1_3, ofproto_v1_3_parser


def device(i: int) -> Lease:
    net = ipaddress.ip_network("10.2.0.0/16")
    base = int(net.network_address) + 4 * i
    addr = ipaddress.ip_address
    return Lease(mac=f"02:62:00:00:{i >> 8:02x}:{i & 0xff:02x}", index=i, network=f"{addr(base)}/30",
                 router=str(addr(base + 1)), ip=str(addr(base + 2)), broadcast=str(addr(base + 3)),
                 expires=0.0, port=i + 1, active=True)


def decisions() -> tuple[list, int]:
    """Every device's flows, half pending (gateway only) and half permitted."""
    out: list = []
    for i in range(DEVICES):
        dev = device(i)
        prefix = list(SITE.subnets(new_prefix=64))[i % 256]
        if i % 2:
            out += fs.arp_flows(dev) + fs.gateway_flows(dev) + fs6.nd_flows(dev, prefix) + fs6.gateway_flows(dev, prefix)
        else:
            out += (fs.arp_flows(dev) + fs.forward_flows(dev, ROUTER_MAC) + fs.account_flows(dev, 60)
                    + fs6.nd_flows(dev, prefix) + fs6.forward_flows(dev, prefix, ROUTER_MAC))
    return out, sum(1 for d in out if ofencode.encode(d, 1) is not None)


def osken(decision, xid: int) -> bytes:
    msg = to_message(Datapath, decision)
    msg.set_xid(xid)
    msg.serialize()
    return bytes(msg.buf)


def lean(decision, xid: int) -> bytes:
    return ofencode.encode(decision, xid) or osken(decision, xid)     # os-ken for what it does not pack


def cpu_seconds(encode, msgs) -> float:
    t = time.process_time()
    for xid, d in enumerate(msgs):
        encode(d, xid)
    return time.process_time() - t


def main() -> int:
    msgs, packed = decisions()
    for xid, d in enumerate(msgs):
        if lean(d, xid) != osken(d, xid):
            print(f"bench_openflow: the two encoders differ for {d!r}", file=sys.stderr)
            return 1
    runs = {name: [cpu_seconds(fn, msgs) for _ in range(RUNS)] for name, fn in (("os-ken", osken), ("lean", lean))}
    med = {name: statistics.median(v) for name, v in runs.items()}
    n = len(msgs)
    print(f"OpenFlow encoding of {DEVICES} devices' flows ({n} messages, {packed} of them packed by the lean "
          f"encoder, the rest by os-ken), CPU time, median of {RUNS}:")
    print(f"  {'encoder':<8} {'us/message':>11} {'ms per 1000 devices':>20}")
    for name in ("os-ken", "lean"):
        print(f"  {name:<8} {med[name] / n * 1e6:>11.1f} {med[name] / DEVICES * 1000 * 1000:>20.1f}")
    print(f"  lean / os-ken: {med['lean'] / med['os-ken']:.2f}x the CPU (same bytes, checked)")
    out = REPO / "out"
    out.mkdir(exist_ok=True)
    (out / "bench-openflow.json").write_text(json.dumps({"devices": DEVICES, "messages": n, "packed": packed,
                                                         "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
