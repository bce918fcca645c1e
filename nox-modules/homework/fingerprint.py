"""What a device's DHCP messages say about what it is: the evidence the identify component
classifies (components/identify).

A client's DHCP implementation shows in the options it sends and the order of the options
it asks for (option 55), its vendor class (option 60), the type of its client identifier
(option 61), its maximum message size (option 57) and its host name (option 12); over
DHCPv6 in its option request list (option 6), its DUID's type, its vendor class
(option 16) and its FQDN (option 39). The DHCP component takes them from the messages it
hands over as they came (the raw options after the magic cookie), and homework-dhcpd from
the DISCOVERs it answers itself (its notes carry `fp`, the same fields); the identify
component reads them here on its own timer, never in the packet's handler
(components/identify/inbox.py).

Every value comes from an untrusted device: text is printable ASCII, bounded; numbers are
numbers; a malformed option is left out rather than failing the message.
"""
from __future__ import annotations

import struct

TEXT_MAX = 64
# The evidence fields DHCP fills, with what each is (docs/identify.md).
DHCP4_FIELDS = ("prl", "options", "vendor", "max_size", "client_id", "hostname")
DHCP6_FIELDS = ("v6_oro", "v6_duid", "v6_vendor", "v6_fqdn")

OPT_HOSTNAME, OPT_MAX_SIZE, OPT_PRL, OPT_VENDOR, OPT_CLIENT_ID, OPT_MESSAGE_TYPE = 12, 57, 55, 60, 61, 53
OPT_PAD, OPT_END = 0, 255
V6_CLIENTID, V6_ORO, V6_VENDOR_CLASS, V6_FQDN = 1, 6, 16, 39


def text(raw: bytes | str, limit: int = TEXT_MAX) -> str:
    """Printable ASCII of an untrusted value, at most `limit` characters."""
    if isinstance(raw, str):
        raw = raw.encode("ascii", "replace")
    return "".join(chr(b) for b in raw[:limit] if 0x20 <= b < 0x7F).strip()


def options_of(raw: bytes) -> dict[int, bytes]:
    """The options of a DHCPv4 message's raw option bytes (after the magic cookie), in the
    order they came; repeated options concatenate (RFC 3396). Lenient: reading stops at
    the end marker or at an option that overruns the bytes, and what came before counts."""
    options: dict[int, bytes] = {}
    at, end = 0, len(raw)
    while at < end:
        code = raw[at]
        if code == OPT_END:
            break
        if code == OPT_PAD:
            at += 1
            continue
        if at + 1 >= end or at + 2 + raw[at + 1] > end:
            break
        length = raw[at + 1]
        options[code] = options.get(code, b"") + raw[at + 2:at + 2 + length]
        at += 2 + length
    return options


def key4(options: dict[int, bytes]) -> tuple[bytes | None, ...]:
    """What decides whether a request says something new about its device: the bytes of
    the options that tell what it is (a REQUEST's own, 50 and 54, do not)."""
    get = options.get
    return (get(OPT_PRL), get(OPT_VENDOR), get(OPT_HOSTNAME), get(OPT_CLIENT_ID), get(OPT_MAX_SIZE))


def dhcp4(options: dict[int, bytes]) -> dict[str, str]:
    """The evidence of one DHCPv4 request's options (message.DhcpMessage.options, in the
    order they came)."""
    out: dict[str, str] = {}
    prl = options.get(OPT_PRL)
    if prl:
        out["prl"] = ",".join(str(b) for b in prl[:TEXT_MAX])
    # The options the client sent, in order (53 and the end marker left out).
    sent = [str(code) for code in options if code != OPT_MESSAGE_TYPE]
    if sent:
        out["options"] = ",".join(sent[:TEXT_MAX])
    vendor = options.get(OPT_VENDOR)
    if vendor:
        out["vendor"] = text(vendor)
    size = options.get(OPT_MAX_SIZE)
    if size is not None and len(size) == 2:
        out["max_size"] = str(struct.unpack("!H", size)[0])
    cid = options.get(OPT_CLIENT_ID)
    if cid:
        out["client_id"] = str(cid[0])        # its type: 1 = a MAC, 255 = RFC 4361 (a DUID), 0 = text
    name = options.get(OPT_HOSTNAME)
    if name:
        out["hostname"] = text(name)
    return {k: v for k, v in out.items() if v}


def dhcp6(payload: bytes) -> dict[str, str]:
    """The evidence of one DHCPv6 client message (the UDP payload); {} when it is not one
    or it is malformed."""
    if len(payload) < 4 or payload[0] not in (1, 3, 5, 6, 11):    # SOLICIT, REQUEST, RENEW, REBIND, INFO-REQ
        return {}
    out: dict[str, str] = {}
    at = 4
    while at + 4 <= len(payload):
        code, length = struct.unpack_from("!HH", payload, at)
        body = payload[at + 4:at + 4 + length]
        if len(body) != length:
            return {}
        if code == V6_CLIENTID and length >= 2:
            out["v6_duid"] = str(struct.unpack_from("!H", body)[0])   # 1 LLT, 2 EN, 3 LL, 4 UUID
            if out["v6_duid"] == "2" and length >= 6:
                out["v6_duid"] += ":" + str(struct.unpack_from("!I", body, 2)[0])   # DUID-EN's enterprise
        elif code == V6_ORO and length % 2 == 0:
            out["v6_oro"] = ",".join(str(c) for c in struct.unpack(f"!{length // 2}H", body)[:TEXT_MAX])
        elif code == V6_VENDOR_CLASS and length >= 6:
            enterprise = struct.unpack_from("!I", body)[0]
            first = struct.unpack_from("!H", body, 4)[0]
            out["v6_vendor"] = f"{enterprise}:{text(body[6:6 + first])}"
        elif code == V6_FQDN and length >= 2:
            out["v6_fqdn"] = _dns_name(body[1:])
        at += 4 + length
    return {k: v for k, v in out.items() if v}


def _dns_name(wire: bytes) -> str:
    labels: list[str] = []
    at = 0
    while at < len(wire) and wire[at] and len(labels) < 8:
        n = wire[at]
        labels.append(text(wire[at + 1:at + 1 + n]))
        at += 1 + n
    return text(".".join(labels))


def from_note(fp) -> dict[str, str]:
    """The evidence homework-dhcpd's note carries (`fp`: the same fields as dhcp4's), checked
    as anything from outside is."""
    if not isinstance(fp, dict):
        return {}
    out = {}
    for key in DHCP4_FIELDS:
        value = fp.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            out[key] = _codes(str(value)) if key in CODE_LISTS else text(str(value))
    return {k: v for k, v in out.items() if v}


CODE_LISTS = ("prl", "options")      # lists of option codes: bounded by codes, as dhcp4 bounds them


def _codes(listed: str) -> str:
    """A note's list of option codes as dhcp4 writes one: at most TEXT_MAX codes (not
    characters: a long request list keeps its codes whole), each a number below 256."""
    codes = listed.split(",", TEXT_MAX)[:TEXT_MAX]
    return ",".join(c for c in codes if c.isdigit() and len(c) <= 3 and int(c) < 256)
