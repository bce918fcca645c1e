
import sqlite3

import pytest

from homework.config import Config
from homework.core import Core
from fakehost import FakeHost
from homework.leases import Lease
from homework.state import StateStore
from fakeswitch import FakeSwitch


class Clock:
    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def make_core(tmp_path, components=("dhcp", "routing"), clock=None, switch=None, host=None, **overrides):
    overrides.setdefault("api_check_answers", True)    # every API answer is checked against its declared shape
    # IPv6 is on in the shipped configuration; a unit test turns it on when it is about it
    overrides.setdefault("ipv6_enabled", False)
    config = Config(state_dir=tmp_path, components=tuple(components),
                    control_socket=tmp_path / "control.sock", **overrides)
    switch = switch or FakeSwitch(adapter=True)   # strict table, and every decision through the os-ken adapter
    timers, periods = [], []
    core = Core(config, state=StateStore(config.state_db), host=host or FakeHost(),
                send=switch.apply, spawn_periodic=lambda s, fn: (timers.append(fn), periods.append((s, fn))),
                clock=clock or Clock())
    core.timers = timers
    core.periods = periods      # (seconds, fn) of each timer: a test runs those due within a time
    core.switch = switch
    core.load_components()
    return core


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def core(tmp_path, clock):
    core = make_core(tmp_path, clock=clock)
    core.datapath_up_default = True
    from homework.flows import Datapath
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


def stored_lease(mac, block, expires, port, hostname="", relay=""):
    """A Lease as the state store sees it (it keeps mac, block, expires, port, hostname,
    relay; the addresses follow from the pool and are not stored)."""
    return Lease(mac=mac, index=block, network="", router="", ip="", broadcast="", expires=expires,
                 port=port, hostname=hostname, relay=relay)


def on_disk(path, sql):
    """Rows as they are in the database file (another connection: no queued writes)."""
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def quarantined(alloc, index: int, now: float) -> bool:
    """Is this block held back (a DECLINE, a forgotten device's lease, a reserve) at `now`?"""
    return alloc._quarantine.get(index, 0) > now
