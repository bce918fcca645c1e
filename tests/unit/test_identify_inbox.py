"""Identify's inbox (components/identify/inbox.py): what dhcp and routing hand over on the
packet's path is kept as it came, once per device and source, bounded; the timer reads a
bounded batch, and a request that says nothing new about the device is left out."""
from homework.components.identify import inbox as ib


def tlv(code, value):
    return bytes([code, len(value)]) + value


IPHONE = tlv(53, b"\x01") + tlv(12, b"Toms-iPhone") + tlv(55, bytes([1, 121, 3, 6, 15, 108, 114, 119, 252]))


def test_a_device_that_asks_again_before_the_timer_is_read_once_with_its_last_message():
    box = ib.Inbox()
    box.dhcp4("02:00:00:00:00:01", tlv(12, b"old"))
    box.dhcp4("02:00:00:00:00:01", IPHONE)
    assert len(box) == 1
    [(mac, source, evidence)] = box.read()
    assert (mac, source, evidence["hostname"]) == ("02:00:00:00:00:01", "dhcp", "Toms-iPhone")
    assert len(box) == 0 and box.read() == []


def test_the_same_telling_options_again_are_not_news_and_a_request_s_own_are_not_telling():
    box = ib.Inbox()
    box.dhcp4("m1", IPHONE)
    assert box.read()
    box.dhcp4("m1", tlv(53, b"\x03") + tlv(50, bytes([10, 0, 0, 2])) + IPHONE[3:] + tlv(54, bytes([10, 0, 0, 1])))
    assert box.read() == []
    box.dhcp4("m1", tlv(12, b"Toms-iPhone-2") + IPHONE[15:])
    assert [ev["hostname"] for _, _, ev in box.read()] == ["Toms-iPhone-2"]


def test_waiting_devices_are_bounded_and_each_timer_pass_reads_a_bounded_batch():
    box = ib.Inbox()
    for i in range(ib.WAITING_MAX + 10):
        box.dhcp4(f"m{i}", IPHONE)
    assert len(box) == ib.WAITING_MAX and box.dropped == 10
    box.dhcp4("m0", IPHONE)                     # a device already waiting is not refused
    assert box.dropped == 10
    assert len(box.read()) == ib.READ_MAX and len(box) == ib.WAITING_MAX - ib.READ_MAX


def test_dhcpv6_and_homework_dhcpd_notes_are_read_as_fingerprint_reads_them():
    box = ib.Inbox()
    box.dhcp6("m6", bytes([11, 0, 0, 1]) + b"\x00\x01\x00\x06\x00\x02\x00\x00\xab\x11")
    box.dhcpd_note("mn", {"prl": "1,3", "vendor": "MSFT 5.0", "evil": "x"})
    box.dhcpd_note("mx", ["not", "a", "note"])
    box.dhcp6("my", b"\x07garbage")
    assert sorted(box.read()) == [("m6", "dhcp6", {"v6_duid": "2:43793"}),
                                  ("mn", "dhcpd", {"prl": "1,3", "vendor": "MSFT 5.0"})]


def test_a_device_s_waiting_messages_are_read_on_demand_and_go_when_it_is_forgotten():
    box = ib.Inbox()
    box.dhcp4("m1", IPHONE)
    box.dhcp4("m2", IPHONE)
    assert [mac for mac, _, _ in box.read_device("m1")] == ["m1"] and len(box) == 1
    box.forget("m2")
    assert len(box) == 0
    box.dhcp4("m1", IPHONE)       # forgotten: what it says again is news
    box.forget("m1")
    box.dhcp4("m1", IPHONE)
    assert box.read()
