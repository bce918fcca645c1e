"""Spare router addresses: the .1 of the next free /30s sit on the bridge ahead
of their devices, so new devices take them without an address change, and they are topped
up only once new devices stop coming."""
from homework.components.dhcp import message as m
from homework.components.dhcp.server import EXPIRY_CHECK_SECONDS, SPARES_QUIET_SECONDS
from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip
from test_dhcp_server import join, send

RELAY = "192.0.2.9"


def dhcp(core):
    return core.ctx.component("dhcp")


def test_the_next_free_blocks_are_on_the_bridge_from_the_start(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, spare_router_addresses=4)
    assert core.ctx.host.spares == {"10.2.0.1", "10.2.0.5", "10.2.0.9", "10.2.0.13"}
    assert core.ctx.host.addresses == set()     # no lease yet


def test_a_new_device_takes_a_spare_without_a_change(core):
    spares = set(core.ctx.host.spares)
    assert "10.2.0.1" in spares
    join(core)
    assert core.ctx.host.addresses == {"10.2.0.1/30"}
    assert "10.2.0.1" not in core.ctx.host.spares
    assert core.ctx.host.spares == spares - {"10.2.0.1"}    # not topped up in the burst


def test_spares_are_topped_up_only_once_devices_stop_coming(core, clock):
    size = len(core.ctx.host.spares)
    join(core)
    clock.advance(SPARES_QUIET_SECONDS / 2)
    dhcp(core).expire_leases()
    assert len(core.ctx.host.spares) == size - 1        # a device came just now
    clock.advance(SPARES_QUIET_SECONDS)
    dhcp(core).expire_leases()
    assert len(core.ctx.host.spares) == size
    assert "10.2.0.1" not in core.ctx.host.spares        # the device's block is no spare
    assert min(core.ctx.host.spares, key=lambda a: tuple(map(int, a.split(".")))) == "10.2.0.5"


def test_the_periodic_check_tops_up(core, clock):
    join(core)
    clock.advance(EXPIRY_CHECK_SECONDS)
    for timer in core.timers:
        timer()
    assert "10.2.0.1" not in core.ctx.host.spares
    assert len(core.ctx.host.spares) == core.ctx.config.spare_router_addresses


def test_without_spares_every_device_is_a_change(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, spare_router_addresses=0)
    assert core.ctx.host.spares == set()
    join(core)
    assert core.ctx.host.addresses == {"10.2.0.1/30"}


def test_a_relayed_client_in_a_spare_block_takes_the_spare_off(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, dhcp_relays=(RELAY,))
    mac = "02:00:00:00:01:01"
    [(offer, *_)] = send(core, dhcp_frame(mac, m.DISCOVER, giaddr=RELAY), 1)
    block_router = offer.server_id
    assert block_router in core.ctx.host.spares
    send(core, dhcp_frame(mac, m.REQUEST, giaddr=RELAY,
                          options=[opt_ip(50, offer.yiaddr), opt_ip(54, offer.server_id)]), 1)
    # its gateway is the relay: no address of ours in its subnet, spare or not
    assert block_router not in core.ctx.host.spares
    assert core.ctx.host.addresses == set()


def test_a_restarted_controller_keeps_leased_and_spare_addresses(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, spare_router_addresses=2)
    join(core)
    core.state.close()
    again = make_core(tmp_path, clock=clock, spare_router_addresses=2)
    assert again.ctx.host.addresses == {"10.2.0.1/30"}
    assert again.ctx.host.spares == {"10.2.0.5", "10.2.0.9"}


def test_a_crowd_that_keeps_coming_gets_its_spares_topped_up_once_half_are_taken(tmp_path, clock):
    core = make_core(tmp_path, clock=clock, spare_router_addresses=8)
    for i in range(5):                       # five of eight taken, devices still coming
        join(core, mac=f"02:00:00:00:07:{i:02x}")
    dhcp(core).expire_leases()
    assert len(core.ctx.host.spares) == 8
