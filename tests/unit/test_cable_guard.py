"""A satellite's cable that loses its carrier is locked to its management VLAN until the
satellite connects again (adapter/cable_guard.py): the decision on Open vSwitch's
link_resets counts, the monitor's JSON lines, and the ovs-vsctl arguments."""
import json

from homework.adapter.cable_guard import CableGuard, CableWatch, interface_rows
from homework.satellites import cable_lock_commands, cable_unlock_commands, parse

SATS = parse(["00000000000000a1:sat1up:sat1cable", "00000000000000a2:sat2up:sat2cable",
              "00000000000000b5:sat5up:hws1p7"])      # the third plugs into satellite 1's port 7


def test_a_carrier_change_locks_the_cable_once_and_a_session_opens_it():
    guard = CableGuard(SATS)
    assert set(guard.cables) == {"sat1cable", "sat2cable"}          # a tree's child has no cable of ours
    assert guard.observe("sat1cable", 3) is None                    # first sight: the baseline
    assert guard.observe("eth7", 9) is None and guard.observe("hws1p7", 9) is None
    locked = guard.observe("sat1cable", 4)                          # unplugged (or plugged in)
    assert locked is not None and locked.index == 1 and guard.locked == {1}
    assert guard.observe("sat1cable", 5) is None                    # already locked: not again
    assert guard.observe("sat2cable", 0) is None                    # the other cable is its own
    guard.session_started(SATS[0])                                  # the satellite is back, with its certificate
    assert guard.locked == set()
    assert guard.observe("sat1cable", 5) is None                    # its own replug counted in
    assert guard.observe("sat1cable", 6).index == 1                 # a new drop locks again
    guard.session_started(SATS[2])                                  # a child's session opens nothing
    assert guard.locked == {1}


def test_the_monitors_lines_give_each_interfaces_new_count():
    initial = {"data": [["u1", "initial", "sat1cable", 1, ], ["u2", "initial", "br0", ["set", []]]],
               "headings": ["row", "action", "name", "link_resets"]}
    assert interface_rows(initial) == [("sat1cable", 1)]
    change = {"data": [["u1", "old", None, 1], ["", "new", "sat1cable", 2]],
              "headings": ["row", "action", "name", "link_resets"]}
    assert interface_rows(change) == [("sat1cable", 2)]
    assert interface_rows({"headings": ["row"], "data": [["x"]]}) == []
    assert interface_rows({"headings": ["row", "action", "name", "link_resets"], "data": [["a"], "b"]}) == []

    seen = []
    watch = CableWatch(lambda name, resets: seen.append((name, resets)))
    for line in (json.dumps(initial).encode(), b"not json", b"[1, 2]", json.dumps(change).encode()):
        watch._line(line)
    assert seen == [("sat1cable", 1), ("sat1cable", 2)]


def test_the_lock_leaves_the_management_vlan_and_the_unlock_clears_it():
    assert cable_lock_commands(SATS[1]) == ["set", "port", "sat2cable", "trunks=512"]
    assert cable_unlock_commands(SATS[1]) == ["clear", "port", "sat2cable", "trunks"]
    assert cable_unlock_commands(SATS[2]) == []
