"""Open vSwitch (Nicira) action encodings that os-ken 2.5 lacks or names differently.

`learn` is what lets the switch create the per-flow accounting entries itself. We write
NXAST_LEARN2 (OVS >= 2.8; layout from OVS's include/openflow/nicira-ext.h, struct
nx_action_learn2), which os-ken 2.5 lacks, with its flow limit at 0 (none): the limit
made OVS scan the whole table on every learn, so the routing component counts flows
itself."""
from __future__ import annotations

import struct
from typing import Any

from os_ken.ofproto import nicira_ext

from .. import flows as F

NXAST_LEARN2 = 45
NX_LEARN_F_SEND_FLOW_REM = 1 << 0

# OXM match-dict names -> (NXM field name in os-ken, width in bits)
NXM_FIELDS = {
    "in_port": ("in_port_nxm", 16),
    "eth_src": ("eth_src_nxm", 48),
    "eth_dst": ("eth_dst_nxm", 48),
    "eth_type": ("eth_type_nxm", 16),
    "ip_proto": ("ip_proto_nxm", 8),
    "ipv4_src": ("ipv4_src_nxm", 32),
    "ipv4_dst": ("ipv4_dst_nxm", 32),
    "ipv6_src": ("ipv6_src_nxm", 128),
    "ipv6_dst": ("ipv6_dst_nxm", 128),
    "tcp_src": ("tcp_src_nxm", 16),
    "tcp_dst": ("tcp_dst_nxm", 16),
    "udp_src": ("udp_src_nxm", 16),
    "udp_dst": ("udp_dst_nxm", 16),
    "icmpv4_type": ("icmpv4_type_nxm", 8),
    "icmpv4_code": ("icmpv4_code_nxm", 8),
}


def learn_action(parser, ofp, learn: F.Learn):
    """An os-ken action object for F.Learn (NXAST_LEARN2)."""
    specs = []
    for name, value in learn.fields:
        if name not in NXM_FIELDS:
            raise ValueError(f"learn: field {name!r} not supported")
        nxm, bits = NXM_FIELDS[name]
        src = (nxm, 0) if value is None else int(value)
        specs.append(parser.NXFlowSpecMatch(src=src, dst=(nxm, 0), n_bits=bits))
    action_cls = _learn2_class(parser, ofp)
    return action_cls(learn, specs)


_CLASS_CACHE: dict = {}


def _learn2_class(parser, ofp):
    cls = _CLASS_CACHE.get(id(parser))
    if cls is not None:
        return cls
    base: Any = parser.NXActionLearn     # os-ken's class, made per OpenFlow version at run time

    class NXActionLearn2(base):
        _subtype = NXAST_LEARN2

        def __init__(self, learn: F.Learn, specs):
            flags = NX_LEARN_F_SEND_FLOW_REM if learn.send_flow_removed else 0
            super().__init__(table_id=learn.table_id, specs=specs, idle_timeout=learn.idle_timeout,
                             hard_timeout=learn.hard_timeout, priority=learn.priority,
                             cookie=learn.cookie, flags=flags,
                             fin_idle_timeout=learn.fin_idle_timeout)

        def serialize_body(self):
            data = bytearray(struct.pack(
                self._fmt_str, self.idle_timeout, self.hard_timeout, self.priority, self.cookie,
                self.flags, self.table_id, self.fin_idle_timeout, self.fin_hard_timeout))
            data += struct.pack("!IH2x", 0, 0)      # limit 0 (none), no result bit
            for spec in self.specs:
                data += spec.serialize()
            return data

    _CLASS_CACHE[id(parser)] = NXActionLearn2
    return NXActionLearn2


def move_action(parser, move: F.Move):
    """NXAST_REG_MOVE for F.Move (the DHCP fast path carries ports in MACs)."""
    return parser.NXActionRegMove(src_field=move.src, dst_field=move.dst, n_bits=move.n_bits,
                                  src_ofs=move.src_ofs, dst_ofs=move.dst_ofs)


def output_reg_action(parser, out: F.OutputReg):
    """NXAST_OUTPUT_REG for F.OutputReg."""
    return parser.NXActionOutputReg(ofs_nbits=nicira_ext.ofs_nbits(out.ofs, out.ofs + out.n_bits - 1),
                                    src=out.src, max_len=out.max_len)
