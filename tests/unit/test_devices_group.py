"""A decision about a list of devices is one database transaction: every row or none."""
import pytest

from homework.bus import EventBus
from homework.devices import DeviceRegistry
from homework.state import StateStore

MACS = [f"02:00:00:00:07:{i:02x}" for i in range(40)]


def registry(tmp_path):
    state = StateStore(tmp_path / "state.db")
    bus = EventBus()
    heard = []
    bus.subscribe("device", lambda topic, ev: heard.append(ev))
    devices = DeviceRegistry(state, bus, max_pending=1000)
    for mac in MACS:
        devices.seen(mac)
    state.flush(force=True)
    heard.clear()
    return state, devices, heard


def commits(state):
    seen = []
    state.db.set_trace_callback(lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None)
    return seen


def test_a_list_decision_is_one_commit_and_an_event_each(tmp_path):
    state, devices, heard = registry(tmp_path)
    done = commits(state)
    devices.decide_group("permit", MACS + ["02:00:00:00:08:01"])     # and one never seen: pre-approved
    assert done == ["COMMIT"]
    assert [ev.mac for ev in heard] == MACS + ["02:00:00:00:08:01"]
    assert {ev.state for ev in heard} == {"permitted"} and {ev.old_state for ev in heard[:-1]} == {"pending"}
    on_disk = StateStore(tmp_path / "state.db")
    assert {on_disk.get_device(mac).state for mac in MACS} == {"permitted"}
    assert devices.preapproval_port("02:00:00:00:08:01") == ""
    assert devices.pending_count() == 0


def test_a_list_decision_that_fails_midway_changes_nothing(tmp_path, monkeypatch):
    state, devices, heard = registry(tmp_path)
    write = state.set_device_state

    def failing(mac, st, now=None):
        device = write(mac, st, now)
        if mac == MACS[25]:
            raise RuntimeError("the disk went away")
        return device

    monkeypatch.setattr(state, "set_device_state", failing)
    with pytest.raises(RuntimeError):
        devices.decide_group("deny", MACS)
    assert heard == []
    assert {state.get_device(mac).state for mac in MACS} == {"pending"}     # the kept copies too
    assert {StateStore(tmp_path / "state.db").get_device(mac).state for mac in MACS} == {"pending"}
    assert devices.pending_count() == len(MACS)
