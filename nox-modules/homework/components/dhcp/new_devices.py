"""homework-dhcpd's own offers to never-seen devices (dhcpd/src/newdev.rs), the controller's
side: the blocks kept in reserve for the daemon, what a (re)started daemon is told, and the
claims its offers make.

The controller still owns every lease. It tells the daemon every MAC it decides itself (the
registry's devices, whatever their state, and every MAC holding a block), so the daemon
offers a reserved block only to a MAC nobody knows; each such offer comes back as a claim,
which makes the block the MAC's, or is refused when the controller decided otherwise
meanwhile.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from ...macaddr import BadMac, normalize
from .admission import NewMacGate
from .allocator import Allocator
from .dhcpd_link import DhcpdLink, known_messages


class NewDeviceOffers:
    """The reserve and the claims; `link()` is the running daemon's link (None without one),
    `sync(mac)` puts the controller's own entry for `mac` into the daemon (or removes it)."""

    def __init__(self, ctx, alloc: Allocator, gate: NewMacGate, log: logging.Logger,
                 link: Callable[[], DhcpdLink | None], sync: Callable[[str], None]):
        self.ctx = ctx
        self.alloc = alloc
        self.gate = gate
        self.log = log
        self.link = link
        self.sync = sync

    @property
    def enabled(self) -> bool:
        return self.ctx.config.daemon_new_offers > 0

    def setup(self) -> list[dict]:
        """What a (re)started daemon is told before the table, in this order: every MAC
        the controller decides itself, the blocks it may offer never-seen devices, and the
        new-MAC gate's figures (until which it offers nothing of its own)."""
        if not self.enabled:
            return []
        config = self.ctx.config
        # A daemon before this one (it exited) may have offered or ACKed reserved blocks
        # and not lived to tell: none of them goes to anyone until such a lease would have
        # ended, and this daemon gets fresh ones. (After a controller restart there are none:
        # the last run's reserve is held already, DhcpServer._restore_holds.)
        until = self.ctx.now() + config.pending_lease
        for index in self.alloc.reserved():
            self.alloc.unreserve(index, until)
        messages = known_messages(sorted(self.known_macs()))
        self.top_up(tell=False)
        messages.append({"op": "reserve", "ips": [self.alloc.block(i).device for i in self.alloc.reserved()]})
        messages.append({"op": "new_macs", "burst": config.new_macs_burst,
                         "per_second": config.new_macs_per_minute / 60.0, "lease_time": config.pending_lease})
        return messages

    def known_macs(self) -> set[str]:
        """The registry's devices (whatever their state, pre-approved too) and every MAC
        holding a block: their DISCOVERs are this controller's to answer."""
        macs = set(self.alloc.assignments())
        for device in self.ctx.state.devices():
            try:
                macs.add(normalize(device.mac))
            except BadMac:
                pass
        return macs

    def know(self, mac: str) -> None:
        """`mac` was seen or decided on (pre-approval too): from now on ours to answer."""
        link = self.link()
        if link is not None and self.enabled:
            try:
                link.know([normalize(mac)])
            except BadMac:
                pass

    def top_up(self, tell: bool = True) -> None:
        """Keep `[dhcp] daemon_new_offers` blocks reserved for the daemon."""
        missing = self.ctx.config.daemon_new_offers - len(self.alloc.reserved())
        if missing > 0:
            added = self.alloc.reserve(missing, self.ctx.now())
            link = self.link()
            if tell and added and link is not None:
                link.reserve([self.alloc.block(i).device for i in added])

    def claim(self, mac: str, port: int, reserved, acked: bool) -> bool:
        """The daemon offered (or ACKed) `mac` the reserved block of `reserved`: it becomes
        the MAC's block, unless the controller decided otherwise meanwhile (it gave the MAC
        a block of its own, or the MAC was blacklisted). Then the daemon's entry is replaced
        by the controller's own (or removed), and the block is held back for the pending
        lease the device was offered (it may believe it holds it), then goes back to the
        pool as a declined block does."""
        block = self.alloc.block_of_address(reserved) if isinstance(reserved, str) else None
        if block is None or block.device != reserved:
            self.ctx.count("dhcp.dhcpd_bad_claim")
            self.sync(mac)
            return False
        held = self.alloc.block_for(mac)
        if held is not None and held.index == block.index:
            return True          # claimed by an earlier note of the same offer
        # A reserved block is claimed. So is, on an ACK, one claimed by its offer and freed
        # since while nobody else took it (the device was forgotten in between, e.g. by the
        # pending cap in a flood of new MACs): it is configured with it now, and is seen again.
        kept = held is None and self.ctx.state.device_state(mac) != "blacklisted" \
            and (self.alloc.claim(mac, block.index) is not None
                 or (acked and self.alloc.take(mac, block.index) is not None))
        if not kept:
            self.ctx.count("dhcp.dhcpd_claim_refused")
            self.log.info("the daemon's offer of %s to %s (%s) is not kept: the controller decided otherwise",
                          reserved, mac, "acked" if acked else "offered")
            self.alloc.unreserve(block.index, self.ctx.now() + self.ctx.config.pending_lease)
            self.sync(mac)
            self.top_up()
            return False
        self.gate.charge(port, self.ctx.now())
        self.ctx.count("dhcp.dhcpd_new_offers")
        self.top_up()
        return True
