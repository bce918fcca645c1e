"""DHCPv4 messages (RFC 2131/2132): parse and build, with strict bounds checks.

Anything malformed raises PacketError; the core counts and drops it.
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from functools import cached_property

from ...packets import PacketError

MAGIC = b"\x63\x82\x53\x63"
FIXED = struct.Struct("!BBBBIHH4s4s4s4s16s64s128s")   # 236 bytes before the magic cookie
BROADCAST_FLAG = 0x8000

DISCOVER, OFFER, REQUEST, DECLINE, ACK, NAK, RELEASE, INFORM = 1, 2, 3, 4, 5, 6, 7, 8
FORCERENEW = 9      # RFC 3203: the server asks a client to renew now (we only send it)
TYPE_NAMES = {DISCOVER: "DISCOVER", OFFER: "OFFER", REQUEST: "REQUEST", DECLINE: "DECLINE",
              ACK: "ACK", NAK: "NAK", RELEASE: "RELEASE", INFORM: "INFORM", FORCERENEW: "FORCERENEW"}

OPT_PAD, OPT_END = 0, 255
OPT_SUBNET_MASK = 1
OPT_ROUTER = 3
OPT_DNS = 6
OPT_HOSTNAME = 12
OPT_BROADCAST = 28
OPT_REQUESTED_IP = 50
OPT_LEASE_TIME = 51
OPT_OVERLOAD = 52
OPT_MESSAGE_TYPE = 53
OPT_SERVER_ID = 54
OPT_PARAM_LIST = 55
OPT_MESSAGE = 56
OPT_MAX_SIZE = 57
OPT_T1 = 58
OPT_T2 = 59
OPT_CLIENT_ID = 61
OPT_CAPTIVE_PORTAL = 114   # RFC 8910: the captive portal API's URL


@dataclass
class DhcpMessage:
    op: int
    xid: int
    secs: int
    flags: int
    ciaddr: str
    yiaddr: str
    siaddr: str
    giaddr: str
    chaddr: bytes                      # 6-byte client hardware address
    options: dict[int, bytes] = field(default_factory=dict)
    raw_options: bytes = b""           # the options as they came (identify reads them later)

    @property
    def msg_type(self) -> int | None:
        raw = self.options.get(OPT_MESSAGE_TYPE)
        return raw[0] if raw and len(raw) == 1 else None

    @cached_property
    def mac(self) -> str:
        return self.chaddr.hex(":")

    def _ip_option(self, code: int) -> str | None:
        raw = self.options.get(code)
        if raw is None:
            return None
        if len(raw) != 4:
            raise PacketError(f"DHCP option {code} must be 4 bytes, got {len(raw)}")
        return _ip(raw)

    @property
    def requested_ip(self) -> str | None:
        return self._ip_option(OPT_REQUESTED_IP)

    @property
    def server_id(self) -> str | None:
        return self._ip_option(OPT_SERVER_ID)

    @property
    def hostname(self) -> str:
        raw = self.options.get(OPT_HOSTNAME, b"")
        # Hostnames come from untrusted devices: keep printable ASCII only, bounded.
        return "".join(chr(b) for b in raw[:63] if 0x20 < b < 0x7F)

    @property
    def requested_options(self) -> frozenset[int]:
        """The options the client asks for (parameter request list, option 55)."""
        return frozenset(self.options.get(OPT_PARAM_LIST, b""))

    @property
    def broadcast(self) -> bool:
        return bool(self.flags & BROADCAST_FLAG)


def parse(payload: bytes) -> DhcpMessage:
    if len(payload) < FIXED.size + 4:
        raise PacketError(f"DHCP message too short ({len(payload)} bytes)")
    (op, htype, hlen, _hops, xid, secs, flags, ciaddr, yiaddr, siaddr, giaddr,
     chaddr, _sname, _file) = FIXED.unpack_from(payload)
    if op not in (1, 2):
        raise PacketError(f"bad BOOTP op {op}")
    if htype != 1 or hlen != 6:
        raise PacketError(f"unsupported hardware type {htype}/len {hlen}")
    if payload[FIXED.size:FIXED.size + 4] != MAGIC:
        raise PacketError("missing DHCP magic cookie")
    options = _parse_options(payload, FIXED.size + 4)
    msg = DhcpMessage(op, xid, secs, flags, _ip(ciaddr), _ip(yiaddr), _ip(siaddr), _ip(giaddr),
                      chaddr[:6], options, payload[FIXED.size + 4:])
    if msg.msg_type not in TYPE_NAMES:
        raise PacketError(f"missing or unknown DHCP message type {msg.msg_type}")
    return msg


def _parse_options(data: bytes, offset: int) -> dict[int, bytes]:
    options: dict[int, bytes] = {}
    end = len(data)
    while offset < end:
        code = data[offset]
        if code == OPT_END:
            return options
        if code == OPT_PAD:
            offset += 1
            continue
        if offset + 1 >= end:
            raise PacketError(f"DHCP option {code} truncated")
        length = data[offset + 1]
        if offset + 2 + length > end:
            raise PacketError(f"DHCP option {code} overruns the packet")
        value = data[offset + 2:offset + 2 + length]
        # RFC 3396: repeated options concatenate.
        options[code] = options.get(code, b"") + value
        offset += 2 + length
    # Many clients omit END after padding; tolerate it as long as every option was whole.
    return options


def _ip(raw: bytes) -> str:
    return ".".join(str(b) for b in raw[:4])


def build(*, msg_type: int, request: DhcpMessage, yiaddr: str, server_id: str,
          options: list[tuple[int, bytes]]) -> bytes:
    """A BOOTREPLY answering `request`."""
    fixed = FIXED.pack(2, 1, 6, 0, request.xid, 0, request.flags,
                       ip4(request.ciaddr) if msg_type == ACK and request.ciaddr else b"\0" * 4,
                       ip4(yiaddr),
                       b"\0" * 4,
                       ip4(request.giaddr),
                       request.chaddr.ljust(16, b"\0"), b"\0" * 64, b"\0" * 128)
    out = bytearray(fixed + MAGIC)
    out += bytes((OPT_MESSAGE_TYPE, 1, msg_type))
    out += bytes((OPT_SERVER_ID, 4)) + ip4(server_id)
    for code, value in options:
        for start in range(0, max(len(value), 1), 255):
            chunk = value[start:start + 255]
            out += bytes((code, len(chunk))) + chunk
    out.append(OPT_END)
    if len(out) < 300:               # BOOTP minimum; some clients drop shorter replies
        out += b"\0" * (300 - len(out))
    return bytes(out)


def u32(value: int) -> bytes:
    return struct.pack("!I", value)


def ip4(text: str) -> bytes:
    """Packed form of a dotted quad we made ourselves or parsed from 4 bytes (inet_aton
    is lenient about odd forms, so never hand it untrusted text)."""
    return socket.inet_aton(text)
