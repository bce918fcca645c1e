"""The fake switch is strict (as Faucet's fake table is) and, in adapter mode, runs every
decision through the os-ken adapter and back."""
import pytest

import ofwire
from fakeswitch import FakeSwitch, OverlapError, matches_overlap
from homework import flows as F
from homework import pipeline as P

IP = F.ETH_IP


def flow(match, actions=(), priority=100, table_id=0, **kw):
    return F.FlowMod(match=match, actions=actions, priority=priority, table_id=table_id, **kw)


def test_overlapping_flows_at_one_priority_raise():
    sw = FakeSwitch()
    sw.apply([flow({"eth_type": IP, "ipv4_src": "10.2.0.2"}, (F.Output(1),))])
    with pytest.raises(OverlapError, match="priority 100"):
        sw.apply([flow({"eth_type": IP, "ip_proto": 17}, (F.Output(2),))])


def test_masked_fields_overlap_when_the_common_bits_agree():
    sw = FakeSwitch()
    sw.apply([flow({"eth_type": IP, "ipv4_dst": ("10.2.0.0", "255.255.0.0")}, ())])
    with pytest.raises(OverlapError):
        sw.apply([flow({"eth_type": IP, "ipv4_dst": "10.2.3.4"}, (F.Output(1),))])
    sw.apply([flow({"eth_type": IP, "ipv4_dst": "10.3.0.1"}, (F.Output(1),))])   # outside the /16
    assert matches_overlap({"eth_dst": ("01:00:00:00:00:00", "01:00:00:00:00:00")},
                           {"eth_dst": "01:00:5e:00:00:fb"})
    assert not matches_overlap({"eth_dst": ("01:00:00:00:00:00", "01:00:00:00:00:00")},
                               {"eth_dst": "02:00:00:00:00:01"})


def test_disjoint_other_priority_other_table_and_exact_replacement_are_fine():
    sw = FakeSwitch()
    sw.apply([flow({"eth_type": IP, "ipv4_src": "10.2.0.2"}, (F.Output(1),))])
    sw.apply([flow({"eth_type": IP, "ipv4_src": "10.2.0.6"}, (F.Output(2),))])          # disjoint
    sw.apply([flow({"eth_type": IP}, (F.Output(3),), priority=99)])                       # lower priority
    sw.apply([flow({"eth_type": IP}, (F.Output(3),), table_id=1)])                        # other table
    sw.apply([flow({"eth_type": IP, "ipv4_src": "10.2.0.2"}, (F.Output(4),))])          # replacement
    assert len(sw.flows) == 4
    assert sw.lookup({"eth_type": IP, "ipv4_src": "10.2.0.2"}).actions == (F.Output(4),)


def test_overlap_with_the_same_treatment_is_not_ambiguous():
    sw = FakeSwitch()
    sw.apply([flow({"eth_type": IP, "ipv4_src": "10.2.0.2"}, ())])
    sw.apply([flow({"eth_type": IP, "ip_proto": 17}, ())])
    assert len(sw.flows) == 2


def test_unknown_decisions_and_actions_raise():
    sw = FakeSwitch()
    with pytest.raises(TypeError, match="unknown decision"):
        sw.apply([object()])
    with pytest.raises(TypeError, match="unknown action"):
        sw.apply([flow({"eth_type": IP}, (object(),))])
    with pytest.raises(TypeError, match="unknown action"):
        sw.apply([F.PacketOut(data=b"x", actions=("flood",))])


def sample_decisions():
    learn = F.Learn(table_id=10, fields=(("eth_type", IP), ("ip_proto", 6), ("ipv4_src", None), ("tcp_dst", None)),
                    priority=100, idle_timeout=30, fin_idle_timeout=2, cookie=0x0304_0000_0000_0001,
                    send_flow_removed=True)
    return [
        flow({"in_port": 3, "eth_src": "02:00:00:00:00:01", "eth_type": IP, "ipv4_src": "10.2.0.2"},
             (F.SetField("eth_src", "02:00:00:00:00:fe"), F.DecTTL(), F.Resubmit(10), F.Output(F.LOCAL), learn),
             priority=30000, table_id=0, idle_timeout=5, hard_timeout=7, cookie=0x0300_0000_0000_0009,
             send_flow_removed=True, goto=20),
        flow({"eth_type": IP, "ipv4_dst": ("10.2.0.0", "255.255.0.0"), "tcp_flags_nxm": (2, 2), "ip_proto": 6}, ()),
        F.FlowDelete(match={"eth_src": "02:00:00:00:00:01"}, cookie=0x0300_0000_0000_0009,
                     cookie_mask=P.COOKIE_MASK_OWNER, table_id=3, strict=True, priority=40),
        F.FlowDelete(cookie=P.COOKIE_DNS, cookie_mask=P.COOKIE_MASK_OWNER),
        F.PacketOut(data=b"\x01\x02\x03", actions=(F.Output(4),), in_port=F.CONTROLLER),
        F.FlowStatsRequest(match={"eth_type": IP}, cookie=5, cookie_mask=0xFF, table_id=10),
        F.AggregateStatsRequest(cookie=P.COOKIE_ROUTING, cookie_mask=P.COOKIE_MASK_OWNER),
    ]


@pytest.mark.parametrize("decision", sample_decisions(), ids=lambda d: type(d).__name__)
def test_every_decision_kind_survives_the_adapter(decision):
    back = ofwire.decode(ofwire.encode(decision))
    assert ofwire.canonical(back) == ofwire.canonical(decision)
    FakeSwitch(adapter=True).apply([decision])


def test_adapter_mode_catches_a_field_the_adapter_drops(monkeypatch):
    """If the message builder lost a field, adapter mode must fail the test that sent it."""
    import homework.adapter.osken_app as app
    real = app.to_message

    def forgets_the_goto(dp, decision):
        if isinstance(decision, F.FlowMod) and decision.goto is not None:
            decision = F.FlowMod(**{**decision.__dict__, "goto": None})
        return real(dp, decision)

    monkeypatch.setattr(ofwire, "to_message", forgets_the_goto)
    sw = FakeSwitch(adapter=True)
    with pytest.raises(ofwire.AdapterMismatch, match="goto"):
        sw.apply([flow({"eth_type": IP}, (F.Output(1),), goto=10)])
    sw.apply([flow({"eth_type": IP}, (F.Output(1),))])   # a flow without goto still passes


def test_adapter_mode_refuses_a_match_field_os_ken_does_not_know():
    with pytest.raises(ofwire.AdapterMismatch):
        FakeSwitch(adapter=True).apply([flow({"no_such_field": 1}, ())])


def test_accounting_upload_and_download_entries_overlap_unless_the_upload_names_its_port():
    """The overlap the strict switch found in routing's accounting (X's upload entry and Y's
    download entry both matched a packet the router sent from X to Y) raises; with the
    upload naming the device's port, as flowsets.account_flows now does, it does not."""
    from homework.pipeline import TABLE_ACCOUNT
    up = flow({"eth_type": IP, "ipv4_src": "10.2.0.2"}, (F.Output(1),), table_id=TABLE_ACCOUNT)
    down = flow({"eth_type": IP, "in_port": F.LOCAL, "ipv4_dst": "10.2.0.6"}, (F.Output(2),), table_id=TABLE_ACCOUNT)
    with pytest.raises(OverlapError):
        FakeSwitch().apply([up, down])
    fixed = flow({"eth_type": IP, "in_port": 1, "ipv4_src": "10.2.0.2"}, (F.Output(1),), table_id=TABLE_ACCOUNT)
    FakeSwitch().apply([fixed, down])
