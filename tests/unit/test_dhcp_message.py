import struct

import pytest
from hypothesis import given, settings, strategies as st

from homework.components.dhcp import message as m
from homework.packets import PacketError
from dhcpframes import dhcp_payload, opt_ip

MAC = "02:00:00:00:00:aa"


def test_parse_discover_with_hostname_and_requested_ip():
    raw = dhcp_payload(MAC, m.DISCOVER, options=[(12, b"laptop"), opt_ip(50, "10.2.0.6")])
    msg = m.parse(raw)
    assert msg.msg_type == m.DISCOVER and msg.mac == MAC
    assert msg.hostname == "laptop" and msg.requested_ip == "10.2.0.6" and msg.server_id is None


def test_hostname_is_sanitised():
    raw = dhcp_payload(MAC, m.DISCOVER, options=[(12, b"ev\x00il\x1b[31m\xff")])
    assert m.parse(raw).hostname == "evil[31m"


@pytest.mark.parametrize("cut", [0, 10, 235, 239, 240])
def test_truncated_messages_are_rejected(cut):
    raw = dhcp_payload(MAC, m.DISCOVER)
    with pytest.raises(PacketError):
        m.parse(raw[:cut] if cut < 240 else raw[:240])


def test_option_overrunning_packet_is_rejected():
    raw = dhcp_payload(MAC, m.DISCOVER)[:-1] + bytes((12, 200)) + b"abc"
    with pytest.raises(PacketError, match="overruns"):
        m.parse(raw)


def test_bad_magic_and_bad_hw_type_rejected():
    raw = bytearray(dhcp_payload(MAC, m.DISCOVER))
    raw[236] = 0
    with pytest.raises(PacketError, match="magic"):
        m.parse(bytes(raw))
    raw = bytearray(dhcp_payload(MAC, m.DISCOVER))
    raw[1] = 6
    with pytest.raises(PacketError, match="hardware"):
        m.parse(bytes(raw))


def test_missing_message_type_rejected():
    raw = dhcp_payload(MAC, m.DISCOVER)
    raw = raw[:240] + b"\xff"
    with pytest.raises(PacketError, match="message type"):
        m.parse(raw)


def test_wrong_length_ip_option_rejected():
    msg = m.parse(dhcp_payload(MAC, m.REQUEST, options=[(50, b"\x0a\x02")]))
    with pytest.raises(PacketError):
        _ = msg.requested_ip


def test_build_reply_roundtrip():
    req = m.parse(dhcp_payload(MAC, m.DISCOVER, xid=99, options=[(12, b"tv")]))
    raw = m.build(msg_type=m.OFFER, request=req, yiaddr="10.2.0.2", server_id="10.2.0.1",
                  options=[(m.OPT_SUBNET_MASK, m.ip4("255.255.255.252")), (m.OPT_LEASE_TIME, m.u32(30))])
    reply = m.parse(raw)
    assert reply.op == 2 and reply.xid == 99 and reply.yiaddr == "10.2.0.2"
    assert reply.msg_type == m.OFFER and reply.server_id == "10.2.0.1"
    assert reply.options[m.OPT_SUBNET_MASK] == bytes([255, 255, 255, 252])
    assert struct.unpack("!I", reply.options[m.OPT_LEASE_TIME])[0] == 30
    assert len(raw) >= 300


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=600))
def test_random_bytes_never_raise_anything_but_packet_error(data):
    try:
        msg = m.parse(data)
        _ = (msg.requested_ip, msg.server_id, msg.hostname)
    except PacketError:
        pass


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=120))
def test_random_options_after_valid_header(tail):
    raw = dhcp_payload(MAC, m.DISCOVER)[:240] + tail
    try:
        m.parse(raw)
    except PacketError:
        pass
