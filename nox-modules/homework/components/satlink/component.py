"""The router's end of the satellite agent channel (the protocol is agentwire.py).

A satellite's agent connects with the certificate pairing gave it. It is admitted by the
same rule as its switch's OpenFlow session: a certificate the household CA signed for a
datapath in [satellites] switches, still the one its pairing admits. Then:
  - it gets the household's Wi-Fi (SSID and passphrase, wifi.env) at once and after each
    change on the settings page: one network, configured once, on every access point;
  - it gets the blacklist as hostapd's deny list at once and after each change (the
    router's EAPOL drop flows cannot reach a station that authenticates at a satellite's
    own hostapd);
  - its radios' station dumps become `radio_report` events, which the radio monitor reads
    as it reads the router's own radios: each station's signal and counters reach the
    Guest Board and hwdb's Links, under the radio's name "wlan0@sat1".
A satellite denied or forgotten on the Guest Board loses its agent session with its switch.
Its agent is told why first ("unpaired"), and so is an agent that comes back later with
that certificate: the box can then ask to pair again (the image's homework-satellite).
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

from ... import agentwire, pki
from ...component import Component
from ...events import RadioReport
from ...satellites import radio_label
from ...wifi import ENV_NAME, read_env
from .server import LINGER, Session, TlsLineServer


class SatelliteAgents(Component):
    name = "satlink"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.satellites = {sat.dpid: sat for sat in ctx.config.satellites}
        self.sessions: dict[int, Session] = {}      # dpid -> its agent's current session
        self.radios: dict[int, list[str]] = {}      # dpid -> radios its agent announced
        self.blacklisted: set[str] = set()
        self.server: TlsLineServer | None = None
        self._lock = threading.Lock()
        self._complained: set[tuple[str, str]] = set()

    def start(self) -> None:
        cfg = self.ctx.config
        if not self.satellites or not cfg.satellites_agent_port:
            self.log.info("satellite agents: none (no satellite listed or found, or agent_port = 0)")
            return
        self.blacklisted = {d.mac for d in self.ctx.state.devices() if d.state == "blacklisted"}
        self.ctx.bus.subscribe("device", self._on_device)
        self.ctx.bus.subscribe("wifi", self._on_wifi)
        self.ctx.bus.subscribe("satellite", self._on_pairing)
        ca = pki.HouseholdCA(cfg.pki_dir).ensure()
        address = (cfg.satellites_tls_listen or cfg.of_listen, cfg.satellites_agent_port)
        self.server = TlsLineServer(ca.server_context(), address, self.serve, self._refused)
        try:
            host, port = self.server.start()
        except OSError as exc:
            self.log.error("satellite agents: cannot listen on %s:%d: %s", *address, exc)
            self.server = None
            return
        self.log.info("satellite agents: TLS on %s:%d", host, port)

    def stop(self) -> None:
        if self.server is not None:
            self.server.close()
        for session in list(self.sessions.values()):
            session.close()

    # -- what the satellites are told --------------------------------------------------------
    def wifi_message(self) -> dict | None:
        env = read_env(Path(self.ctx.config.state_dir) / ENV_NAME)
        if not env.get("SSID") or not env.get("PASSPHRASE"):
            return None     # nothing set yet: the access points keep what they have
        return {"type": "wifi", "ssid": env["SSID"], "passphrase": env["PASSPHRASE"]}

    def deny_message(self) -> dict:
        return {"type": "deny", "macs": sorted(self.blacklisted)}

    def _broadcast(self, message: dict) -> None:
        for session in list(self.sessions.values()):
            session.send(message)

    def _on_device(self, topic: str, ev) -> None:
        mac, state = ev.mac, ev.state
        if not mac or state is None:
            return
        with self._lock:
            before = set(self.blacklisted)
            if state == "blacklisted":
                self.blacklisted.add(mac)
            else:
                self.blacklisted.discard(mac)
            changed = before != self.blacklisted
        if changed:
            self._broadcast(self.deny_message())

    def _on_wifi(self, topic: str, ev) -> None:
        message = self.wifi_message()
        if message is not None:
            self._broadcast(message)

    def _on_pairing(self, topic: str, ev) -> None:
        what = ev.what
        if what == "permitted":
            return
        with self._lock:
            session = self.sessions.pop(ev.dpid, None)
        if session is not None:
            self.log.warning("satellite %016x is no longer paired (%s): its agent is told and disconnected",
                             ev.dpid, what)
            # Told why, the agent closes its end, which ends the session's reader (closing
            # here, with its reports unread, could reset the connection before it read this).
            # Its own request again ("requested") makes the certificate it holds an old one.
            session.revoked = time.monotonic()
            if not session.send(unpaired_message(what if what in agentwire.UNPAIRED_STATES else "replaced")):
                session.close()

    # -- one agent's session -------------------------------------------------------------------
    def admit(self, cert_der: bytes | None):
        """(the satellite, '', None) or (None, why not, why the household no longer admits
        it: denied/forgotten/replaced, when the certificate is a listed satellite's own)."""
        dpid, serial = pki.peer_identity(cert_der)
        if dpid is None:
            return None, "its certificate is not a satellite's", None
        sat = self.satellites.get(dpid)
        if sat is None:
            return None, f"datapath {dpid:016x} is not in [satellites] switches", None
        standing = self.ctx.pairing.standing(dpid, serial) if self.ctx.pairing is not None else "forgotten"
        if standing != "permitted":
            return None, f"satellite {sat.index}'s certificate is no longer its pairing ({standing})", standing
        return sat, "", None

    def serve(self, session: Session) -> None:
        # Admitted and registered under the lock that a pairing decision takes to find the
        # session it ends (_on_pairing): a decision made while this agent was being admitted
        # either finds its session or is seen by admit(). Before, a satellite denied between
        # the two kept a session nobody ended, and went on being sent the Wi-Fi settings.
        with self._lock:
            sat, why, standing = self.admit(session.peer_certificate())
            old = self.sessions.get(sat.dpid) if sat is not None else None
            if sat is not None:
                self.sessions[sat.dpid] = session
        if sat is None:
            # Counted and logged before the box is told: whoever watches the box (a test,
            # the household) then finds the router's record of it as soon as the box knows.
            self._refused(session.peer[0], why)
            if standing is not None:
                # The certificate is the household CA's, for a listed satellite: the box is
                # told, so that it can ask to pair again instead of knocking for ever.
                session.last_word(unpaired_message(standing))
            return
        if old is not None:
            old.close()         # the agent restarted: its new session wins
        self.ctx.count("satlink.sessions")
        self.log.info("satellite %d's agent connected from %s", sat.index, session.peer[0])
        try:
            for message in (self.wifi_message(), self.deny_message()):
                if message is not None:
                    session.send(message)
            self._read(sat, session)
        finally:
            with self._lock:
                if self.sessions.get(sat.dpid) is session:
                    del self.sessions[sat.dpid]
            self.log.info("satellite %d's agent disconnected", sat.index)

    def _read(self, sat, session: Session) -> None:
        while not session.closed:
            try:
                message = session.reader.read()
            except agentwire.WireError as exc:
                self._bad(sat, str(exc))
                continue
            except OSError:
                return          # closed, reset or silent for too long
            if message is None:
                return
            if session.revoked:     # told it is no longer admitted: drained, briefly, until it closes
                if time.monotonic() - session.revoked > LINGER:
                    return
                continue
            try:
                self.handle(sat, message)
            except agentwire.WireError as exc:
                self._bad(sat, f"{message.get('type')}: {exc}")

    def handle(self, sat, message: dict) -> None:
        kind = message["type"]
        if kind == "hello":
            self.radios[sat.dpid] = agentwire.hello(message)
        elif kind == "radio":
            radio, dump, info = agentwire.radio_report(message)
            self.ctx.bus.publish(RadioReport(ifname=radio_label(sat.index, radio), dump=dump, info=info))
        elif kind != "ping":
            raise agentwire.WireError("unknown message type")

    def _bad(self, sat, why: str) -> None:
        self.ctx.count("satlink.bad_messages")
        key = (str(sat.index), why[:60])
        if key not in self._complained and len(self._complained) < 256:   # once per kind of trouble
            self._complained.add(key)
            self.log.warning("satellite %d's agent sent a line that was dropped: %s", sat.index, why)

    def _refused(self, address: str, why: str) -> None:
        self.ctx.count("satlink.refused")
        self.log.warning("satellite agent from %s refused: %s", address, why)

    # -- status ------------------------------------------------------------------------------
    def connected(self, dpid: int) -> bool:
        return dpid in self.sessions


def unpaired_message(state: str) -> dict:
    return {"type": "unpaired", "state": state}
