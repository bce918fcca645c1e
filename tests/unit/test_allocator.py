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
