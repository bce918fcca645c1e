"""The os-ken adapter writes the messages of one hub turn to the switch in one send, and
holds flow additions that come close behind a write of flow changes."""
from homework.adapter.osken_app import SendBatcher


class FakeDatapath:
    def __init__(self):
        self.sent: list[bytes] = []

    def send(self, buf):
        self.sent.append(buf)
        return True


def test_messages_of_one_turn_go_out_in_one_send_in_order():
    later = []
    out = SendBatcher(later.append)
    dp = FakeDatapath()
    for i in range(5):
        out.add(dp, bytes([i]) * 3)
    assert dp.sent == [] and len(later) == 1          # one flush scheduled, nothing sent yet
    later.pop()()
    assert dp.sent == [b"\x00\x00\x00\x01\x01\x01\x02\x02\x02\x03\x03\x03\x04\x04\x04"]
    out.add(dp, b"x")
    assert len(later) == 1                             # the next turn schedules again
    later.pop()()
    assert dp.sent[-1] == b"x"


def test_a_full_batch_is_sent_at_once():
    later = []
    out = SendBatcher(later.append, limit=10)
    dp = FakeDatapath()
    out.add(dp, b"a" * 6)
    out.add(dp, b"b" * 6)
    assert dp.sent == [b"a" * 6 + b"b" * 6]
    later.pop()()                                      # the scheduled flush finds nothing
    assert len(dp.sent) == 1


def test_a_new_switch_connection_never_gets_the_old_ones_messages():
    later = []
    out = SendBatcher(later.append)
    old, new = FakeDatapath(), FakeDatapath()
    out.add(old, b"old")
    out.add(new, b"new")
    later.pop()()
    assert old.sent == [b"old"] and new.sent == [b"new"]


class HoldClock:
    """A fake clock and the timed spawns SendBatcher asks for."""

    def __init__(self):
        self.now = 100.0
        self.timers: list = []

    def __call__(self):
        return self.now

    def spawn_after(self, seconds, fn):
        self.timers.append((self.now + seconds, fn))

    def run_until(self, t):
        self.now = t
        due = [fn for at, fn in self.timers if at <= t]
        self.timers = [(at, fn) for at, fn in self.timers if at > t]
        for fn in due:
            fn()


def hold_batcher(hold=0.025):
    later, clock = [], HoldClock()
    clock.holds = 0

    def held():
        clock.holds += 1
    out = SendBatcher(later.append, spawn_after=clock.spawn_after, clock=clock, hold=hold, on_hold=held)
    return out, later, clock


def test_flow_additions_close_behind_a_write_of_flow_changes_go_together_after_the_hold():
    out, later, clock = hold_batcher()
    dp = FakeDatapath()
    out.add(dp, b"A", flow_change=True, holdable=True)      # a quiet switch: at once
    later.pop()()
    assert dp.sent == [b"A"]
    clock.now += 0.005
    out.add(dp, b"B", flow_change=True, holdable=True)      # 5 ms after: waits
    clock.now += 0.010
    out.add(dp, b"C", flow_change=True, holdable=True)
    assert later == [] and dp.sent == [b"A"]
    clock.run_until(100.020)
    assert dp.sent == [b"A"]                                 # not yet 25 ms since A
    clock.run_until(100.025)
    assert dp.sent == [b"A", b"BC"]                          # one write for both
    assert clock.holds == 1
    clock.now += 0.100                                       # quiet again: at once
    out.add(dp, b"D", flow_change=True, holdable=True)
    later.pop()()
    assert dp.sent[-1] == b"D"


def a_written_b_held():
    """A batcher that wrote addition A (a quiet switch) and holds B, 1 ms later."""
    out, later, clock = hold_batcher()
    dp = FakeDatapath()
    out.add(dp, b"A", flow_change=True, holdable=True)
    later.pop()()
    clock.now += 0.001
    out.add(dp, b"B", flow_change=True, holdable=True)
    return out, later, clock, dp


def test_a_packet_out_passes_the_held_additions_and_a_delete_takes_them_in_order():
    out, later, clock, dp = a_written_b_held()
    out.add(dp, b"P", passes=True)                           # another device's DHCP answer: this turn
    later.pop()()
    assert dp.sent == [b"A", b"P"]
    out.add(dp, b"X", flow_change=True)                      # a delete: this turn, behind B
    later.pop()()
    assert dp.sent == [b"A", b"P", b"BX"]
    clock.now += 0.001
    out.add(dp, b"C", flow_change=True, holdable=True)      # held again (the last write was X)
    out.add(dp, b"R")                                        # a request: takes C with it
    later.pop()()
    assert dp.sent[-1] == b"CR"
    clock.run_until(200.0)                                   # the old timer finds nothing left
    assert len(dp.sent) == 4


def test_additions_held_in_order_even_past_the_window_while_others_wait():
    out, later, clock, dp = a_written_b_held()
    clock.now += 0.030                                       # past the window, B still waits
    out.add(dp, b"C", flow_change=True, holdable=True)      # so C waits behind it
    assert later == []
    clock.run_until(clock.now)
    assert dp.sent == [b"A", b"BC"]


def test_no_hold_writes_every_addition_in_its_own_turn():
    out, later, clock = hold_batcher(hold=0)
    dp = FakeDatapath()
    for buf in (b"A", b"B"):
        out.add(dp, buf, flow_change=True, holdable=True)
        later.pop()()
        clock.now += 0.001
    assert dp.sent == [b"A", b"B"] and clock.timers == []


def test_fast_match_serialises_exactly_like_the_normalising_path():
    import ipaddress
    from os_ken.ofproto import ofproto_v1_3, ofproto_v1_3_parser
    from homework.adapter.osken_app import _match, _normalised_match
    from homework.components.routing import flowsets as fs

    class Dp:
        ofproto, ofproto_parser = ofproto_v1_3, ofproto_v1_3_parser

    from homework.leases import Lease
    dev = Lease(mac="02:AB:00:00:00:01", index=1, network="10.2.0.4/30", router="10.2.0.5", ip="10.2.0.6",
                broadcast="10.2.0.7", expires=0.0, port=3, active=True)
    flows = (fs.arp_flows(dev) + fs.gateway_flows(dev) + fs.forward_flows(dev, "02:00:00:00:00:01")
             + fs.account_flows(dev, 60) + fs.per_host_flows(dev) + fs.base_flows(ipaddress.ip_network("10.2.0.0/16")))
    matches = [f.match for f in flows] + [{"eth_type": 0x0800, "ip_proto": 17, "udp_dst": 67}]
    assert any(not isinstance(v, tuple) for m in matches for v in m.values())
    for fields in matches:
        fast, slow = bytearray(), bytearray()
        _match(Dp, fields).serialize(fast, 0)
        _normalised_match(Dp, fields).serialize(slow, 0)
        assert fast == slow, fields
