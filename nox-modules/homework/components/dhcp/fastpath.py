"""DHCP off the OpenFlow packet-in path.

A packet-in costs the controller os-ken's parsing, two eventlet queues and the OpenFlow
round trip: about 40 times the DHCP logic itself. So the switch hands DHCP requests to the
router's own stack instead, and the controller reads them from a raw socket:

- Request: the table-0 DHCP flow sets eth_dst to the marker 0e:68:77:00:PP:PP, PP the
  16-bit ingress port (copied by the switch: move in_port -> eth_dst[0..15]), and outputs
  to LOCAL (the bridge's interface, br0, in the router's namespace). The kernel drops the
  frame (not its MAC); an AF_PACKET socket whose classic BPF filter passes only marked
  IPv4 UDP/67 frames hands it to us.
- Reply: sent on the same socket with eth_src = marker + out port. One flow takes frames
  from LOCAL with that marker and udp_src 67, moves the port into reg0, writes the
  router's MAC as eth_src and outputs to reg0's port.

Only the switch writes a request's marker: every udp/67 frame from a port hits the DHCP
flow, which overwrites eth_dst, so a device cannot choose the port it is served as.
Decisions, leases and rules stay in DhcpServer.handle; this module only moves frames.
"""
from __future__ import annotations

import ctypes
import logging
import socket
import struct
import threading
import time

from ...flows import ETH_IP, LOCAL, PROTO_UDP, FlowMod, Move, Output, OutputReg, PacketOut, SetField
from ...pipeline import COOKIE_DHCP, PRIO_DHCP, PRIO_DHCP_REPLY

log = logging.getLogger("homework.dhcp.fastpath")

SERVER_PORT = 67
MARK = bytes.fromhex("0e687700")          # locally administered, unicast: no real NIC has it
MARK_MAC = "0e:68:77:00:00:00"
MARK_MASK = "ff:ff:ff:ff:00:00"
MAX_PORT = 0xFFFF                         # the marker carries 16 bits of port number
RCVBUF = 4 << 20                          # a burst of a thousand clients fits
YIELD_EVERY = 32                          # frames handled before the hub gets a turn

ETH_P_ALL = 0x0003
SO_ATTACH_FILTER = 26
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_QDISC_BYPASS = 20


# -- the marker codec ------------------------------------------------------------------------
def marker(port: int) -> bytes:
    """The MAC that carries an OpenFlow port number (request: eth_dst; reply: eth_src)."""
    if not 0 < port <= MAX_PORT:
        raise ValueError(f"port {port} does not fit a DHCP fast-path marker")
    return MARK + port.to_bytes(2, "big")


def port_of(mac: bytes) -> int | None:
    """The port a marker carries, None if `mac` is not a marker."""
    if len(mac) != 6 or mac[:4] != MARK:
        return None
    return int.from_bytes(mac[4:], "big") or None


def request_port(frame: bytes) -> int | None:
    """The ingress port of a request frame the switch marked (eth_dst)."""
    return port_of(frame[:6])


def request_client(frame: bytes) -> str | None:
    """The client hardware address (chaddr) of a request frame, "aa:bb:..", or None when
    the frame is too short to hold one (IPv4 header of any length, then UDP, then BOOTP)."""
    if len(frame) < 15:
        return None
    start = 14 + (frame[14] & 0x0F) * 4 + 8 + 28
    chaddr = frame[start:start + 6]
    return chaddr.hex(":") if len(chaddr) == 6 else None


def reply_frame(packet_out: PacketOut) -> bytes | None:
    """The frame to write on the socket for a DHCP packet-out: its eth_src replaced by the
    marker of its one output port (the switch writes the router's MAC back). None if it
    cannot go this way (not a single output to a port the marker can carry)."""
    actions = packet_out.actions
    if len(actions) != 1 or not isinstance(actions[0], Output) or not 0 < actions[0].port <= MAX_PORT:
        return None
    data = packet_out.data
    return data[:6] + marker(actions[0].port) + data[12:]


# -- the switch's side ----------------------------------------------------------------------
def flows(router_mac: str) -> list[FlowMod]:
    """Table 0: requests to LOCAL with their port in eth_dst; replies from LOCAL to the port
    in their eth_src."""
    request = FlowMod(
        match={"eth_type": ETH_IP, "ip_proto": PROTO_UDP, "udp_dst": SERVER_PORT},
        actions=(SetField("eth_dst", MARK_MAC), Move("in_port_nxm", "eth_dst", 16), Output(LOCAL)),
        priority=PRIO_DHCP, cookie=COOKIE_DHCP)
    reply = FlowMod(
        match={"in_port": LOCAL, "eth_src": (MARK_MAC, MARK_MASK), "eth_type": ETH_IP,
               "ip_proto": PROTO_UDP, "udp_src": SERVER_PORT},
        actions=(Move("eth_src", "reg0", 16), SetField("eth_src", router_mac), OutputReg("reg0", 16)),
        priority=PRIO_DHCP_REPLY, cookie=COOKIE_DHCP)
    return [request, reply]


# -- the socket's filter --------------------------------------------------------------------
# Classic BPF (linux/filter.h): (code, jt, jf, k).
_LD_W_ABS, _LD_H_ABS, _LD_B_ABS, _LDX_MSH, _LD_H_IND = 0x20, 0x28, 0x30, 0xB1, 0x48
_JEQ_K, _JSET_K, _RET_K = 0x15, 0x45, 0x06
_SKF_AD_OFF, _SKF_AD_PKTTYPE, _SKF_AD_VLAN_TAG_PRESENT = -0x1000, 4, 48
_PACKET_OUTGOING = 4


def _bpf_program() -> list[tuple[int, int, int, int]]:
    """Pass (whole) only frames the switch marked: received (not our own sends), untagged,
    eth_dst starting with the marker, IPv4, UDP, not a later fragment, to port 67."""
    ins: list[tuple[int, int | str, int | str, int]] = [     # a jump to "drop": resolved below
        (_LD_W_ABS, 0, 0, (_SKF_AD_OFF + _SKF_AD_PKTTYPE) & 0xFFFFFFFF),
        (_JEQ_K, "drop", 0, _PACKET_OUTGOING),
        (_LD_W_ABS, 0, 0, (_SKF_AD_OFF + _SKF_AD_VLAN_TAG_PRESENT) & 0xFFFFFFFF),
        (_JEQ_K, 0, "drop", 0),
        (_LD_W_ABS, 0, 0, 0),                       # eth_dst[0..3]
        (_JEQ_K, 0, "drop", int.from_bytes(MARK, "big")),
        (_LD_H_ABS, 0, 0, 12),                      # ethertype
        (_JEQ_K, 0, "drop", ETH_IP),
        (_LD_B_ABS, 0, 0, 23),                      # IPv4 protocol
        (_JEQ_K, 0, "drop", PROTO_UDP),
        (_LD_H_ABS, 0, 0, 20),                      # flags + fragment offset
        (_JSET_K, "drop", 0, 0x1FFF),
        (_LDX_MSH, 0, 0, 14),                       # X = IPv4 header length
        (_LD_H_IND, 0, 0, 16),                      # UDP destination port (14 + X + 2)
        (_JEQ_K, 0, "drop", SERVER_PORT),
        (_RET_K, 0, 0, 0xFFFF),
        (_RET_K, 0, 0, 0),                          # drop
    ]
    drop = len(ins) - 1
    out = []
    for pc, (code, jt, jf, k) in enumerate(ins):
        out.append((code, drop - pc - 1 if jt == "drop" else int(jt), drop - pc - 1 if jf == "drop" else int(jf), k))
    return out


def bpf_bytes() -> bytes:
    return b"".join(struct.pack("HBBI", *ins) for ins in _bpf_program())


def attach_filter(sock: socket.socket) -> None:
    program = bpf_bytes()
    buf = ctypes.create_string_buffer(program)
    fprog = struct.pack("HL", len(program) // 8, ctypes.addressof(buf))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)   # the kernel copies it


def open_socket(ifname: str) -> socket.socket:
    """A raw socket on `ifname` that receives only marked DHCP requests. The filter is in
    place before the socket is bound, so no other frame is ever queued on it."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        attach_filter(sock)
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        try:
            # Replies skip br0's qdisc (the QoS HTB tree on the image): as packet-outs they
            # never went through it, and a reply must not wait behind a download.
            sock.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
        except OSError:
            pass
        sock.bind((ifname, ETH_P_ALL))
    except BaseException:
        sock.close()
        raise
    return sock


def open_send_socket(ifname: str) -> socket.socket:
    """A raw socket on `ifname` for replies only (homework-dhcpd reads the requests): its
    filter passes nothing, so nothing queues on it."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        program = struct.pack("HBBI", _RET_K, 0, 0, 0)
        buf = ctypes.create_string_buffer(program)
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, struct.pack("HL", 1, ctypes.addressof(buf)))
        try:
            sock.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
        except OSError:
            pass
        sock.bind((ifname, 0))
    except BaseException:
        sock.close()
        raise
    return sock


# -- the reader ------------------------------------------------------------------------------
class FastPath:
    """Reads marked requests from the socket and hands each to `on_frame(port, frame)`;
    `send` writes a reply. The read loop runs in a thread, which under the controller's
    eventlet is a green thread: recv waits in the hub, never blocking it."""

    def __init__(self, sock: socket.socket, on_frame, count):
        self.sock = sock
        self._on_frame = on_frame
        self._count = count
        self._closed = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True, name="dhcp-fastpath")
        self._thread.start()

    def _loop(self) -> None:
        handled = 0
        while not self._closed:
            try:
                frame = self.sock.recv(4096)
            except OSError as exc:
                if self._closed:
                    return
                log.warning("DHCP fast path: read failed (%s)", exc)
                time.sleep(0.1)
                continue
            self.handle(frame)
            handled += 1
            if handled % YIELD_EVERY == 0:
                time.sleep(0)           # eventlet: let the OpenFlow sender and timers run

    def handle(self, frame: bytes) -> None:
        port = request_port(frame)
        if port is None:                # the filter passes only marked frames
            self._count("dhcp.fast_path_unmarked")
            return
        self._count("dhcp.fast_path_in")
        self._on_frame(port, frame)

    def send(self, packet_out: PacketOut) -> bool:
        """Write a reply; False if it must go as a packet-out instead."""
        frame = reply_frame(packet_out)
        if frame is None:
            return False
        try:
            self.sock.send(frame)
        except OSError as exc:
            log.warning("DHCP fast path: reply not sent on the socket (%s): as a packet-out", exc)
            self._count("dhcp.fast_path_send_failed")
            return False
        self._count("dhcp.fast_path_out")
        return True

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.close()
        except OSError:
            pass
