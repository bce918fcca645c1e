"""The pipeline plan (nox-modules/homework/pipeline.py) is consistent: no two priority
bands of one table overlap, and every named priority lies in its owner's band."""
import itertools

from homework import pipeline as P


def test_no_two_bands_of_a_table_overlap():
    for a, b in itertools.combinations(P.BANDS, 2):
        if a.table == b.table:
            assert a.high < b.low or b.high < a.low, f"{a} overlaps {b}"


def test_every_priority_is_inside_its_owners_band():
    bands = {b.owner: b for b in P.BANDS}
    assert set(P.PRIORITIES) == set(bands)
    for owner, priorities in P.PRIORITIES.items():
        for priority in priorities:
            assert priority in bands[owner], f"{owner}: {priority} outside {bands[owner]}"


def test_cookie_owners_are_distinct_bytes():
    owners = [P.COOKIE_DHCP, P.COOKIE_ROUTING, P.COOKIE_DNS, P.COOKIE_EAPOL, P.COOKIE_USAGE,
              P.COOKIE_SCHEDULE, P.COOKIE_SATELLITE]
    assert len({o & P.COOKIE_MASK_OWNER for o in owners}) == len(owners)
    assert all(o & ~P.COOKIE_MASK_OWNER == 0 for o in owners)


def test_routing_cookie_round_trip():
    c = P.routing_cookie(P.KIND_FORWARD, 41)
    assert P.is_routing(c) and P.kind_of(c) == P.KIND_FORWARD and P.device_of(c) == 41
    assert P.device_of(P.routing_cookie(P.KIND_SHARED)) is None
