import ipaddress

import pytest

from homework.components.dhcp.allocator import RESERVED, Allocator, PoolExhausted
from conftest import quarantined


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
    a.allocate("m1", now=0)
    a.set_expiry("m1", 100)
    a.allocate("m2", now=0)
    a.set_expiry("m2", 50)
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
    for mac in ("m1", "m2", "m3", "m4"):
        a.set_expiry(mac, 1000)                             # live leases: not reclaimed
    a.unreserve(3, until=30)                                 # its claim refused: offered a 30 s lease
    assert a.reserved() == [1] and a.owner(3) is None
    assert a.allocate("m6", now=0).index == 6               # not handed out again while fresh ones last
    a.set_expiry("m6", 1000)
    assert a.reserve(5, now=0) == [7]                       # only what the pool has
    with pytest.raises(PoolExhausted):
        a.allocate("m7", now=29)                            # the device may still think it holds block 3
    assert a.allocate("m7", now=30).index == 3              # then it comes back


def test_a_forgotten_macs_block_comes_back_once_its_lease_would_have_ended():
    reclaimed = []
    a = Allocator(ipaddress.IPv4Network("10.9.0.0/29"), on_reclaim=reclaimed.append)   # two blocks
    a.allocate("m1", now=0)
    a.set_expiry("m1", 100)
    a.allocate("m2", now=0)
    a.set_expiry("m2", 500)
    a.forget("m1")                                          # e.g. forgotten on the Guest Board
    with pytest.raises(PoolExhausted):
        a.allocate("m3", now=99)                            # its lease runs till 100
    assert a.allocate("m3", now=100).index == 0 and a.block_for("m2").index == 1
    assert reclaimed == []                                  # nobody's block was taken
    a.set_expiry("m3", 200)
    a.forget("m3")
    a.forget("m2")
    assert a.allocate("m4", now=200).index == 0             # the one whose hold ended first
    a.set_expiry("m4", 1000)
    with pytest.raises(PoolExhausted):
        a.allocate("m5", now=200)                           # m2's lease ran till 500
    assert a.allocate("m5", now=500).index == 1


def test_a_block_nobody_holds_is_reused_before_a_known_devices_lapsed_one():
    reclaimed = []
    a = Allocator(ipaddress.IPv4Network("10.9.0.0/29"), on_reclaim=reclaimed.append)   # two blocks
    a.allocate("known", now=0)
    a.set_expiry("known", 10)  # lapsed at 10, keeps its block if it can
    a.allocate("gone", now=0)
    a.set_expiry("gone", 20)
    a.forget("gone")
    assert a.allocate("new", now=50).index == 1 and reclaimed == []
    assert a.block_for("known").index == 0


def test_every_hold_and_its_end_is_told_for_persisting():
    told: dict[int, float] = {}

    def on_hold(index, until):
        if until is None:
            told.pop(index, None)
        else:
            told[index] = until

    a = Allocator(ipaddress.IPv4Network("10.9.0.0/28"), on_hold=on_hold)     # four blocks
    a.reserve(2, now=0)
    assert told == {0: RESERVED, 1: RESERVED}
    a.claim("m1", 0)
    a.set_expiry("m1", 40)
    a.unreserve(1, until=30)                                 # offered, not claimed
    assert told == {1: 30}
    a.forget("m1")                                           # held till its lease would have ended
    assert told == {0: 40, 1: 30}
    assert a.take("m2", 0).index == 0 and told == {1: 30}    # ACKed on it meanwhile: m2's
    a.allocate("m3", now=0)
    a.allocate("m4", now=0)  # blocks 2 and 3
    assert a.allocate("m5", now=31).index == 1 and told == {}   # the pool ran out: the ended hold
    a.set_expiry("m3", 50)
    a.decline("m3", now=10, quarantine_seconds=100)
    assert told == {2: 110}
    # what a restart reloads is held again, but never over a restored assignment
    b = Allocator(ipaddress.IPv4Network("10.9.0.0/28"))
    b.restore("m2", 0, expires=60)
    assert b.restore_hold(2, 110) and quarantined(b, 2, now=20)
    assert not b.restore_hold(0, 110) and not b.restore_hold(9, 110)
