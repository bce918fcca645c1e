"""What devices announce (components/identify/announce.py): mDNS/DNS-SD and SSDP parsed
into evidence, a talkative source dropped before parsing, and the component giving what is
heard to the device holding the address."""
import dns.message
import dns.rrset
import pytest

from conftest import make_core
from dhcpframes import dhcp_frame, opt_ip
from homework.components.dhcp import message as m
from homework.components.identify import announce
from homework.flows import Datapath
from test_dhcp_server import send


def announcement(records: list[tuple[str, str, list[str]]]) -> bytes:
    msg = dns.message.Message(id=0)
    msg.flags = 0x8400           # a response, authoritative: an mDNS announcement
    for name, rdtype, values in records:
        if rdtype == "PTR":
            values = [v.replace(" ", "\\ ") for v in values]
        msg.answer.append(dns.rrset.from_text_list(name.replace(" ", "\\ "), 120, "IN", rdtype, values))
    return msg.to_wire()


def test_a_cast_speakers_announcement():
    wire = announcement([
        ("_googlecast._tcp.local.", "PTR", ["Google-Home-Mini-4a3f._googlecast._tcp.local."]),
        ("Google-Home-Mini-4a3f._googlecast._tcp.local.", "TXT", ['"id=4a3f"', '"md=Google Home Mini"',
                                                                    '"fn=Kitchen speaker"']),
        ("Google-Home-Mini-4a3f._googlecast._tcp.local.", "SRV", ["0 0 8009 4a3f.local."]),
    ])
    assert announce.parse_mdns(wire) == {"mdns_name": "Google-Home-Mini-4a3f", "mdns_services": "_googlecast._tcp",
                                         "mdns_model": "Google Home Mini"}


def test_a_printers_ipp_announcement_says_its_maker():
    wire = announcement([
        ("_ipp._tcp.local.", "PTR", ["Brother HL-L2350DW._ipp._tcp.local."]),
        ("Brother HL-L2350DW._ipp._tcp.local.", "TXT", ['"ty=Brother HL-L2350DW series"', '"usb_MFG=Brother"']),
        ("_printer._tcp.local.", "PTR", ["Brother HL-L2350DW._printer._tcp.local."]),
    ])
    ev = announce.parse_mdns(wire)
    assert ev["mdns_services"] == "_ipp._tcp,_printer._tcp"
    assert (ev["mdns_model"], ev["mdns_maker"], ev["mdns_name"]) == ("Brother HL-L2350DW series", "Brother",
                                                                     "Brother HL-L2350DW")


def test_an_iphones_device_info():
    wire = announcement([("Tom's iPhone._device-info._tcp.local.", "TXT", ['"model=iPhone15,2"', '"osxvers=23"'])])
    assert announce.parse_mdns(wire) == {"mdns_name": "Tom's iPhone", "mdns_services": "_device-info._tcp",
                                         "mdns_model": "iPhone15,2"}


def test_a_query_or_garbage_says_nothing():
    query = dns.message.make_query("_googlecast._tcp.local.", "PTR").to_wire()
    assert announce.parse_mdns(query) == {}
    assert announce.parse_mdns(b"\x00" * 5) == {}
    assert announce.parse_mdns(b"\xff" * 400) == {}


def test_ssdp_notify_and_search_answer_give_the_server_header():
    notify = (b"NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nNTS: ssdp:alive\r\n"
              b"SERVER: Linux UPnP/1.0 Sonos/70.3-88200 (ZPS27)\r\n\r\n")
    assert announce.parse_ssdp(notify) == {"ssdp_server": "Linux UPnP/1.0 Sonos/70.3-88200 (ZPS27)"}
    search = b"M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nST: ssdp:all\r\n\r\n"
    assert announce.parse_ssdp(search) == {}


def test_a_talkative_source_is_dropped_before_parsing():
    now = [0.0]
    heard = []
    listener = announce.Listener("br0", lambda *a: heard.append(a))
    listener.budget = announce.Budget(per_window=3, window=10, clock=lambda: now[0])
    notify = b"NOTIFY * HTTP/1.1\r\nSERVER: Roku/9.4.0 UPnP/1.0 Roku/9.4.0\r\n\r\n"
    for _ in range(5):
        listener.take("10.2.0.2", "ssdp", notify)
    listener.take("10.2.0.6", "ssdp", notify)
    assert [a[0] for a in heard] == ["10.2.0.2"] * 3 + ["10.2.0.6"] and listener.dropped == 2
    now[0] = 11
    listener.take("10.2.0.2", "ssdp", notify)
    assert len(heard) == 5


@pytest.fixture
def core(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "identify"), clock=clock)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


def test_what_is_heard_goes_to_the_device_holding_the_address(core):
    mac = "02:00:00:00:00:31"
    [(offer, *_)] = send(core, dhcp_frame(mac, m.DISCOVER))
    send(core, dhcp_frame(mac, m.REQUEST, options=[opt_ip(50, offer.yiaddr), opt_ip(54, offer.server_id)]))
    identify = core.ctx.component("identify")
    identify._heard_one(offer.yiaddr, "mdns", {"mdns_services": "_ipp._tcp", "mdns_maker": "Brother"})
    identify._heard_one("10.9.9.9", "mdns", {"mdns_services": "_ipp._tcp"})       # nobody's address
    identify.drain()
    view = core.ctx.facts_about(mac)["identity"]
    assert (view["type"], view["label"]) == ("printer", "Brother printer")
    assert "offers printing over mDNS" in view["why"]
    assert core.ctx.counters.get("identify.unknown_announcer") == 1


def test_pending_devices_announcements_reach_the_routers_stack_and_nothing_else(core):
    flow = core.switch.lookup({"in_port": 2, "eth_src": "02:00:00:00:00:99", "eth_type": 0x0800, "ip_proto": 17,
                               "ipv4_src": "10.2.0.99", "ipv4_dst": "224.0.0.251", "udp_dst": 5353})
    assert flow is not None and [a.port for a in flow.actions] == [0xFFFFFFFE]


# -- mDNS over IPv6 ----------------------------------------------------------------------------------
def mdns6_frame(src_mac: str, payload: bytes, dst: str = "ff02::fb", dport: int = 5353, next_header: int = 17,
                ethertype: int = 0x86DD) -> bytes:
    import socket
    import struct
    udp = struct.pack("!HHHH", 5353, dport, 8 + len(payload), 0) + payload
    ip6 = (struct.pack("!IHBB", 6 << 28, len(udp), next_header, 255) + socket.inet_pton(socket.AF_INET6, "fe80::1c2")
           + socket.inet_pton(socket.AF_INET6, dst))
    return (bytes.fromhex("3333000000fb") + bytes.fromhex(src_mac.replace(":", "")) + struct.pack("!H", ethertype)
            + ip6 + udp)


SPEAKER = [("_googlecast._tcp.local.", "PTR", ["Google-Home-Mini-4a3f._googlecast._tcp.local."]),
           ("Google-Home-Mini-4a3f._googlecast._tcp.local.", "TXT", ['"md=Google Home Mini"'])]


def test_an_ipv6_mdns_frame_gives_its_source_mac_and_payload_and_nothing_else_does():
    wire = announcement(SPEAKER)
    assert announce.mdns6_frame(mdns6_frame("02:00:00:00:00:41", wire)) == ("02:00:00:00:00:41", wire)
    for other in (mdns6_frame("02:00:00:00:00:41", wire, dst="ff02::1"),
                  mdns6_frame("02:00:00:00:00:41", wire, dport=5354),
                  mdns6_frame("02:00:00:00:00:41", wire, next_header=0),        # an extension header first
                  mdns6_frame("02:00:00:00:00:41", wire, ethertype=0x0800),
                  b"\x00" * 20):
        assert announce.mdns6_frame(other) is None


def test_the_kernels_filter_passes_only_mdns_over_ipv6():
    """The classic BPF program, run by the kernel: on a datagram socket pair it sees each
    datagram from its first byte, as the packet socket sees each frame."""
    import socket
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with a, b:
        announce.attach_mdns6_filter(b)
        wire = announcement(SPEAKER)
        frames = [mdns6_frame("02:00:00:00:00:41", wire, dst="ff02::1"),
                  mdns6_frame("02:00:00:00:00:41", wire, dport=53),
                  mdns6_frame("02:00:00:00:00:41", wire, ethertype=0x0800),
                  mdns6_frame("02:00:00:00:00:42", wire)]
        for frame in frames:
            a.send(frame)
        b.settimeout(2)
        assert b.recv(9000) == frames[-1]             # the three others never arrive
        b.setblocking(False)
        with pytest.raises(BlockingIOError):
            b.recv(9000)


def test_what_is_heard_over_ipv6_goes_to_the_device_with_that_mac(core):
    mac = "02:00:00:00:00:43"
    send(core, dhcp_frame(mac, m.DISCOVER))
    identify = core.ctx.component("identify")
    heard = []
    listener = announce.Listener("br0", lambda *a: heard.append(a), ipv6=True)
    listener.take(announce.MAC_SOURCE + mac, "mdns", announcement(SPEAKER))
    identify._heard_one(*heard[0])
    identify._heard_one(announce.MAC_SOURCE + "02:00:00:00:00:99", "mdns", {"mdns_services": "_ipp._tcp"})
    identify.drain()
    assert core.ctx.facts_about(mac)["identity"]["label"] == "Google Home Mini speaker"
    assert core.ctx.counters.get("identify.unknown_announcer") == 1


def test_a_pending_devices_ipv6_mdns_reaches_the_routers_stack(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "identify"), clock=clock, ipv6_enabled=True,
                     ipv6_prefix="2001:db8:100::/48")
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    flow = core.switch.lookup({"in_port": 2, "eth_src": "02:00:00:00:00:99", "eth_type": 0x86DD, "ip_proto": 17,
                               "ipv6_src": "fe80::99", "ipv6_dst": "ff02::fb", "udp_dst": 5353})
    assert flow is not None and [a.port for a in flow.actions] == [0xFFFFFFFE]


def test_a_huge_announcement_is_bounded_and_one_declaring_thousands_of_records_is_not_parsed(monkeypatch):
    many = [(f"{'x' * 60}-{i}._svc{i}._tcp.local.", "TXT", ['"md=' + "M" * 250 + '"']) for i in range(40)]
    big = announcement([("_svc._tcp.local.", "PTR", [f"{'n' * 63}._svc._tcp.local."]), *many])
    assert len(big) > 9000 // 2
    said = announce.parse_mdns(big)
    assert len(said["mdns_services"].split(",")) == announce.SERVICES_MAX
    assert len(said["mdns_name"]) <= 64 and len(said["mdns_model"]) <= 64
    # a header declaring 5,000 answers (a datagram of tiny compressed records): never parsed
    bomb = bytes(4) + (0).to_bytes(2, "big") + (5000).to_bytes(2, "big") + bytes(4) + b"\xc0\x0c" * 4000
    monkeypatch.setattr(announce.dns.message, "from_wire", lambda *a, **k: pytest.fail("parsed"))
    assert announce.parse_mdns(bomb) == {}


def test_ssdp_reads_only_the_first_two_kilobytes_of_a_huge_header():
    huge = b"NOTIFY * HTTP/1.1\r\n" + b"X-PAD: " + b"a" * 60000 + b"\r\nSERVER: late\r\n\r\n"
    assert announce.parse_ssdp(huge) == {}
    early = b"NOTIFY * HTTP/1.1\r\nSERVER: " + b"s" * 5000 + b"\r\n\r\n"
    assert announce.parse_ssdp(early) == {"ssdp_server": "s" * 64}
