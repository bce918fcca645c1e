"""Every cut-off device is told why: the reason (pending, denied, paused, bedtime, over its
allowance) in one place (cutoff.py), the page in the household's words, the API of RFC
8908, dnsd told to answer it with the router (nothing upstream), its web traffic to the
page over both families, and the flows: a cut-off device keeps its gateway's services and
DNS answers from an outside resolver's address, nothing else. On the strict fake switch."""
import html
import json
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from homework import cutoff_pages
from homework.components.dhcp import message as m
from test_dns_component import FakeDnsNet
from homework.cutoff import Cut, captive_api_uri
from homework.flows import LOCAL, PacketIn
from routingkit import from_router, ip_pkt, join, routing_core
from dhcpframes import dhcp_frame
from test_dns_component import FakeLink

LONDON = ZoneInfo("Europe/London")
A, B, C = "02:00:00:00:00:0a", "02:00:00:00:00:0b", "02:00:00:00:00:0c"
WEB, RESOLVER = "203.0.113.10", "203.0.113.99"


def at(*args):
    return datetime(*args, tzinfo=LONDON).timestamp()


@pytest.fixture
def home(tmp_path, clock, monkeypatch):
    clock.now = at(2026, 5, 12, 20, 0)          # a Tuesday evening
    # DNS interception on (so the captive pages get port 443 too), its nftables faked
    monkeypatch.setattr("homework.components.dns.component.DnsNet", FakeDnsNet)
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "dns", "schedules", "usage"),
                        timezone="Europe/London", dns_control="", dns_intercept=True,
                        ipv6_enabled=True, ipv6_prefix="2001:db8:100::/48")
    dns = core.ctx.component("dns")
    dns.link = FakeLink()
    for mac, port in ((A, 1), (B, 2), (C, 3)):
        join(core, mac, port)
    core.commands.call("permit", mac=A)
    core.commands.call("permit", mac=B)
    core.commands.call("set-meta", mac=A, name="Tom's <laptop>")
    dns.link.take()
    return core


def cuts(core):
    return [(ev.mac, ev.kind) for t, ev in core.events if t == "cutoff"]


def dnsd_state(core, mac):
    lease = core.ctx.leases.get(mac)
    return core.ctx.component("dns").device_lines[lease.ip].split()[3]


def test_each_reason_is_named_with_its_end(home, clock):
    assert home.ctx.cutoffs.of(C) == Cut("pending")
    home.commands.call("deny", mac=C)
    assert home.ctx.cutoffs.of(C) == Cut("denied")
    assert home.ctx.cutoffs.of(A) is None
    home.commands.call("pause", mac=A, minutes=30)
    assert home.ctx.cutoffs.of(A) == Cut("paused", at(2026, 5, 12, 20, 30))
    home.commands.call("schedule-add", mac=B, days="tue", start="19:00", end="07:00")
    assert home.ctx.cutoffs.of(B) == Cut("bedtime", at(2026, 5, 13, 7, 0))
    home.commands.call("resume", mac=A)
    assert home.ctx.cutoffs.of(A) is None
    home.commands.call("usage-limit", mac=A, allowance="1M", period="month", action="block")
    home.bus.publish("bandwidth", mac=A, ip="", bytes=2_000_000, up=0, down=2_000_000)
    assert home.ctx.cutoffs.of(A) == Cut("allowance", at(2026, 6, 1, 0, 0), "month")
    assert ("02:00:00:00:00:0a", "paused") in cuts(home) and (A, "allowance") in cuts(home) \
        and (B, "bedtime") in cuts(home)
    home.commands.call("blacklist", mac=C)
    assert home.ctx.cutoffs.of(C) is None          # a blacklisted device is not answered at all


def test_a_cut_off_device_is_captive_in_dnsd_and_its_web_goes_to_the_page(home):
    dns = home.ctx.component("dns")
    a = home.ctx.leases.get(A)
    net64 = str(home.ctx.ipv6.device_prefix(a.index).network_address)     # its /64, by its first address
    assert dnsd_state(home, A) == "permitted" and a.ip not in dns.net.captive_ips
    home.commands.call("pause", mac=A, minutes=60)
    assert dnsd_state(home, A) == "cutoff"
    assert {a.ip, net64} <= dns.net.captive_ips
    pushed = dns.link.take()
    assert any(line.startswith(f"device {a.ip} {A} cutoff ") for line in pushed), pushed
    home.commands.call("resume", mac=A)
    assert dnsd_state(home, A) == "permitted" and not {a.ip, net64} & dns.net.captive_ips
    # over its allowance: the same
    home.commands.call("usage-limit", mac=A, allowance="1M", period="day", action="block")
    home.bus.publish("bandwidth", mac=A, ip="", bytes=2_000_000, up=0, down=2_000_000)
    assert dnsd_state(home, A) == "cutoff" and a.ip in dns.net.captive_ips
    home.commands.call("usage-lift", mac=A)
    assert dnsd_state(home, A) == "permitted" and a.ip not in dns.net.captive_ips


def test_a_paused_device_keeps_its_gateway_and_dns_answers_and_nothing_else(home):
    a = home.ctx.leases.get(A)
    prefix = home.ctx.ipv6.device_prefix(a.index)
    me6, router6 = str(prefix.network_address + 0x77), str(prefix.network_address + 1)
    sw = home.switch
    home.commands.call("pause", mac=A, minutes=60)
    for proto, dport in ((17, 53), (6, 53), (6, 80), (6, 443), (1, 0)):
        assert sw.outputs(ip_pkt(1, A, a.ip, a.router, proto=proto, dport=dport)) == [LOCAL], (proto, dport)
    assert sw.outputs(ip_pkt(1, A, a.ip, WEB, dport=443)) == []
    assert sw.outputs(ip_pkt(1, A, a.ip, a.router, dport=8080)) == []
    # answers: from its gateway; DNS answers from anywhere (dnsd answered a query to an
    # outside resolver); an established download from the internet is cut
    assert sw.outputs(from_router(a.router, a.ip, sport=80)) == [1]
    assert sw.outputs(from_router(RESOLVER, a.ip, proto=17, sport=53)) == [1]
    assert sw.outputs(from_router(WEB, a.ip, sport=443)) == []
    assert sw.outputs(from_router(WEB, a.ip, proto=1, sport=0)) == []

    def v6(port, mac, src, dst, proto=6, **kw):
        return {"in_port": port, "eth_src": mac, "eth_type": 0x86DD, "ipv6_src": src, "ipv6_dst": dst,
                "ip_proto": proto, "nw_ttl": 64, **kw}
    assert sw.outputs(v6(1, A, me6, router6, tcp_src=40000, tcp_dst=80)) == [LOCAL]
    assert sw.outputs(v6(1, A, me6, router6, tcp_src=40000, tcp_dst=443)) == [LOCAL]
    assert sw.outputs(v6(1, A, me6, "2001:db8:cafe::10", tcp_src=40000, tcp_dst=443)) == []
    assert sw.outputs(v6(1, A, me6, "ff02::1:ff00:1", 58, icmpv6_type=135)) == [LOCAL]   # neighbour discovery
    assert sw.outputs(v6(LOCAL, "02:00:00:00:00:01", router6, me6, tcp_src=80, tcp_dst=40000)) == [1]
    assert sw.outputs(v6(LOCAL, "02:00:00:00:00:01", "2001:db8:cafe::53", me6, 17, udp_src=53, udp_dst=40000)) == [1]
    assert sw.outputs(v6(LOCAL, "02:00:00:00:00:01", "2001:db8:cafe::10", me6, tcp_src=443, tcp_dst=40000)) == []


def test_the_pages_say_why_in_the_households_words(home, clock):
    tz, now = LONDON, clock.now
    page = cutoff_pages.render(Cut("paused", at(2026, 5, 13, 7, 0)), A, "Tom's <laptop>", now, tz)
    assert "Paused by the household until 07:00" in page and 'data-reason="paused"' in page
    assert html.escape("Tom's <laptop>") in page and "<laptop>" not in page
    page = cutoff_pages.render(Cut("bedtime", at(2026, 5, 13, 7, 0)), A, "", now, tz)
    assert "Bedtime: the internet is back at 07:00" in page
    page = cutoff_pages.render(Cut("allowance", at(2026, 6, 1), "month"), A, "", now, tz)
    assert "This month's allowance is used up" in page and "comes back on 1 June" in page
    page = cutoff_pages.render(Cut("allowance", at(2026, 5, 13), "day"), A, "", now, tz)
    assert "Today's allowance is used up" in page and "comes back at midnight" in page
    page = cutoff_pages.render(Cut("denied"), A, "", now, tz)
    assert "Not allowed on this network" in page
    page = cutoff_pages.render(Cut("pending"), A, "", now, tz)
    assert "Waiting for approval on the Guest Board" in page
    # a pause of several days names the day
    assert "until Friday 07:00" in cutoff_pages.render(Cut("paused", at(2026, 5, 15, 7, 0)), A, "", now, tz)
    assert "until 20 May 07:00" in cutoff_pages.render(Cut("paused", at(2026, 5, 20, 7, 0)), A, "", now, tz)


def test_pieces_are_added_to_their_reasons_page_only(home, clock):
    piece = lambda mac: f'<p id="extra">for {mac}</p>'        # noqa: E731
    cutoff_pages.add_piece("denied", piece)
    cutoff_pages.add_piece("denied", piece)        # once per piece
    try:
        page = cutoff_pages.render(Cut("denied"), C, "", clock.now, LONDON)
        assert page.count(f'<p id="extra">for {C}</p>') == 1
        assert "extra" not in cutoff_pages.render(Cut("paused", clock.now + 60), C, "", clock.now, LONDON)
    finally:
        cutoff_pages._PIECES["denied"].remove(piece)


def test_dhcp_and_router_advertisements_announce_the_captive_portal_api(home):
    c = home.ctx.leases.get(C)
    home.switch.take_packet_outs()
    home.packet_in(PacketIn(in_port=3, data=dhcp_frame(C, m.REQUEST, src_ip=c.ip, dst_ip=c.router)))
    from homework.packets import parse_ethernet, parse_ipv4, parse_udp
    frames = [parse_ethernet(p.data) for p in home.switch.take_packet_outs()]
    [msg] = [m.parse(parse_udp(parse_ipv4(f.payload).payload).payload) for f in frames if f.ethertype == 0x0800]
    assert msg.options[m.OPT_CAPTIVE_PORTAL] == f"https://{c.router}/ws.v1/captive-portal".encode()
    assert captive_api_uri("2001:db8::1") == "https://[2001:db8::1]/ws.v1/captive-portal"
    from homework.components.routing import ndp
    import ipaddress
    frame = ndp.router_advertisement(b"\x02" * 6, b"\x04" * 6, ipaddress.IPv6Network("2001:db8:0:5::/64"), 600,
                                     captive="https://[2001:db8:0:5::1]/ws.v1/captive-portal")
    body = frame[14 + 40:]
    options, found = body[16:], None
    while options:
        kind, length = options[0], options[1] * 8
        if kind == 37:
            found = options[2:length].rstrip(b"\0")
        options = options[length:]
    assert found == b"https://[2001:db8:0:5::1]/ws.v1/captive-portal"
    assert (len(body) - 16) % 8 == 0


@pytest.fixture
def api_home(tmp_path, clock):
    clock.now = at(2026, 5, 12, 20, 0)
    pwfile = tmp_path / "admin-password"
    pwfile.write_text("correct horse battery\n")
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "schedules", "api"),
                        timezone="Europe/London", api_admin_password_file=str(pwfile),
                        ipv6_enabled=True, ipv6_prefix="2001:db8:100::/48")
    for mac, port in ((A, 1), (C, 3)):
        join(core, mac, port)
    core.commands.call("permit", mac=A)
    core.commands.call("set-meta", mac=A, name="Tom's <laptop>")
    from test_api import Api
    return core, Api(core)


def test_the_captive_api_and_page_are_about_the_caller_over_either_family(api_home):
    core, api = api_home
    a, c = core.ctx.leases.get(A), core.ctx.leases.get(C)
    a6 = str(core.ctx.ipv6.device_prefix(a.index).network_address + 0xabc)
    host = {"Host": a.router}

    def portal(client):
        r = api.call("GET", "captive-portal", client=client, headers=host)
        assert r.status_int == 200 and r.content_type == "application/captive+json", r.body
        return json.loads(r.body)

    def page(client):
        r = api.call("GET", "captive-portal/page", client=client, headers=host)
        assert r.status_int == 200 and r.content_type == "text/html", r.body
        return r.body.decode()
    assert portal(a.ip) == {"captive": False} == portal(a6)
    assert "On the network" in page(a.ip)
    core.commands.call("pause", mac=A, minutes=10)
    for client in (a.ip, a6):
        body = portal(client)
        assert body["captive"] is True and body["user-portal-url"] == f"https://{a.router}/"
        assert body["seconds-remaining"] == 600 and body["can-extend-session"] is False
        text = page(client)
        assert "Paused by the household until 20:10" in text and html.escape("Tom's <laptop>") in text
    # a pending device: no credentials needed, and it is told it waits (no end)
    assert portal(c.ip)["captive"] is True and "seconds-remaining" not in portal(c.ip)
    assert "Waiting for approval on the Guest Board" in page(c.ip)
    # the router's own ::1 in a device's /64 is not that device
    router6 = str(core.ctx.ipv6.device_prefix(a.index).network_address + 1)
    assert portal(router6) == {"captive": False}
    # nothing else of the API for a cut-off device
    assert api.call("GET", "devices", client=c.ip).status_int == 403
