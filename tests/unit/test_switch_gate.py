"""The controller drives one switch: the first datapath whose LOCAL port is the configured
bridge; another datapath is refused, a reconnection of the same one is not."""
from homework.adapter.switch_gate import LOCAL_PORT, SwitchGate

OURS = {"br0": LOCAL_PORT, "eth1": 1, "wlan0": 2}


def test_the_bridge_is_admitted_and_a_second_datapath_is_refused():
    gate = SwitchGate("br0")
    assert gate.admit(0x1, OURS) == (True, "")
    ok, why = gate.admit(0x2, {"br0": LOCAL_PORT, "p1": 1})       # same name, other switch
    assert not ok and "0000000000000001" in why
    assert gate.admit(0x1, OURS) == (True, "")                      # ours again (a reconnection)


def test_a_datapath_that_is_not_the_bridge_is_refused_even_first():
    gate = SwitchGate("br0")
    ok, why = gate.admit(0x2, {"rogue0": LOCAL_PORT, "br0": 3})
    assert not ok and "'br0'" in why and gate.dpid is None
    assert gate.admit(0x1, OURS) == (True, "")                      # the bridge still gets in


def test_a_refused_switch_is_reported_once():
    gate = SwitchGate("br0")
    assert gate.first_refusal(0x2) and not gate.first_refusal(0x2) and gate.first_refusal(0x3)


def test_once_the_bridge_has_gone_it_may_come_back_under_another_dpid():
    gate = SwitchGate("br0")
    assert gate.admit(0x1, OURS)[0]
    gate.release(0x2)                                               # not ours: changes nothing
    assert not gate.admit(0x3, OURS)[0]
    gate.release(0x1)
    assert gate.admit(0x3, OURS) == (True, "")                      # re-created with another MAC
    assert not gate.admit(0x1, OURS)[0]
