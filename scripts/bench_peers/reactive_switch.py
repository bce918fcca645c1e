"""Benchmark peer: a reactive OpenFlow 1.3 switch on os-ken, run by osken-manager.

Debian's python3-os-ken ships no example apps (no os_ken.app.simple_switch_13), so this
is our own minimal equivalent, in two modes (environment REACTIVE_MODE):

  mac   (default) the classic learning switch: learn source MAC -> port from packet-ins,
        install (in_port, eth_src, eth_dst) -> port once both ends are known; flood
        otherwise. After the first packets between two hosts the controller is idle.
  flow  the seed's reactive design: every new 5-tuple goes to the controller, which
        installs an exact-match flow (30 s idle timeout) and sends the packet on: the
        controller is on the path of every new connection.
"""
import os

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib.packet import ethernet, ipv4, packet, tcp, udp
from os_ken.ofproto import ofproto_v1_3

MODE = os.environ.get("REACTIVE_MODE", "mac")


class ReactiveSwitch(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ports = {}          # mac -> port

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        dp.send_msg(parser.OFPFlowMod(dp, priority=0, match=parser.OFPMatch(), instructions=[
            parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS,
                                         [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)])]))

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        msg = ev.msg
        dp = msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        in_port = msg.match["in_port"]
        pkt = packet.Packet(msg.data)
        eth = pkt.get_protocol(ethernet.ethernet)
        if eth is None:
            return
        self.ports[eth.src] = in_port
        out_port = self.ports.get(eth.dst, ofp.OFPP_FLOOD)
        actions = [parser.OFPActionOutput(out_port)]
        if out_port != ofp.OFPP_FLOOD:
            match = self._match(parser, in_port, eth, pkt)
            if match is not None:
                dp.send_msg(parser.OFPFlowMod(
                    dp, priority=10, match=match, idle_timeout=30 if MODE == "flow" else 0,
                    instructions=[parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]))
        dp.send_msg(parser.OFPPacketOut(dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=in_port, actions=actions,
                                        data=msg.data))

    @staticmethod
    def _match(parser, in_port, eth, pkt):
        if MODE != "flow":
            return parser.OFPMatch(in_port=in_port, eth_src=eth.src, eth_dst=eth.dst)
        ip = pkt.get_protocol(ipv4.ipv4)
        if ip is None:
            return parser.OFPMatch(in_port=in_port, eth_src=eth.src, eth_dst=eth.dst)
        fields = dict(in_port=in_port, eth_type=0x0800, ipv4_src=ip.src, ipv4_dst=ip.dst, ip_proto=ip.proto)
        t, u = pkt.get_protocol(tcp.tcp), pkt.get_protocol(udp.udp)
        if t is not None:
            fields.update(tcp_src=t.src_port, tcp_dst=t.dst_port)
        elif u is not None:
            fields.update(udp_src=u.src_port, udp_dst=u.dst_port)
        return parser.OFPMatch(**fields)
