"""Running a plan: `tc -force -batch -` and `nft -f -`, in an order that never points a
packet at a class that is not there yet (new classes, then the nftables maps, then the
old classes go). `run_tool` is the one place that starts a process (tests replace it)."""
from __future__ import annotations

import logging
import subprocess

from .plan import OTHER_LEAF, TABLE, Plan, nft_delete, tc_deletes

log = logging.getLogger("homework.qos.apply")


def run_tool(argv: list[str], text: str = "") -> tuple[int, str]:
    """(exit status, stdout + stderr). A missing tool is status 127, not an exception."""
    try:
        res = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return res.returncode, res.stdout + res.stderr


def choose_leaf(dev: str) -> str:
    """fq_codel where the kernel has it (the image), else a byte-bounded bfifo (this dev kernel).
    Tried on the root's own default leaf, which is there once the tree is. Without a handle:
    `replace` onto an existing handle of another kind is refused even where fq_codel exists
    (the image's boot test caught that); the caller then rebuilds the tree with the leaf."""
    rc, _ = run_tool(["tc", "qdisc", "replace", "dev", dev, "parent", f"1:{OTHER_LEAF:x}", "fq_codel"])
    return "fq_codel" if rc == 0 else "bfifo"


class Shaper:
    """What is installed now, so the next plan removes only what it no longer has."""

    def __init__(self):
        self.installed: dict[str, set[int]] = {}     # dev -> leaf minors
        self.error = ""

    def reset(self, devs: list[str]) -> None:
        """Start clean: an earlier run's tree and table go (a restart may change anything)."""
        for dev in devs:
            run_tool(["tc", "qdisc", "del", "dev", dev, "root"])
        run_tool(["nft", "-f", "-"], nft_delete())
        self.installed.clear()

    def apply(self, plan: Plan, devs: dict[str, str]) -> bool:
        """`devs`: direction -> interface. True when both tools took the whole plan."""
        self.error = ""
        # HTB cannot change its root in place ("Change operation not supported"): a tree
        # not known good is built afresh, one known good only gets `replace`s
        for dev in sorted({devs[d] for (d, _minor) in plan.leaves} - set(self.installed)):
            run_tool(["tc", "qdisc", "del", "dev", dev, "root"])
        lines = [line for line in plan.tc if not any(line.startswith(f"qdisc replace dev {dev} root ")
                                                     for dev in self.installed)]
        rc, out = run_tool(["tc", "-force", "-batch", "-"], "\n".join(lines) + "\n")
        ok = rc == 0
        if not ok:
            self.error = f"tc: {out.strip()[:500]}"
        rc, out = run_tool(["nft", "-f", "-"], plan.nft)
        if rc != 0:
            ok = False
            self.error = (self.error + "; " if self.error else "") + f"nft: {out.strip()[:500]}"
        deletes = []
        wanted: dict[str, set[int]] = {}
        for (direction, minor) in plan.leaves:
            wanted.setdefault(devs[direction], set()).add(minor)
        for dev in set(self.installed) | set(wanted):
            deletes += tc_deletes(dev, self.installed.get(dev, set()), wanted.get(dev, set()))
        if deletes:
            run_tool(["tc", "-force", "-batch", "-"], "\n".join(deletes) + "\n")
        for dev in set(self.installed) - set(wanted):
            run_tool(["tc", "qdisc", "del", "dev", dev, "root"])
        # after a failure nothing is known good: the next plan starts from scratch
        self.installed = wanted if ok else {}
        if not ok:
            log.error("shaping not fully applied: %s", self.error)
        return ok

    def remove(self, devs: list[str]) -> None:
        for dev in sorted(set(self.installed) | set(devs)):
            run_tool(["tc", "qdisc", "del", "dev", dev, "root"])
        run_tool(["nft", "-f", "-"], nft_delete())
        self.installed.clear()

    def learn(self, text: str) -> None:
        if text:
            rc, out = run_tool(["nft", "-f", "-"], text)
            if rc != 0:
                log.warning("adding learned addresses failed: %s", out.strip()[:300])

    @staticmethod
    def app_counters() -> str:
        rc, out = run_tool(["nft", "-j", "list", "counters", "table", "inet", TABLE])
        return out if rc == 0 else ""

    @staticmethod
    def counters(dev: str) -> str:
        rc, out = run_tool(["tc", "-s", "-j", "class", "show", "dev", dev])
        return out if rc == 0 else ""

