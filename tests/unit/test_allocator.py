import ipaddress

import pytest

from homework.components.dhcp.allocator import Allocator, PoolExhausted


def test_distinct_blocks_and_layout():
    a = Allocator(ipaddress.IPv4Network("10.2.0.0/16"))
    blocks = [a.allocate(f"02:00:00:00:00:{i:02x}", now=0) for i in range(50)]
    assert len({b.index for b in blocks}) == 50
    b = blocks[3]
    assert str(b.network).endswith(".12") and b.router.endswith(".13") and b.device.endswith(".14")
    assert b.broadcast.endswith(".15") and b.cidr == "10.2.0.12/30"


def test_same_mac_keeps_block():
    a = Allocator(ipaddress.IPv4Network("10.2.0.0/16"))
    first = a.allocate("02:00:00:00:00:01", now=0)
    a.set_expiry("02:00:00:00:00:01", 10)
    assert a.allocate("02:00:00:00:00:01", now=100) == first


def test_exhaustion_then_reclaim_oldest_expired():
    reclaimed = []
    a = Allocator(ipaddress.IPv4Network("10.9.0.0/29"), on_reclaim=reclaimed.append)   # two blocks
    a.allocate("m1", now=0); a.set_expiry("m1", 100)
    a.allocate("m2", now=0); a.set_expiry("m2", 50)
    with pytest.raises(PoolExhausted):
        a.allocate("m3", now=10)
    block = a.allocate("m3", now=60)        # m2's lease ended first
    assert a.owner(block.index) == "m3" and a.block_for("m2") is None and a.block_for("m1") is not None
    assert reclaimed == ["m2"]              # told, so the server can withdraw what m2 held


def test_preferred_block_and_decline_quarantine():
    a = Allocator(ipaddress.IPv4Network("10.2.0.0/28"))   # four blocks
    assert a.allocate("m1", now=0, preferred=2).index == 2
    a.decline("m1", now=0, quarantine_seconds=100)
    assert a.block_for("m1") is None
    assert a.allocate("m2", now=1, preferred=2).index != 2


def test_block_of_address():
    a = Allocator(ipaddress.IPv4Network("10.2.0.0/16"))
    assert a.block_of_address("10.2.1.6").index == 65
    assert a.block_of_address("192.168.1.1") is None
    assert a.block_of_address("garbage") is None


def test_reserved_blocks_go_only_to_the_macs_that_claim_them():
    a = Allocator(ipaddress.IPv4Network("10.2.0.0/27"))   # eight blocks
    assert a.allocate("m1", now=0).index == 0
    assert a.reserve(3, now=0) == [1, 2, 3]
    assert a.upcoming(5, now=0) == [1, 2, 3, 4, 5]          # their router addresses are spares
    assert a.allocate("m2", now=0).index == 4               # the controller's own: not reserved
    assert a.allocate("m3", now=0, preferred=2).index == 5  # nor when asked for
    assert a.claim("m4", 2).index == 2 and a.owner(2) == "m4" and a.reserved() == [1, 3]
    assert a.claim("m5", 2) is None                         # no longer reserved
    assert a.claim("m1", 3) is None and a.reserved() == [1, 3]   # m1 holds a block
    a.unreserve(3)
    assert a.reserved() == [1] and a.owner(3) is None
    assert a.allocate("m6", now=0).index == 6               # an unreserved block is not handed out again
    assert a.reserve(5, now=0) == [7]                       # only what the pool has
