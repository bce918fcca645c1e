"""The os-ken adapter writes the messages of one hub turn to the switch in one send."""
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
