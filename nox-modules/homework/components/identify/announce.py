"""What devices announce on the LAN: mDNS/DNS-SD (224.0.0.251:5353, and [ff02::fb]:5353
over IPv6) and SSDP (239.255.255.250:1900), heard by the router on the bridge.

mDNS over IPv6 is sent from a link-local address, which names no device the router
knows (every device's fe80::/64 is the same, and a phone's is not made from its MAC), so
it is heard on a packet socket instead: a classic BPF filter in the kernel passes only
UDP to [ff02::fb]:5353 (no other frame on the bridge reaches this process), and the
frame's own source MAC names the device. The switch lets a device's frames in only with
its own MAC on its own port (routing's anti-spoofing entries), as it lets in only its own
address for IPv4.

A listener thread (a real OS thread: the controller's eventlet hub never waits on it or
parses for it) reads both sockets, drops what a source sends beyond a small budget before
parsing anything, parses the rest with dnspython (mDNS is DNS's wire format) or as SSDP's
HTTP-like headers, and hands (source address, source, evidence) to a queue the component
drains on its timer. Only what a device says about itself is kept: its instance name, the
services it offers, the model and maker its TXT records state, its SSDP SERVER header.
"""
from __future__ import annotations

import collections
import logging
import select
import socket
import struct
import threading
import time
from collections.abc import Callable

import dns.exception
import dns.message
import dns.name
import dns.rdatatype

from ...fingerprint import text

log = logging.getLogger("homework.identify.announce")

MDNS = ("224.0.0.251", 5353)
MDNS6 = "ff02::fb"
SSDP = ("239.255.255.250", 1900)
BUDGET = 30                 # packets a source may send ...
BUDGET_SECONDS = 10.0       # ... in this long before the rest is dropped unread
MAX_SOURCES = 4096
SERVICES_MAX = 12
# Records an mDNS message may declare (its header's counts) to be parsed at all: a real
# announcement has a few dozen at most; thousands of tiny compressed records in one
# datagram would be parsing work for nothing.
RECORDS_MAX = 100
DATAGRAM_MAX = 9000         # RFC 6762's largest mDNS message; a datagram is read this far
# TXT keys that state a model or a maker: _device-info's model, Google Cast's md, IPP's ty
# and usb_MFG/usb_MDL, AirPlay's model.
MODEL_KEYS = (b"model", b"md", b"ty", b"usb_mdl", b"am")
MAKER_KEYS = (b"usb_mfg", b"mfg", b"manufacturer")


def _labels(name: dns.name.Name) -> list[str]:
    """A name's labels as text (an instance name may hold spaces and dots of its own)."""
    return [label.decode("utf-8", "replace") for label in name.labels if label]


def _service_of(labels: list[str]) -> str | None:
    """`_ipp._tcp` of `Office._ipp._tcp.local.` (or of `_ipp._tcp.local.` itself)."""
    for i in range(len(labels) - 1):
        if labels[i].startswith("_") and labels[i + 1] in ("_tcp", "_udp"):
            return f"{labels[i]}.{labels[i + 1]}"
    return None


def _instance_of(labels: list[str]) -> str | None:
    if len(labels) >= 4 and labels[1].startswith("_") and labels[2] in ("_tcp", "_udp"):
        return labels[0]
    return None


def parse_mdns(payload: bytes) -> dict[str, str]:
    """The evidence of one mDNS message (an announcement or an answer); {} for a query or
    anything malformed, and, unparsed, for a message declaring more than RECORDS_MAX
    records."""
    if len(payload) < 12 or sum(struct.unpack_from("!4H", payload, 4)) > RECORDS_MAX:
        return {}
    try:
        msg = dns.message.from_wire(payload, ignore_trailing=True)
    except (dns.exception.DNSException, ValueError, UnicodeError):
        return {}
    records = [r for section in (msg.answer, msg.additional) for r in section]
    if not records:
        return {}
    services: list[str] = []
    out: dict[str, str] = {}
    for rrset in records:
        owner = _labels(rrset.name)
        if rrset.rdtype == dns.rdatatype.PTR:
            for rd in rrset:
                target = _labels(rd.target)
                service = _service_of(target)
                if service and not service.startswith("_services") and service not in services:
                    services.append(service)
                instance = _instance_of(target)
                if instance and "mdns_name" not in out and not _is_reverse(owner):
                    out["mdns_name"] = text(instance)
        elif rrset.rdtype in (dns.rdatatype.SRV, dns.rdatatype.TXT):
            service = _service_of(owner)
            if service and service not in services:
                services.append(service)
            instance = _instance_of(owner)
            if instance and "mdns_name" not in out:
                out["mdns_name"] = text(instance)
            if rrset.rdtype == dns.rdatatype.TXT:
                for rd in rrset:
                    _txt(rd.strings, out)
    if services:
        out["mdns_services"] = ",".join(sorted(s for s in services[:SERVICES_MAX]))
    return {k: v for k, v in out.items() if v}


def _is_reverse(owner: list[str]) -> bool:
    return bool(owner) and owner[-1] == "arpa"


def _txt(strings, out: dict[str, str]) -> None:
    for raw in strings:
        key, _, value = bytes(raw).partition(b"=")
        key = key.lower()
        if key in MODEL_KEYS and value and "mdns_model" not in out:
            out["mdns_model"] = text(value)
        elif key in MAKER_KEYS and value and "mdns_maker" not in out:
            out["mdns_maker"] = text(value)


def parse_ssdp(payload: bytes) -> dict[str, str]:
    """The evidence of an SSDP NOTIFY or search answer: its SERVER header."""
    head = payload[:2048].split(b"\r\n\r\n", 1)[0]
    lines = head.split(b"\r\n")
    if not lines or not (lines[0].startswith(b"NOTIFY") or lines[0].startswith(b"HTTP/1.1 200")):
        return {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"server" and value.strip():
            return {"ssdp_server": text(value.strip())}
    return {}


class Budget:
    """Packets per source in a window; a source over its budget is dropped before parsing."""

    def __init__(self, per_window: int = BUDGET, window: float = BUDGET_SECONDS, clock=time.monotonic):
        self.per_window, self.window, self.clock = per_window, window, clock
        self._seen: collections.OrderedDict[str, list] = collections.OrderedDict()

    def allow(self, source: str) -> bool:
        now = self.clock()
        entry = self._seen.get(source)
        if entry is None or now - entry[0] >= self.window:
            self._seen[source] = [now, 1]
            self._seen.move_to_end(source)
            while len(self._seen) > MAX_SOURCES:
                self._seen.popitem(last=False)
            return True
        entry[1] += 1
        return entry[1] <= self.per_window


# The packet socket's filter (classic BPF, offsets in the Ethernet frame): IPv6, next header
# UDP (no extension headers), destination ff02::fb, destination port 5353; else nothing.
ETH_P_IPV6 = 0x86DD
SO_ATTACH_FILTER = 26
_LDH, _LDB, _LDW, _JEQ, _RET = 0x28, 0x30, 0x20, 0x15, 0x06
_TESTS = ((_LDH, 12, ETH_P_IPV6), (_LDB, 20, 17), (_LDW, 38, 0xFF020000), (_LDW, 42, 0), (_LDW, 46, 0),
          (_LDW, 50, 0xFB), (_LDH, 56, 5353))
# each test: load, then on a mismatch jump to the last instruction (return 0: not for us)
MDNS6_FILTER = tuple(insn for i, (load, offset, value) in enumerate(_TESTS) for insn in (
    (load, 0, 0, offset), (_JEQ, 0, 2 * (len(_TESTS) - i) - 1, value))) + ((_RET, 0, 0, 0xFFFF), (_RET, 0, 0, 0))
_MDNS6_DST = socket.inet_pton(socket.AF_INET6, MDNS6)
MAC_SOURCE = "mac:"         # a source named by its MAC (IPv6 mDNS) rather than an address


def mdns6_frame(frame: bytes) -> tuple[str, bytes] | None:
    """(source MAC, mDNS payload) of an Ethernet frame carrying UDP to [ff02::fb]:5353, else
    None. The kernel's filter passes only those; this checks again (frames that arrived
    before the filter was attached, a filter the kernel refused)."""
    if (len(frame) < 62 or frame[12:14] != b"\x86\xdd" or frame[20] != 17 or frame[38:54] != _MDNS6_DST
            or frame[56:58] != b"\x14\xe9"):
        return None
    mac = ":".join(f"{b:02x}" for b in frame[6:12])
    return mac, frame[62:]


def attach_mdns6_filter(sock) -> None:
    import ctypes
    code = b"".join(struct.pack("HBBI", *insn) for insn in MDNS6_FILTER)
    buf = ctypes.create_string_buffer(code)
    # the kernel copies the program: the buffer need not outlive the call
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, struct.pack("HL", len(MDNS6_FILTER), ctypes.addressof(buf)))


class Listener:
    """Both sockets on `interface` (the bridge), read in a real OS thread; `heard(address,
    source, evidence)` is called from that thread (the component queues it)."""

    def __init__(self, interface: str, heard: Callable[[str, str, dict], None], ipv6: bool = False):
        self.interface = interface
        self.ipv6 = ipv6            # mDNS over IPv6 too (a packet socket: see the module's notes)
        self.heard = heard
        self.budget = Budget()
        self.dropped = 0
        self._stop = False
        self._socks: list = []

    def start(self) -> None:
        real_socket, real_threading, real_select = socket, threading, select
        try:    # under the controller's eventlet: the originals, so the thread is a real one
            from eventlet import patcher
            real_socket = patcher.original("socket")
            real_threading = patcher.original("threading")
            real_select = patcher.original("select")
        except ImportError:
            pass
        self._select = real_select
        for group, port in (MDNS, SSDP):
            s = real_socket.socket(real_socket.AF_INET, real_socket.SOCK_DGRAM, real_socket.IPPROTO_UDP)
            s.setsockopt(real_socket.SOL_SOCKET, real_socket.SO_REUSEADDR, 1)
            if hasattr(real_socket, "SO_REUSEPORT"):
                s.setsockopt(real_socket.SOL_SOCKET, real_socket.SO_REUSEPORT, 1)
            s.bind((group, port))
            ifindex = real_socket.if_nametoindex(self.interface)
            mreqn = socket.inet_aton(group) + struct.pack("=4si", socket.inet_aton("0.0.0.0"), ifindex)
            s.setsockopt(real_socket.IPPROTO_IP, real_socket.IP_ADD_MEMBERSHIP, mreqn)
            self._socks.append((s, "mdns" if port == MDNS[1] else "ssdp"))
        if self.ipv6:
            try:        # a packet socket needs CAP_NET_RAW: without it, IPv4's announcements still
                s = real_socket.socket(real_socket.AF_PACKET, real_socket.SOCK_RAW, real_socket.htons(ETH_P_IPV6))
                attach_mdns6_filter(s)
                s.bind((self.interface, ETH_P_IPV6))
                self._socks.append((s, "mdns6"))
            except OSError as exc:
                log.warning("cannot hear mDNS over IPv6 on %s (%s): IPv4's announcements only", self.interface, exc)
        thread = real_threading.Thread(target=self._loop, name="identify-announce", daemon=True)
        thread.start()

    def stop(self) -> None:
        self._stop = True
        for s, _ in self._socks:
            try:
                s.close()
            except OSError:
                pass

    def _loop(self) -> None:
        socks = {s.fileno(): (s, kind) for s, kind in self._socks}
        while not self._stop:
            try:
                ready, _, _ = self._select.select(list(socks), [], [], 1.0)
            except (OSError, ValueError):
                return
            for fd in ready:
                s, kind = socks[fd]
                try:
                    payload, peer = s.recvfrom(DATAGRAM_MAX + 62)   # an IPv6 frame's headers too
                except OSError:
                    continue
                if kind == "mdns6":
                    found = mdns6_frame(payload)
                    if found is not None:
                        self.take(MAC_SOURCE + found[0], "mdns", found[1])
                    continue
                self.take(peer[0], kind, payload)

    def take(self, address: str, kind: str, payload: bytes) -> None:
        if not self.budget.allow(address):
            self.dropped += 1
            return
        try:
            evidence = parse_mdns(payload) if kind == "mdns" else parse_ssdp(payload)
        except Exception:       # a parser's bug must not end the thread
            log.exception("announcement from %s not parsed", address)
            return
        if evidence:
            self.heard(address, kind, evidence)
