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


def tlv(code, value):
    return bytes([code, len(value)]) + value


def test_raw_dhcp4_options_are_read_in_order_and_repeats_concatenate():
    raw = tlv(53, b"\x01") + tlv(12, b"Toms") + b"\x00\x00" + tlv(55, bytes([1, 3])) + tlv(12, b"-iPhone") \
        + tlv(55, bytes([6])) + b"\xff" + tlv(60, b"after the end")
    assert fingerprint.options_of(raw) == {53: b"\x01", 12: b"Toms-iPhone", 55: bytes([1, 3, 6])}
    assert fingerprint.dhcp4(fingerprint.options_of(raw)) == {"prl": "1,3,6", "options": "12,55",
                                                              "hostname": "Toms-iPhone"}


def test_malformed_raw_options_keep_what_came_before_and_cost_one_pass():
    # an option that overruns the bytes, a length byte missing: reading stops there
    assert fingerprint.options_of(tlv(12, b"tv") + bytes([55, 200, 1, 3])) == {12: b"tv"}
    assert fingerprint.options_of(tlv(12, b"tv") + bytes([60])) == {12: b"tv"}
    assert fingerprint.options_of(b"") == {} and fingerprint.options_of(b"\x00" * 1000) == {}
    # option 55 as long as it can be, repeated (RFC 3396), a vendor class of control bytes,
    # a user class (77) of garbage: bounded evidence, and 77 is not read at all
    raw = tlv(55, bytes(range(1, 256))) * 4 + tlv(60, bytes(range(0, 32)) * 7) + tlv(77, bytes(range(255)))
    ev = fingerprint.dhcp4(fingerprint.options_of(raw))
    assert ev["prl"] == ",".join(str(b) for b in range(1, 65)) and ev["options"] == "55,60,77"
    assert "vendor" not in ev and set(ev) == {"prl", "options"}
    assert all(len(v) <= 4 * 64 for v in ev.values())


def test_the_news_key_tells_apart_what_a_plain_join_would_not():
    a = fingerprint.key4({12: b"a\x00b", 60: b""})
    b = fingerprint.key4({12: b"a", 60: b"b"})
    assert a != b and fingerprint.key4({50: b"\x0a\x00\x00\x02", 12: b"x"}) == fingerprint.key4({12: b"x"})


def test_a_note_s_request_list_is_bounded_by_codes_as_the_controller_s_own_reading_is():
    long_list = bytes(range(1, 100))
    controller = fingerprint.dhcp4({55: long_list})["prl"]
    note = fingerprint.from_note({"prl": ",".join(str(c) for c in long_list)})["prl"]
    assert note == controller and len(controller.split(",")) == 64
    assert fingerprint.from_note({"prl": "1,3,x,999,6," + "7," * 5000, "options": "53,,55"}) == \
        {"prl": "1,3,6," + ",".join(["7"] * 59), "options": "53,55"}
