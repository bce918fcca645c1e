"""A new lease's ACK reaches the switch before the flows routing installs for it, and a
device new since the switch connected costs no flow deletes (only a reconnect's resync
does, since the switch may hold an earlier run's flows)."""
from homework.components.dhcp import message as m
from homework import pipeline as L
from homework.flows import Datapath, FlowDelete, FlowMod, PacketOut
from test_dhcp_server import MAC, join


def test_ack_goes_out_before_the_new_devices_flows(core):
    start = len(core.switch.messages)
    offer, ack = join(core)
    sent = core.switch.messages[start:]
    outs = [i for i, d in enumerate(sent) if isinstance(d, PacketOut)]
    flows = [i for i, d in enumerate(sent) if isinstance(d, (FlowMod, FlowDelete))]
    assert len(outs) == 2 and flows                     # OFFER, ACK; then the flows
    assert outs[1] < min(flows)
    assert ack.msg_type == m.ACK


def test_new_device_gets_flow_adds_only(core):
    start = len(core.switch.messages)
    join(core)
    sent = core.switch.messages[start:]
    assert not [d for d in sent if isinstance(d, FlowDelete)]
    # ARP 2 + gateway 3 (to it, back from it, back from elsewhere: DNS answers only); the
    # services themselves are table 5's shared flows
    assert len([d for d in sent if isinstance(d, FlowMod)]) == 5


def test_resync_after_switch_reconnect_still_clears_each_device(core):
    join(core)
    start = len(core.switch.messages)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    index = core.ctx.component("dhcp").alloc.block_for(MAC).index
    deleted = {d.cookie for d in core.switch.messages[start:] if isinstance(d, FlowDelete)}
    assert {L.routing_cookie(kind, index) for kind in (L.KIND_FORWARD, L.KIND_ACCOUNT, L.KIND_LEARNED)} <= deleted
