"""os-ken glue: turns OpenFlow 1.3 events into Core calls and decisions into messages.

Every handler catches and logs exceptions: with os-ken an exception escaping a handler
can silently stop the app's event loop."""
from __future__ import annotations

import functools
import logging
import ssl
import threading
import time
from typing import Any

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.controller import datapath_connection_factory
from os_ken.controller.handler import CONFIG_DISPATCHER, DEAD_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_3

from .. import flows as F
from .. import events
from .. import pki, satellites
from ..core import Core
from . import nx, ofencode
from . import router_ports
from .cable_guard import CableGuard, CableWatch
from .switch_gate import SwitchGate

log = logging.getLogger("homework.adapter")

CORE: Core | None = None   # set by homework.main before os-ken instantiates the app

# Decisions are serialised at once but written to the switch together, once the hub gets
# a turn (or when this much is waiting): under load a whole burst of packet-outs is one
# send() instead of one per message (each a loopback TCP write that wakes the switch).
SEND_BATCH_BYTES = 64 * 1024

_REMOVED_REASONS = {0: "idle_timeout", 1: "hard_timeout", 2: "delete", 3: "group_delete"}
_PACKET_IN_REASONS = {0: "no_match", 1: "action", 2: "invalid_ttl"}


def guarded(fn):
    @functools.wraps(fn)
    def wrapper(self, ev):
        try:
            fn(self, ev)
        except Exception:
            log.exception("handler %s failed", fn.__name__)
    return wrapper


class HomeworkApp(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if CORE is None:
            raise RuntimeError("homework.adapter.osken_app.CORE must be set before loading the app")
        self.core = CORE
        self.datapath = None
        self.gate = SwitchGate(self.core.config.bridge, self.core.config.satellites)
        self.satellite_dps: dict[int, Any] = {}     # dpid -> os-ken Datapath of a connected satellite
        self._satellite_ports: dict[int, list[int]] = {}   # dpid -> its device ports with link, as last planned
        self._satellite_uplinks: dict[int, int] = {}       # dpid -> its uplink's port number
        # Satellites behind others whose cable lost its link (cable_guard.py). The lock is this
        # process's memory, and a cable may have been swapped while no controller was running:
        # at start every satellite in a tree is locked until it connects with its certificate.
        self._tree_locked: set[int] = {s.index for s in self.core.config.satellites if s.parent is not None}
        self.patch_links = self.core.patch_links     # the core's: ctx.is_radio_port and radio_port read it
        self._aggregate_requests: dict = {}     # xid -> AggregateStatsRequest awaiting its reply
        self.out = SendBatcher(hub.spawn, spawn_after=hub.spawn_after,
                               hold=self.core.config.openflow_flow_hold_ms / 1000.0,
                               on_hold=lambda: self.core.ctx.count("controller.flow_writes_held"))
        self.lean_encoder = self.core.config.openflow_lean_encoder
        self.core._send = self.send_decisions
        self.core.bus.subscribe("satellite", self._on_pairing)
        self.cable_guard = CableGuard(self.core.config.satellites)
        self.cable_watch: CableWatch | None = None
        if self.core.config.satellites:
            # off the hub: ovs-vsctl and ip wait for the switch and the kernel
            threading.Thread(target=self._prepare_management_links, daemon=True, name="satellite-mgmt").start()
        if self.cable_guard.cables:
            self.cable_watch = CableWatch(self._cable_changed)
            threading.Thread(target=self.cable_watch.run, daemon=True, name="satellite-cables").start()
        if self.core.config.satellites_tls_port:
            try:
                self._start_tls_listener()
            except (OSError, ValueError) as exc:     # no CA (read-only state), port taken: no satellites
                log.error("satellites: no TLS listener: %s", exc)

    # -- satellites over TLS --------------------------------------------------
    def _prepare_management_links(self) -> None:
        for sat in self.core.config.satellites:
            router_ports.prepare(sat, self.core.config.datapath_type, self.core.config.bridge)

    def _cable_changed(self, cable: str, resets: int) -> None:
        """Open vSwitch counted a carrier change on an interface (cable_guard.py): a
        satellite's cable that changed is locked, and its session, if any, closed."""
        sat = self.cable_guard.observe(cable, resets)
        if sat is None:
            return
        router_ports.lock_cable(sat)
        self._cable_locked(sat, f"cable {cable}")

    def _cable_locked(self, sat: satellites.Satellite, cable: str) -> None:
        """Said, counted, and the satellite's session closed: it proves itself again by connecting."""
        self.core.counters.count("core.satellite_cable_locked")
        log.warning("satellite %d's %s lost its link: it carries only the management link until the satellite "
                    "connects again with its certificate", sat.index, cable)
        dp = self.satellite_dps.get(sat.dpid)
        if dp is not None:
            dp.close()

    def _tree_cable_dropped(self, dpid: int, port_no: int) -> None:
        """A satellite's port lost its link: if another satellite's cable plugs into it,
        that one's VLANs stop passing (its management link stays) until it connects again
        with its certificate, as the router's own cables do (cable_guard.py). Taken from the
        port-status message itself: a quick unplug and replug may be over before the next
        port list is read."""
        sat = self.gate.satellites.get(dpid)
        if sat is None:
            return
        behind = satellites.subtree(sat, self.core.config.satellites).get(port_no)
        if behind is None or behind[0] in self._tree_locked:
            return
        child = satellites.by_index(self.core.config.satellites, behind[0])
        if child is None:
            return
        self._tree_locked.add(child.index)
        self._cable_locked(child, f"cable (port {port_no} of satellite {sat.index})")

    def _tree_cable_trusted(self, sat: satellites.Satellite) -> None:
        """A satellite behind another connected with its certificate: its VLANs pass its
        parent again (the parent's table is planned anew from its port list)."""
        if sat.index not in self._tree_locked or sat.parent is None:
            return
        self._tree_locked.discard(sat.index)
        parent = satellites.by_index(self.core.config.satellites, sat.parent[0])
        dp = self.satellite_dps.get(parent.dpid) if parent is not None else None
        if dp is not None:
            dp.send_msg(dp.ofproto_parser.OFPPortDescStatsRequest(dp, 0))

    def _start_tls_listener(self) -> None:
        """A second OpenFlow listener, TLS only, for satellites: the household CA signs
        both ends, and a switch without a certificate from it never completes the
        handshake (os-ken's own listener serves either tcp or ssl, not both)."""
        config = self.core.config
        ca = pki.HouseholdCA(config.pki_dir).ensure()
        ctx = ca.server_context()
        address = (config.satellites_tls_listen or config.of_listen, config.satellites_tls_port)

        def handshake(sock, peer):
            try:
                tls = ctx.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError) as exc:
                self.core.counters.count("core.tls_refused")
                log.warning("OpenFlow over TLS from %s refused at the handshake: %s", peer[0], exc)
                sock.close()
                return
            try:
                datapath_connection_factory(tls, peer)
            except ValueError as exc:       # "read on closed SSL socket": we closed it (_on_pairing)
                log.info("satellite session from %s closed: %s", peer[0], exc)

        server = hub.StreamServer(address, handshake)
        hub.spawn(server.serve_forever)
        log.info("satellites: OpenFlow over TLS on %s:%d (household CA %s)", *address, ca.ca_cert_path)

    def _certificate_problem(self, dp, sat: satellites.Satellite | None) -> str:
        """Why this session may not drive the datapath it announced ('' if it may): a
        satellite must show the certificate paired for its dpid; a TLS session is never
        the router's bridge."""
        getpeercert = getattr(dp.socket, "getpeercert", None)
        cert_dpid, serial = pki.peer_identity(getpeercert(binary_form=True)) if getpeercert else (None, None)
        if sat is None:
            return "a switch that connected over TLS is never the router's bridge" if getpeercert else ""
        if not self.core.config.satellites_require_tls:
            return ""
        if getpeercert is None:
            return f"satellite {sat.index} connected without TLS (its certificate is required)"
        if cert_dpid != dp.id:
            return (f"satellite {sat.index} showed a certificate for datapath "
                    f"{'none' if cert_dpid is None else f'{cert_dpid:016x}'}, not its own")
        if not self.core.pairing.admits(dp.id, serial):
            return (f"satellite {sat.index} showed a certificate that is no longer its pairing "
                    "(denied, forgotten or paired again)")
        return ""

    def _on_pairing(self, topic: str, ev) -> None:
        """A satellite was denied, forgotten or asked to pair again: if it is connected, its
        table is emptied but for its management link (fail_mode=secure would otherwise
        keep its devices' paths), the
        router's ports for it are removed and the session is closed; when it reconnects
        with its old certificate it is refused."""
        dpid = ev.dpid
        if ev.what == "permitted" or dpid not in self.satellite_dps:
            return
        dp = self.satellite_dps.pop(dpid)
        sat = self.gate.satellites.get(dpid)
        log.warning("satellite datapath %016x is no longer paired (%s): emptied and disconnected", dpid, ev.what)
        # all but its management link: it may still reach us, to be refused or to ask again
        uplink = self._satellite_uplinks.get(dpid)
        self._send_to(dp, [F.FlowDelete(cookie=0, cookie_mask=0)] +
                      (satellites.management_flows(uplink) if uplink is not None else []))
        self.out.flush()
        if sat is not None:
            threading.Thread(target=router_ports.unplug, args=(sat, self.core.config.bridge), daemon=True,
                             name="satellite-unplug").start()
        hub.spawn_after(0.5, dp.close)      # after the flow delete has been written

    # -- switch life cycle -------------------------------------------------------------
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    @guarded
    def on_features(self, ev):
        dp = ev.msg.datapath
        parser = dp.ofproto_parser
        # Whole packets to the controller: DHCP and DNS need the payload.
        dp.send_msg(parser.OFPSetConfig(dp, dp.ofproto.OFPC_FRAG_NORMAL, 0xFFFF))
        dp.send_msg(parser.OFPPortDescStatsRequest(dp, 0))

    @set_ev_cls(ofp_event.EventOFPPortDescStatsReply, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    @guarded
    def on_port_desc(self, ev):
        dp = ev.msg.datapath
        ports = {p.name.decode(errors="replace"): p.port_no for p in ev.msg.body}
        # Who it may be first (its certificate), then whether it is whole (its ports).
        why = self._certificate_problem(dp, self.gate.satellites.get(dp.id))
        sat, why = (None, why) if why else self.gate.satellite(dp.id, ports)
        if why:
            self._refuse(dp, why)
            return
        if sat is not None:
            down = {p.name.decode(errors="replace") for p in ev.msg.body
                    if p.state & dp.ofproto.OFPPS_LINK_DOWN}
            self._drive_satellite(dp, sat, ports, down)
            return
        admitted, why = self.gate.admit(dp.id, ports)
        if not admitted:
            self._refuse(dp, why)
            return
        first = self.datapath is not dp
        self.datapath = dp
        if first:
            self.core.datapath_up(F.Datapath(dpid=dp.id, ports=self.patch_links.bridge_ports(ports)))

    def _refuse(self, dp, why: str) -> None:
        self.core.counters.count("core.switch_refused")
        if self.gate.first_refusal(dp.id):
            log.warning("datapath %016x refused: %s", dp.id, why)
            self.core.bus.publish(events.Alert(mac="", kind=events.AlertKind.SWITCH_REFUSED,
                                               detail=f"A switch the router does not know tried to connect to it "
                                                      f"and was refused: {why.rstrip('.')}.",
                                               data={"datapath": f"{dp.id:016x}", "why": why}))

    def _drive_satellite(self, dp, sat: satellites.Satellite, ports: dict[str, int], down: set[str]) -> None:
        """Give a satellite its whole table and its ports their patch ports on the router's
        bridge, and tell the pipeline which of those have link; run again on every port
        change (each part is idempotent)."""
        behind = satellites.subtree(sat, self.core.config.satellites)     # ports other satellites plug into
        try:
            plan = satellites.flows(sat, ports, behind, self._tree_locked)
        except satellites.SatelliteError as exc:
            self._refuse(dp, str(exc))
            return
        live = sorted(no for name, no in satellites.device_ports(sat, ports).items() if name not in down)
        new_session = self.satellite_dps.get(dp.id) is not dp
        if new_session:
            self.cable_guard.session_started(sat)     # router_ports.sync opens its cable
            self._tree_cable_trusted(sat)
            self.core.counters.count("core.satellite_sessions")
            log.info("satellite %d (datapath %016x) connected, device ports with link: %s", sat.index, dp.id, live)
        elif self._satellite_ports.get(dp.id) != live:
            log.info("satellite %d: device ports with link now %s", sat.index, live)
        self.satellite_dps[dp.id] = dp
        self._satellite_ports[dp.id] = live
        self._satellite_uplinks[dp.id] = ports[sat.uplink]
        self._send_to(dp, plan)
        if self.datapath is not None:
            for patch, router_port, up in self.patch_links.satellite_ports(sat, ports, down):
                self.core.port_status(patch, router_port, up)
        else:
            self.patch_links.satellite_ports(sat, ports, down)
        # ovs-vsctl waits for the switch: off the hub, like the host's address changes.
        threading.Thread(target=router_ports.sync, daemon=True, name="satellite-ports",
                         args=(sat, ports, self.core.config.bridge, self.core.config.datapath_type,
                               frozenset(behind), new_session)).start()

    @set_ev_cls(ofp_event.EventOFPStateChange, [DEAD_DISPATCHER])
    @guarded
    def on_state_change(self, ev):
        if self.satellite_dps.get(ev.datapath.id) is ev.datapath:
            # fail_mode=secure: it keeps its flows (its devices' paths) until it comes back.
            del self.satellite_dps[ev.datapath.id]
            log.warning("satellite datapath %016x disconnected", ev.datapath.id)
            return
        if ev.datapath is self.datapath:
            self.datapath = None
            self.gate.release(ev.datapath.id)
            self.core.datapath_down()

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    @guarded
    def on_port_status(self, ev):
        msg = ev.msg
        if self.satellite_dps.get(msg.datapath.id) is msg.datapath:
            ofp = msg.datapath.ofproto
            if msg.reason == ofp.OFPPR_DELETE or msg.desc.state & ofp.OFPPS_LINK_DOWN:
                self._tree_cable_dropped(msg.datapath.id, msg.desc.port_no)
            # a satellite's port came or went: ask for all of them and plan again
            msg.datapath.send_msg(msg.datapath.ofproto_parser.OFPPortDescStatsRequest(msg.datapath, 0))
            return
        if msg.datapath is not self.datapath:
            return
        ofp = msg.datapath.ofproto
        port = msg.desc
        up = msg.reason != ofp.OFPPR_DELETE and not (port.state & ofp.OFPPS_LINK_DOWN)
        name = port.name.decode(errors="replace")
        self.core.port_status(name, port.port_no, self.patch_links.router_port(name, port.port_no, up))

    # -- events --------------------------------------------------------------------------
    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    @guarded
    def on_packet_in(self, ev):
        msg = ev.msg
        if msg.datapath is not self.datapath:
            return
        self.core.packet_in(F.PacketIn(in_port=msg.match.get("in_port", 0), data=bytes(msg.data),
                                       reason=_PACKET_IN_REASONS.get(msg.reason, str(msg.reason)),
                                       table_id=msg.table_id, cookie=msg.cookie, buffer_id=msg.buffer_id))

    @set_ev_cls(ofp_event.EventOFPFlowRemoved, MAIN_DISPATCHER)
    @guarded
    def on_flow_removed(self, ev):
        msg = ev.msg
        if msg.datapath is not self.datapath:
            return
        self.core.flow_removed(F.FlowRemoved(
            match=_match_dict(msg.match), cookie=msg.cookie, priority=msg.priority,
            reason=_REMOVED_REASONS.get(msg.reason, str(msg.reason)), duration_sec=msg.duration_sec,
            packet_count=msg.packet_count, byte_count=msg.byte_count, table_id=msg.table_id))

    @set_ev_cls(ofp_event.EventOFPFlowStatsReply, MAIN_DISPATCHER)
    @guarded
    def on_flow_stats(self, ev):
        if ev.msg.datapath is not self.datapath:
            return
        stats = [F.FlowStats(match=_match_dict(s.match), cookie=s.cookie, priority=s.priority,
                             duration_sec=s.duration_sec, packet_count=s.packet_count,
                             byte_count=s.byte_count, table_id=s.table_id, idle_timeout=s.idle_timeout)
                 for s in ev.msg.body]
        self.core.flow_stats(stats)

    @set_ev_cls(ofp_event.EventOFPAggregateStatsReply, MAIN_DISPATCHER)
    @guarded
    def on_aggregate_stats(self, ev):
        if ev.msg.datapath is not self.datapath:
            return
        request = self._aggregate_requests.pop(ev.msg.xid, None)
        if request is not None:
            body = ev.msg.body
            self.core.aggregate_stats(F.AggregateStats(request=request, packet_count=body.packet_count,
                                                       byte_count=body.byte_count, flow_count=body.flow_count))

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)
    @guarded
    def on_error(self, ev):
        msg = ev.msg
        log.error("switch error type=%s code=%s data=%s", msg.type, msg.code, bytes(msg.data)[:64].hex())

    # -- decisions out -------------------------------------------------------------------
    def send_decisions(self, decisions):
        dp = self.datapath
        if dp is None:
            log.debug("no switch connected: %d decisions dropped", len(decisions))
            return
        self._send_to(dp, decisions)

    def _send_to(self, dp, decisions):
        # A send of nothing but additions may wait (a new device's flows); one of nothing
        # but packet-outs may pass the waiting ones (SendBatcher says why).
        decisions = list(decisions)
        holdable = all(type(d) is F.FlowMod for d in decisions)
        passes = all(type(d) is F.PacketOut for d in decisions)
        for decision in decisions:
            try:
                change = type(decision) is F.FlowMod or type(decision) is F.FlowDelete
                # the common messages packed straight to bytes (ofencode.py); os-ken builds the rest
                lean = ofencode.encode(decision, _next_xid(dp)) if self.lean_encoder else None
                if lean is not None:
                    self.out.add(dp, lean, change, holdable, passes)
                    continue
                msg = to_message(dp, decision)
                dp.set_xid(msg)
                msg.serialize()
                self.out.add(dp, msg.buf, change, holdable, passes)
                if isinstance(decision, F.AggregateStatsRequest):
                    if len(self._aggregate_requests) > 4096:   # replies that never came
                        self._aggregate_requests.clear()
                    self._aggregate_requests[msg.xid] = decision
            except Exception:
                log.exception("could not send %r", decision)


def _next_xid(dp) -> int:
    """The next transaction id from the datapath's own counter, as os-ken's set_xid takes it."""
    dp.xid = (dp.xid + 1) & dp.ofproto.MAX_XID
    return dp.xid


class SendBatcher:
    """Collects serialised OpenFlow messages for one switch and writes them with a single
    Datapath.send() per hub turn, in order.

    Flow additions may also wait a little (`hold` seconds, `[controller] flow_hold_ms`):
    Open vSwitch revalidates its datapath's flows once for each write that changes its
    tables, and a burst of new devices wrote one a device (each as its lease was booked),
    which cost it as much CPU as the flows themselves, on the cores the devices share
    with it. Additions that come within `hold` of the last write of flow
    changes wait until that much has passed, with the additions that come meanwhile; a
    quiet switch's first change goes at once. Only a send of nothing but additions is
    held (one with a packet-out that depends on its flows goes whole, at once). A send of
    nothing but packet-outs (another device's DHCP answer) goes at once ahead of the held
    additions; anything else (a delete, a request) takes them with it, in order."""

    def __init__(self, spawn, limit: int = SEND_BATCH_BYTES, spawn_after=None, clock=time.monotonic,
                 hold: float = 0.0, on_hold=None):
        self._spawn = spawn
        self._spawn_after = spawn_after
        self._clock = clock
        self._hold = hold if spawn_after is not None else 0.0
        self._on_hold = on_hold            # called once for each write that holds additions
        self._limit = limit
        self._dp: Any = None      # the os-ken Datapath written to
        self._bufs: list[bytes] = []       # to go this hub turn
        self._size = 0
        self._held_bufs: list[bytes] = []  # additions waiting for the hold to pass
        self._held_size = 0
        self._scheduled = False
        self._held = False                 # a timed write of held additions is pending
        self._flow_changes = False         # _bufs changes the switch's tables
        self._last_flow_write = float("-inf")

    def add(self, dp, buf: bytes, flow_change: bool = False, holdable: bool = False,
            passes: bool = False) -> None:
        """`flow_change`: the message changes a flow table; `holdable`: an addition that
        may wait; `passes`: it may go ahead of held additions (see the class)."""
        if dp is not self._dp:
            self.flush()
            self._dp = dp
        if holdable and self._hold > 0 and (self._held_bufs or
                                            self._clock() < self._last_flow_write + self._hold):
            self._held_bufs.append(buf)
            self._held_size += len(buf)
            if self._held_size >= self._limit:
                self.flush()
            elif not self._held:
                self._held = True
                self._spawn_after(max(0.0, self._last_flow_write + self._hold - self._clock()), self._flush_held)
                if self._on_hold is not None:
                    self._on_hold()
            return
        if not passes:
            self._release()
        self._bufs.append(buf)
        self._size += len(buf)
        self._flow_changes = self._flow_changes or flow_change or holdable
        if self._size >= self._limit:
            self._write()
        elif not self._scheduled:
            self._scheduled = True
            self._spawn(self._flush_later)

    def _release(self) -> None:
        """The held additions join this turn's messages, behind what is there."""
        if self._held_bufs:
            self._bufs += self._held_bufs
            self._size += self._held_size
            self._held_bufs, self._held_size = [], 0
            self._flow_changes = True

    def _flush_later(self) -> None:
        self._scheduled = False
        self._write()

    def _flush_held(self) -> None:
        self._held = False
        self.flush()

    def flush(self) -> None:
        """Write everything now, held additions included."""
        self._release()
        self._write()

    def _write(self) -> None:
        if not self._bufs:
            return
        dp, data = self._dp, b"".join(self._bufs)
        if self._flow_changes:
            self._last_flow_write = self._clock()
        self._bufs, self._size, self._flow_changes = [], 0, False
        dp.send(data)


def _match_dict(match) -> dict:
    return {k: v for k, v in match.items()}


def _actions(parser, actions):
    out = []
    for action in actions:
        if isinstance(action, F.Output):
            out.append(parser.OFPActionOutput(action.port, action.max_len))
        elif isinstance(action, F.SetField):
            out.append(parser.OFPActionSetField(**{action.field: action.value}))
        elif isinstance(action, F.DecTTL):
            out.append(parser.OFPActionDecNwTtl())
        elif isinstance(action, F.PushVlan):
            out.append(parser.OFPActionPushVlan(action.ethertype))
        elif isinstance(action, F.PopVlan):
            out.append(parser.OFPActionPopVlan())
        elif isinstance(action, F.Resubmit):
            out.append(parser.NXActionResubmitTable(in_port=0xFFF8, table_id=action.table_id))
        elif isinstance(action, F.Learn):
            out.append(nx.learn_action(parser, ofproto_v1_3, action))
        elif isinstance(action, F.Move):
            out.append(nx.move_action(parser, action))
        elif isinstance(action, F.OutputReg):
            out.append(nx.output_reg_action(parser, action))
        else:
            raise TypeError(f"unknown action {action!r}")
    return out


def _match(dp, fields: dict):
    """OFPMatch with OpenFlow-basic fields first. os-ken sorts fields by OXM type number,
    which puts Nicira extension fields (nw_ttl, reg0: classes 0x0000/0x0001) before their
    prerequisites (eth_type, class 0x8000) and the switch refuses the match."""
    ofp = dp.ofproto
    if any(isinstance(v, (tuple, list)) for v in fields.values()):
        return _normalised_match(dp, fields)
    # Plain values (every per-device flow): sorted by field number only, no round trip
    # through the wire format (that was half the cost of serialising a flow-mod).
    return dp.ofproto_parser.OFPMatch(_ordered_fields=sorted(
        fields.items(), key=lambda kv: _field_order(ofp.oxm_from_user_header(kv[0]))))


def _normalised_match(dp, fields: dict):
    """Masked fields are normalised (value & mask) on the way, as os-ken would."""
    ofp = dp.ofproto
    items = [ofp.oxm_from_user(*ofp.oxm_normalize_user(k, v)) for k, v in fields.items()]
    items.sort(key=lambda item: _field_order(item[0]))
    return dp.ofproto_parser.OFPMatch(_ordered_fields=[ofp.oxm_to_user(n, v, m) for n, v, m in items])


def _field_order(n) -> tuple:
    n = n[0] if isinstance(n, tuple) else n
    return (0 if (n >> 7) == 0x8000 else 1, n)


def to_message(dp, decision):
    ofp, parser = dp.ofproto, dp.ofproto_parser
    if isinstance(decision, F.FlowMod):
        inst = []
        if decision.meter is not None:      # OpenFlow 1.3 runs the meter before the actions
            inst.append(parser.OFPInstructionMeter(decision.meter, ofp.OFPIT_METER))
        if decision.actions:
            inst.append(parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, _actions(parser, decision.actions)))
        if decision.goto is not None:
            inst.append(parser.OFPInstructionGotoTable(decision.goto))
        flags = ofp.OFPFF_SEND_FLOW_REM if decision.send_flow_removed else 0
        return parser.OFPFlowMod(dp, cookie=decision.cookie, table_id=decision.table_id,
                                 command=ofp.OFPFC_ADD, idle_timeout=decision.idle_timeout,
                                 hard_timeout=decision.hard_timeout, priority=decision.priority,
                                 buffer_id=ofp.OFP_NO_BUFFER, flags=flags,
                                 match=_match(dp, decision.match), instructions=inst)
    if isinstance(decision, F.FlowDelete):
        return parser.OFPFlowMod(dp, cookie=decision.cookie, cookie_mask=decision.cookie_mask,
                                 table_id=decision.table_id,
                                 command=ofp.OFPFC_DELETE_STRICT if decision.strict else ofp.OFPFC_DELETE,
                                 priority=decision.priority, out_port=decision.out_port,
                                 out_group=ofp.OFPG_ANY, match=_match(dp, decision.match))
    if isinstance(decision, F.PacketOut):
        return parser.OFPPacketOut(dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=decision.in_port,
                                   actions=_actions(parser, decision.actions), data=decision.data)
    if isinstance(decision, F.FlowStatsRequest):
        return parser.OFPFlowStatsRequest(dp, 0, decision.table_id, ofp.OFPP_ANY, ofp.OFPG_ANY,
                                          decision.cookie, decision.cookie_mask,
                                          _match(dp, decision.match))
    if isinstance(decision, F.AggregateStatsRequest):
        return parser.OFPAggregateStatsRequest(dp, 0, decision.table_id, ofp.OFPP_ANY, ofp.OFPG_ANY,
                                               decision.cookie, decision.cookie_mask, _match(dp, decision.match))
    if isinstance(decision, F.MeterMod):
        return _meter_mod(dp, decision)
    raise TypeError(f"unknown decision {decision!r}")


_METER_COMMANDS = {"add": ofproto_v1_3.OFPMC_ADD, "modify": ofproto_v1_3.OFPMC_MODIFY,
                   "delete": ofproto_v1_3.OFPMC_DELETE}


def _meter_mod(dp, decision: F.MeterMod):
    ofp, parser = dp.ofproto, dp.ofproto_parser
    if decision.command not in _METER_COMMANDS:
        raise ValueError(f"meter command must be one of {', '.join(_METER_COMMANDS)}, got {decision.command!r}")
    unit, rate = (ofp.OFPMF_PKTPS, decision.rate_pps) if decision.rate_pps else (ofp.OFPMF_KBPS, decision.rate_kbps)
    flags = unit | (ofp.OFPMF_BURST if decision.burst_kbits else 0)
    bands = [] if decision.command == "delete" else \
        [parser.OFPMeterBandDrop(rate=rate, burst_size=decision.burst_kbits)]
    return parser.OFPMeterMod(dp, command=_METER_COMMANDS[decision.command], flags=flags,
                              meter_id=decision.meter_id, bands=bands)
