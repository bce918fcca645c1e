"""The edge's bridge, driven with Open vSwitch's own tools (ovs-vsctl for the bridge, its
ports and their QoS; ovs-ofctl for the flow table; tc for the userspace datapath's
classifier). The edge is this bridge's only controller: fail_mode=secure, and every flow in
it is one this module wrote.

Queues: on every shaped port one OVS QoS of type linux-htb, its rate the port's; queue 0 is
traffic of no household; household i has queues 4i+1 (high: its guaranteed rate, as floor
and ceiling, first priority), 4i+2 (medium: second priority, up to the line) and 4i+3
(default: last, up to the line). Flows: a household's addresses go to its default queue
(priority 10); a placement, both directions of its connection, to the queue it names
(priority 100, the cookie naming household and placement); everything else NORMAL."""
from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Sequence

from .config import EdgeConfig, Household, Port
from .placement import QUEUES, FiveTuple, Placement, queue_id

Runner = Callable[[Sequence[str], str | None], str]
# `tc -s class show` (iproute2 has no JSON for HTB classes): handle, bytes, packets, drops
CLASS_STATS = re.compile(r"class htb (\S+) .*?\n Sent (\d+) bytes (\d+) pkt \(dropped (\d+)")
FLOW_COUNTERS = re.compile(r"cookie=(0x[0-9a-f]+).*?n_packets=(\d+), n_bytes=(\d+)")


def run(cmd: Sequence[str], stdin: str | None = None) -> str:
    proc = subprocess.run(list(cmd), input=stdin, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def cookie(h: Household, pid: int) -> int:
    return (h.index << 32) | pid


def _match(flow: FiveTuple) -> str:
    if flow.src.version == 4:
        return f"{flow.proto},nw_src={flow.src},tp_src={flow.sport},nw_dst={flow.dst},tp_dst={flow.dport}"
    return f"{flow.proto}6,ipv6_src={flow.src},tp_src={flow.sport},ipv6_dst={flow.dst},tp_dst={flow.dport}"


def placement_flows(h: Household, p: Placement) -> list[str]:
    q = queue_id(h, p.queue)
    return [f"cookie={cookie(h, p.id):#x},priority=100,{_match(f)},actions=set_queue:{q},NORMAL"
            for f in (p.flow, p.flow.reverse())]


def household_flows(h: Household) -> list[str]:
    q = queue_id(h, "default")
    out = []
    for net in h.addresses:
        fam, src, dst = ("ip", "nw_src", "nw_dst") if net.version == 4 else ("ipv6", "ipv6_src", "ipv6_dst")
        for field in (src, dst):
            out.append(f"cookie={h.index << 32:#x},priority=10,{fam},{field}={net},actions=set_queue:{q},NORMAL")
    return out


def queues(cfg: EdgeConfig, port: Port) -> list[tuple[int, dict[str, int]]]:
    """(queue number, its min-rate, max-rate in bit/s and priority) of every queue on a port."""
    bps = port.rate_kbit * 1000
    out: list[tuple[int, dict[str, int]]] = [(0, {"min-rate": 8000, "max-rate": bps, "priority": 3})]
    for h in cfg.households:
        line, g = min(h.line_kbit * 1000, bps), min(h.guaranteed_kbit * 1000, bps)
        out += [(queue_id(h, "high"), {"min-rate": g, "max-rate": g, "priority": 0}),
                (queue_id(h, "medium"), {"min-rate": max(8000, g // 4), "max-rate": line, "priority": 1}),
                (queue_id(h, "default"), {"min-rate": max(8000, g // 4), "max-rate": line, "priority": 2})]
    return out


def tc_tree(cfg: EdgeConfig, port: Port) -> list[str]:
    """The same HTB tree OVS's linux-htb makes (root 1:fffe, queue N as class 1:N+1, a
    1000-packet FIFO each), with tc, on a port's queue_device."""
    dev, bps = port.queues_on, port.rate_kbit * 1000
    lines = [f"qdisc replace dev {dev} root handle 1: htb default 1",
             f"class replace dev {dev} parent 1: classid 1:fffe htb rate {bps}bit ceil {bps}bit"]
    for q, oc in queues(cfg, port):
        lines.append(f"class replace dev {dev} parent 1:fffe classid {classid(q)} htb rate {oc['min-rate']}bit "
                     f"ceil {oc['max-rate']}bit prio {oc['priority']}")
        lines.append(f"qdisc replace dev {dev} parent {classid(q)} handle {q + 0x1000:x}: pfifo limit 1000")
    return lines


def qos_command(cfg: EdgeConfig, port: Port) -> list[str]:
    """One ovs-vsctl transaction: the port's linux-htb QoS and all its queues."""
    bps = port.rate_kbit * 1000
    queues_ = queues(cfg, port)
    cmd = ["--", "set", "port", port.name, "qos=@q", "--", "--id=@q", "create", "qos", "type=linux-htb",
           f"other-config:max-rate={bps}"] + [f"queues:{q}=@q{q}" for q, _ in queues_]
    for q, oc in queues_:
        cmd += ["--", f"--id=@q{q}", "create", "queue"] + [f"other-config:{k}={v}" for k, v in oc.items()]
    return cmd


def _u32(flow: FiveTuple) -> str:
    if flow.src.version == 4:
        return (f"match ip protocol {6 if flow.proto == 'tcp' else 17} 0xff match ip src {flow.src}/32 "
                f"match ip dst {flow.dst}/32 match ip sport {flow.sport} 0xffff match ip dport {flow.dport} 0xffff")
    return (f"match ip6 protocol {6 if flow.proto == 'tcp' else 17} 0xff match ip6 src {flow.src}/128 "
            f"match ip6 dst {flow.dst}/128 match ip6 sport {flow.sport} 0xffff match ip6 dport {flow.dport} 0xffff")


def tc_prio(h: Household, version: int, placements: bool) -> int:
    """u32 filter priorities: every placement's before every household's catch-all."""
    return (0 if placements else 10000) + 2 * h.index + (version == 6)


def classid(q: int) -> str:
    return f"1:{q + 1:x}"            # OVS's linux-htb: queue N is class 1:N+1


class Switch:
    def __init__(self, cfg: EdgeConfig, runner: Runner = run):
        self.cfg, self.run = cfg, runner

    def vsctl(self, *args: str) -> str:
        return self.run(["ovs-vsctl", "--timeout=20", *args], None)

    def ofctl(self, *args: str, stdin: str | None = None) -> str:
        return self.run(["ovs-ofctl", "-O", "OpenFlow13", *args], stdin)

    def setup(self) -> None:
        """The bridge from scratch: a restarted edge holds no placement until the routers
        place them again (they do when the edge's epoch changes)."""
        c = self.cfg
        self.vsctl("--may-exist", "add-br", c.bridge, "--", "set", "bridge", c.bridge,
                   f"datapath_type={c.datapath}", "fail_mode=secure", "protocols=OpenFlow13")
        for port in c.ports:
            self.vsctl("--may-exist", "add-port", c.bridge, port.name,
                       *(["--", "set", "interface", port.name, "type=tap"] if port.tap else []))
        for port in c.ports:
            self.vsctl("clear", "port", port.name, "qos")
        self.vsctl("--", "--all", "destroy", "qos", "--", "--all", "destroy", "queue")
        for port in c.ports:
            if port.queue_device:
                try:        # an earlier run's tree and filters go
                    self.run(["tc", "qdisc", "del", "dev", port.queue_device, "root"], None)
                except RuntimeError:
                    pass
                self.run(["tc", "-batch", "-"], "\n".join(tc_tree(c, port)) + "\n")
            else:
                self.vsctl(*qos_command(c, port))
        lines = ["priority=0,actions=NORMAL"]
        for h in c.households:
            lines += household_flows(h)
        self.ofctl("del-flows", c.bridge)
        self.ofctl("add-flows", c.bridge, "-", stdin="\n".join(lines) + "\n")
        if c.tc_classifies or any(p.queue_device for p in c.ports):
            self._wait_for_htb()
            for h in c.households:
                self._tc_household(h)

    def _wait_for_htb(self) -> None:
        """ovs-vswitchd writes the HTB tree after the transaction returns: wait for it."""
        last = classid(queue_id(self.cfg.households[-1], "default")) if self.cfg.households else classid(0)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if all(f"class htb {last} " in
                   self.run(["tc", "class", "show", "dev", p.queues_on], None) for p in self.cfg.ports):
                return
            time.sleep(0.05)
        raise RuntimeError("ovs-vswitchd did not make the HTB queues in 20 s")

    def _tc_household(self, h: Household) -> None:
        batch = []
        for port in self.cfg.ports:
            for net in h.addresses:
                v = net.version
                proto, kw = ("ip", "ip") if v == 4 else ("ipv6", "ip6")
                for side in ("src", "dst"):
                    batch.append(f"filter add dev {port.queues_on} parent 1: protocol {proto} "
                                 f"prio {tc_prio(h, v, False)} "
                                 f"u32 match {kw} {side} {net} classid {classid(queue_id(h, 'default'))}")
        self.run(["tc", "-batch", "-"], "\n".join(batch) + "\n")

    def apply_placements(self, h: Household, placements: list[Placement], changed: list[Placement],
                         removed: list[Placement]) -> None:
        """The flow table after a change of `changed`/`removed`; with the tc classifier the
        household's u32 filters are rewritten from `placements` (its whole list)."""
        for p in removed:
            self.ofctl("del-flows", self.cfg.bridge, f"cookie={cookie(h, p.id):#x}/-1")
        if changed:
            self.ofctl("add-flows", self.cfg.bridge, "-",
                       stdin="\n".join(line for p in changed for line in placement_flows(h, p)) + "\n")
        if self.cfg.tc_classifies or any(p.queue_device for p in self.cfg.ports):
            batch = []
            for port in self.cfg.ports:
                for v in (4, 6):
                    batch.append(f"filter del dev {port.queues_on} parent 1: prio {tc_prio(h, v, True)}")
            try:
                self.run(["tc", "-force", "-batch", "-"], "\n".join(batch) + "\n")
            except RuntimeError as exc:     # none there yet: the household's first placement
                if "not found" not in str(exc):
                    raise
            batch = []
            for port in self.cfg.ports:
                for p in placements:
                    proto = "ip" if p.flow.src.version == 4 else "ipv6"
                    for f in (p.flow, p.flow.reverse()):
                        batch.append(f"filter add dev {port.queues_on} parent 1: protocol {proto} "
                                     f"prio {tc_prio(h, f.src.version, True)} u32 {_u32(f)} "
                                     f"classid {classid(queue_id(h, p.queue))}")
            if batch:
                self.run(["tc", "-batch", "-"], "\n".join(batch) + "\n")

    def placement_counters(self, h: Household) -> dict[int, tuple[int, int]]:
        """placement id -> (packets, bytes) the flow table counted, both directions."""
        out = self.ofctl("dump-flows", self.cfg.bridge, f"cookie={h.index << 32:#x}/0xffffffff00000000")
        counts: dict[int, tuple[int, int]] = {}
        for m in FLOW_COUNTERS.finditer(out):
            pid = int(m.group(1), 16) & 0xFFFFFFFF
            if pid:
                pk, by = counts.get(pid, (0, 0))
                counts[pid] = (pk + int(m.group(2)), by + int(m.group(3)))
        return counts

    def queue_stats(self, h: Household) -> dict[str, dict[str, int]]:
        """Per queue of the household, summed over the shaped ports: packets, bytes, drops."""
        want = {classid(queue_id(h, q)): q for q in QUEUES}
        stats = {q: {"packets": 0, "bytes": 0, "drops": 0} for q in QUEUES}
        for port in self.cfg.ports:
            for m in CLASS_STATS.finditer(self.run(["tc", "-s", "class", "show", "dev", port.queues_on], None)):
                q = want.get(m.group(1))
                if q:
                    stats[q]["bytes"] += int(m.group(2))
                    stats[q]["packets"] += int(m.group(3))
                    stats[q]["drops"] += int(m.group(4))
        return stats
