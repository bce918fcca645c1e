"""The DHCP fast path: the port marker, the socket's BPF filter (run by the
kernel on a socketpair), the two table-0 flows in the strict fake switch (through the
os-ken adapter's bytes), and the order of what goes out: the reply on the socket first,
then the new device's flows."""
import socket
import struct

import pytest

from homework import pipeline as L
from homework.components.dhcp import fastpath as fp
from homework.components.dhcp import message as m
from homework.flows import CONTROLLER, LOCAL, Datapath, FlowMod, Output, PacketOut
from homework.packets import parse_ethernet, parse_ipv4, parse_udp
from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip

MAC = "02:00:00:00:00:01"
ROUTER_MAC = "02:00:00:00:00:01"    # FakeHost's
PORTS = {"br0": LOCAL, "d1": 1, "d2": 2, "d3": 3}


# -- the marker ------------------------------------------------------------------------------
@pytest.mark.parametrize("port", [1, 2, 255, 4096, 0xFFFF])
def test_marker_round_trip(port):
    mac = fp.marker(port)
    assert len(mac) == 6 and mac[0] & 0x02 and not mac[0] & 0x01    # locally administered unicast
    assert fp.port_of(mac) == port


@pytest.mark.parametrize("port", [0, -1, 0x10000, LOCAL, CONTROLLER])
def test_marker_refuses_ports_it_cannot_carry(port):
    with pytest.raises(ValueError):
        fp.marker(port)


@pytest.mark.parametrize("mac", [b"\xff" * 6, bytes.fromhex("020000000001"), fp.MARK + b"\0\0", fp.MARK[:3]])
def test_not_a_marker(mac):
    assert fp.port_of(mac) is None


def test_reply_frame_carries_its_port_in_eth_src():
    data = b"\xaa" * 6 + b"\xbb" * 6 + b"\x08\x00payload"
    out = fp.reply_frame(PacketOut(data=data, actions=(Output(7),)))
    assert out[:6] == b"\xaa" * 6 and fp.port_of(out[6:12]) == 7 and out[12:] == data[12:]
    # anything but one output to a plain port stays a packet-out
    assert fp.reply_frame(PacketOut(data=data, actions=(Output(LOCAL),))) is None
    assert fp.reply_frame(PacketOut(data=data, actions=(Output(1), Output(2)))) is None


# -- the filter, run by the kernel -------------------------------------------------------------
def _frame(dst: bytes, udp_dst=67, ethertype=0x0800, proto=17, ihl=5, frag=0) -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + 4 * (ihl - 5) + 8, 0, frag, 64, proto, 0,
                     b"\0" * 4, b"\xff" * 4) + b"\x01" * (4 * (ihl - 5))
    return dst + b"\x02" * 6 + struct.pack("!H", ethertype) + ip + struct.pack("!HHHH", 68, udp_dst, 8, 0)


def _passed(frames):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with a, b:
        fp.attach_filter(b)
        for f in frames:
            a.send(f)
        b.setblocking(False)
        got = []
        while True:
            try:
                got.append(b.recv(4096))
            except BlockingIOError:
                return got


def test_filter_passes_only_marked_dhcp_requests():
    wanted = [_frame(fp.marker(5)), _frame(fp.marker(9), ihl=7), _frame(fp.marker(11), frag=0x2000)]
    unwanted = [
        _frame(b"\xff" * 6),                          # a broadcast DISCOVER the switch did not mark
        _frame(fp.MARK[:3] + b"\x01\x00\x05"),        # not quite the marker
        _frame(fp.marker(5), udp_dst=68),             # a reply, not a request
        _frame(fp.marker(5), udp_dst=53),
        _frame(fp.marker(5), proto=6),                # TCP to port 67
        _frame(fp.marker(5), ethertype=0x86DD),
        _frame(fp.marker(5), frag=0x0010),            # a later fragment: no UDP header there
    ]
    got = _passed(unwanted[:3] + wanted + unwanted[3:])
    assert got == wanted


# -- the flows, in the strict fake switch (every decision through the adapter's bytes) ---------
class FakeSocket:
    def __init__(self, log):
        self.log = log
        self.closed = False

    def send(self, frame):
        self.log.append(("socket", frame))
        return len(frame)

    def recv(self, size):
        raise OSError("not in unit tests")

    def close(self):
        self.closed = True


@pytest.fixture
def fast_core(tmp_path, clock, monkeypatch):
    log = []
    monkeypatch.setattr(fp.FastPath, "start", lambda self: None)     # no read loop: frames are fed
    monkeypatch.setattr(fp, "open_socket", lambda ifname: FakeSocket(log))
    core = make_core(tmp_path, clock=clock, dhcp_answerer="controller")   # the daemon: test_dhcp_dhcpd_link.py
    core.ctx.switch_is_real = True
    apply = core.switch.apply

    def recording_apply(decisions):
        decisions = list(decisions)
        log.append(("switch", decisions))
        apply(decisions)
    core._send = recording_apply
    core.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    core.log = log
    return core


def test_requests_go_to_local_with_their_port_in_eth_dst(fast_core):
    sw = fast_core.switch
    for port in (1, 3):
        assert sw.outputs({"in_port": port, "eth_src": MAC, "eth_dst": "ff:ff:ff:ff:ff:ff",
                           "eth_type": 0x0800, "ip_proto": 17, "udp_src": 68, "udp_dst": 67}) == [LOCAL]
        assert sw.last_packet["eth_dst"] == fp.marker(port).hex(":")
    # nothing DHCP goes to the controller any more
    assert not [f for f in sw.flows if any(isinstance(a, Output) and a.port == CONTROLLER for a in f.actions)
                and f.match.get("udp_dst") == 67]


def test_replies_from_local_go_to_the_port_in_eth_src_as_the_router(fast_core):
    sw = fast_core.switch
    reply = {"in_port": LOCAL, "eth_src": fp.marker(3).hex(":"), "eth_dst": "ff:ff:ff:ff:ff:ff",
             "eth_type": 0x0800, "ip_proto": 17, "udp_src": 67, "udp_dst": 68}
    assert sw.outputs(reply) == [3]
    assert sw.last_packet["eth_src"] == ROUTER_MAC
    assert sw.last_hits[0].priority == L.PRIO_DHCP_REPLY
    # a relayed reply (67 -> 67) too, and not back to LOCAL through the request flow
    assert sw.outputs(dict(reply, udp_dst=67)) == [3]
    # the router's own frames without the marker are not steered by it
    plain = dict(reply, eth_src=ROUTER_MAC)
    assert sw.lookup(plain) is None or sw.lookup(plain).priority != L.PRIO_DHCP_REPLY


def _feed(core, frame, port):
    """A frame as the switch hands it to LOCAL: eth_dst is the marker of its port."""
    core.ctx.component("dhcp").fast_request(port, fp.marker(port) + frame[6:])


def _socket_replies(log):
    out = []
    for kind, frame in log:
        if kind == "socket":
            eth = parse_ethernet(frame)
            out.append((fp.port_of(eth.src), m.parse(parse_udp(parse_ipv4(eth.payload).payload).payload)))
    return out


def test_exchange_answers_on_the_socket_and_never_by_packet_out(fast_core):
    log = fast_core.log
    start = len(log)
    _feed(fast_core, dhcp_frame(MAC, m.DISCOVER), 2)
    [(port, offer)] = _socket_replies(log[start:])
    assert port == 2 and offer.msg_type == m.OFFER and offer.yiaddr == "10.2.0.2"
    _feed(fast_core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, offer.yiaddr), opt_ip(54, offer.server_id)]), 2)
    replies = _socket_replies(log[start:])
    assert [(p, r.msg_type) for p, r in replies] == [(2, m.OFFER), (2, m.ACK)]
    assert not fast_core.switch.packet_outs
    lease = fast_core.ctx.leases.get(MAC)
    assert lease.port == 2 and lease.active
    assert fast_core.counters.get("dhcp.fast_path_out") == 2
    assert fast_core.counters.get("core.packet_in") == 0


def test_ack_on_the_socket_before_the_new_devices_flows(fast_core):
    log = fast_core.log
    _feed(fast_core, dhcp_frame(MAC, m.DISCOVER), 1)
    start = len(log)
    _feed(fast_core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.2"), opt_ip(54, "10.2.0.1")]), 1)
    after = log[start:]
    kinds = [kind for kind, _ in after]
    assert kinds[0] == "socket"                                 # the ACK
    device_flows = [i for i, (kind, ds) in enumerate(after) if kind == "switch"
                    and any(isinstance(d, FlowMod) and L.is_routing(d.cookie) for d in ds)]
    assert device_flows and min(device_flows) > 0


def test_a_moved_devices_ack_goes_behind_its_new_ports_flows(fast_core):
    """A device whose live lease moves port (unplugged and plugged in elsewhere) ARPs for
    its gateway as soon as the ACK arrives: the ACK is a packet-out after the flows."""
    log = fast_core.log
    _feed(fast_core, dhcp_frame(MAC, m.DISCOVER), 1)
    _feed(fast_core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.2"), opt_ip(54, "10.2.0.1")]), 1)
    fast_core.port_status("d1", 1, up=False)                        # unplugged from port 1
    start = len(log)
    _feed(fast_core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.2")]), 3)
    after = log[start:]
    assert not _socket_replies(after), "the moved device's ACK went out on the socket, ahead of its flows"
    sends = [ds for kind, ds in after if kind == "switch"]
    flows_at = min(i for i, ds in enumerate(sends) if any(isinstance(d, FlowMod) and L.is_routing(d.cookie)
                                                            and d.match.get("in_port") == 3 for d in ds))
    ack_at = min(i for i, ds in enumerate(sends) if any(isinstance(d, PacketOut) for d in ds))
    assert flows_at < ack_at
    assert fast_core.ctx.leases.get(MAC).port == 3 and fast_core.counters.get("dhcp.moved_acks") == 1


def test_malformed_request_is_counted_and_dropped(fast_core):
    start = len(fast_core.log)
    frame = dhcp_frame(MAC, m.DISCOVER)
    cookie = 14 + 20 + 8 + 236
    _feed(fast_core, frame[:cookie] + b"\0\0\0\0" + frame[cookie + 4:], 1)     # no magic cookie
    assert fast_core.log[start:] == []
    assert fast_core.counters.get("dhcp.malformed") == 1


def test_no_socket_means_packet_in(tmp_path, clock, monkeypatch, caplog):
    def refuse(ifname):
        raise PermissionError("no CAP_NET_RAW")
    monkeypatch.setattr(fp, "open_socket", refuse)
    core = make_core(tmp_path, clock=clock, dhcp_answerer="controller")   # the daemon: test_dhcp_dhcpd_link.py
    core.ctx.switch_is_real = True
    for _ in range(2):
        core.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    flow = core.switch.lookup({"in_port": 1, "eth_type": 0x0800, "ip_proto": 17, "udp_dst": 67})
    assert flow.actions == (Output(CONTROLLER),)
    assert len([r for r in caplog.records if "fast path unavailable" in r.getMessage()]) == 1


def test_fast_path_off_in_the_config_means_packet_in(tmp_path, clock, monkeypatch):
    opened = []
    monkeypatch.setattr(fp, "open_socket", lambda ifname: opened.append(ifname))
    core = make_core(tmp_path, clock=clock, dhcp_fast_path=False)
    core.ctx.switch_is_real = True
    core.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    flow = core.switch.lookup({"in_port": 1, "eth_type": 0x0800, "ip_proto": 17, "udp_dst": 67})
    assert flow.actions == (Output(CONTROLLER),) and not opened


def test_stop_closes_the_socket(fast_core):
    sock = fast_core.ctx.component("dhcp").fast.sock
    fast_core.stop()
    assert sock.closed and fast_core.ctx.component("dhcp").fast is None
