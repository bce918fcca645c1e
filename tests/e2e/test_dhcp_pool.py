"""End to end: a small pool that runs out. A forgotten device's /30 goes back to the pool,
but only once the lease it had would have ended (the device may still believe it holds the
address), also when the controller restarts meanwhile; until then a new device gets no
offer, and no device that holds a block loses it. Real udhcpc on a real Open vSwitch,
homework-dhcpd answering (the default)."""
from __future__ import annotations

import json
import time

import pytest

from conftest import emulated_home
from homelab import BARE, Home

POOL = "10.2.0.0/28"      # four /30 blocks
PENDING_LEASE = 45        # room for a controller restart inside the half a lease that is left


@pytest.fixture(scope="module")
def home():
    yield from emulated_home({"controller": {"components": list(BARE)},
                              "lan": {"pool": POOL}, "dhcp": {"pending_lease": PENDING_LEASE}},
                             internet=False, hwdb=False)


def stats(home: Home) -> dict:
    res = home.homework("--json", "stats")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout).get("dhcp", {})


def lease_of(home: Home, mac: str) -> dict:
    return next(x for x in json.loads(home.homework("--json", "leases").stdout) if x["mac"] == mac)


def test_a_forgotten_devices_block_goes_to_a_new_device_once_its_lease_would_have_ended(home: Home):
    """The block stays held across a controller restart: the hold is persisted."""
    devices = home.add_devices(4)
    for dev in devices:
        dev.start_udhcpc()
    addresses = {dev.name: dev.wait_for_lease(timeout=30).ip for dev in devices}
    assert len(set(addresses.values())) == 4            # the whole pool, one block each

    gone, kept = devices[0], devices[1:]
    gone.stop_dhcp()                                     # no release: it still believes in its lease
    lease_end = lease_of(home, gone.mac)["expires"]
    out = home.homework("forget", gone.mac)
    assert out.returncode == 0, out.stderr
    home.restart_controller()

    newcomer = home.add_device()
    newcomer.start_udhcpc()
    # udhcpc renews at half its lease: at least 22 s were left at the forget
    assert lease_end - time.time() > 4
    time.sleep(lease_end - time.time() - 2)
    assert newcomer.lease() is None, "a block was offered while its old holder's lease still ran"
    assert stats(home).get("exhausted", 0) >= 1          # asked, and told the pool had nothing
    lease = newcomer.wait_for_lease(timeout=max(5, lease_end - time.time()) + 25)
    assert lease.ip == addresses[gone.name]
    assert lease.time >= lease_end - 1
    for dev in kept:                                    # nobody lost a block to it
        assert lease_of(home, dev.mac)["ip"] == addresses[dev.name]
