"""What DHCP messages say about a device (homework/fingerprint.py): bounded, printable, and
a malformed option is left out rather than failing the message."""
import struct

from homework import fingerprint


def test_dhcp4_evidence_in_the_order_sent():
    options = {53: b"\x01", 61: b"\x01" + bytes(6), 57: b"\x05\xdc", 12: b"Toms-iPhone", 60: b"MSFT 5.0",
               55: bytes([1, 3, 6, 15])}
    assert fingerprint.dhcp4(options) == {"prl": "1,3,6,15", "options": "61,57,12,60,55", "vendor": "MSFT 5.0",
                                          "max_size": "1500", "client_id": "1", "hostname": "Toms-iPhone"}


def test_dhcp4_untrusted_text_is_printable_and_bounded_and_odd_sizes_are_left_out():
    ev = fingerprint.dhcp4({60: b"\x00evil\x1b[31m" + b"x" * 300, 57: b"\x05", 12: b"\xff\xfe"})
    assert ev == {"options": "60,57,12", "vendor": "evil[31m" + "x" * 54}   # 64 bytes read, 2 of them not printable


def v6_option(code, body):
    return struct.pack("!HH", code, len(body)) + body


def test_dhcp6_evidence_duid_oro_vendor_fqdn():
    payload = bytes([1, 0xab, 0xcd, 0xef])
    payload += v6_option(1, struct.pack("!HI", 2, 43793) + b"\x01\x02")
    payload += v6_option(6, struct.pack("!3H", 23, 24, 39))
    payload += v6_option(16, struct.pack("!IH", 311, 8) + b"MSFT 5.0")
    payload += v6_option(39, b"\x00\x06laptop\x04home\x00")
    assert fingerprint.dhcp6(payload) == {"v6_duid": "2:43793", "v6_oro": "23,24,39", "v6_vendor": "311:MSFT 5.0",
                                          "v6_fqdn": "laptop.home"}


def test_dhcp6_malformed_or_from_a_server_says_nothing():
    assert fingerprint.dhcp6(bytes([7, 0, 0, 1]) + v6_option(6, b"\x00\x17")) == {}   # a REPLY
    assert fingerprint.dhcp6(bytes([1, 0, 0, 1]) + struct.pack("!HH", 6, 40) + b"\x00\x17") == {}


def test_a_note_from_homework_dhcpd_is_checked_as_anything_from_outside():
    assert fingerprint.from_note({"prl": "1,3", "vendor": "x\x07y", "max_size": 1500, "evil": "no",
                                  "hostname": ["not", "text"], "client_id": True}) == \
        {"prl": "1,3", "vendor": "xy", "max_size": "1500"}
    assert fingerprint.from_note("nope") == {}
