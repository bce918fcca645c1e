"""A satellite's agent: the router's voice on the access point, and its radios' eyes.

It runs on the satellite (the image in satellite mode, or a box of the emulated home),
connects to the router's controller over the agent channel (agentwire.py) with the
certificate pairing gave the satellite, and
  - writes the household's Wi-Fi into its own wifi.env and runs its apply command (the
    image's `homework-wifi apply`, which restarts hostapd), only when it changed;
  - keeps hostapd's deny list (file and `hostapd_cli deny_acl`) equal to the router's
    blacklist, with the same code the router uses for its own hostapd;
  - reads each radio's station dump and info every interval and sends the text up, and a
    radio's dump at once when its hostapd says a station joined or left (AP-STA-CONNECTED /
    -DISCONNECTED on its control socket): a station that roams onto this access point is
    placed by the router, and its flows follow, without waiting for the next interval.
It holds no policy: a satellite whose router is gone keeps the last settings it was given.
When the session drops it reconnects, waiting 1 s, then up to 30 s between tries.
Told that the household no longer admits this box ("unpaired": denied, forgotten, or its
pairing replaced), it runs its unpaired command (the image's `homework-satellite
unpaired`, which asks to pair again) with HOMEWORK_UNPAIRED set to why, and stops: its
certificate will never be admitted again, so knocking with it would only be refused.
"""
from __future__ import annotations

import functools
import logging
import os
import select
import shlex
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import agentwire, pki
from ..components.eapol.hostapd import HostapdDenyList
from ..components.radio.ctrlsocket import ATTACH, MonitorSocket
from ..components.radio.stationevents import station_event
from ..components.radio.monitor import run as run_for
from ..wifi import ENV_NAME, WifiSettings, read_env

log = logging.getLogger("homework.satellite_agent")

INFO_EVERY = 120        # reports between two `iw dev IF info` reads (the channel rarely changes)
KEEPALIVE = 10.0        # at least this often something is said: the router ends a session silent for 30 s
MAX_BACKOFF = 30.0


@dataclass
class AgentOptions:
    router: tuple[str, int]
    cert: str
    key: str
    ca: str
    state_dir: Path
    radios: list[str] = field(default_factory=list)
    station_dump_command: str = "iw dev {ifname} station dump"
    info_command: str = "iw dev {ifname} info"
    hostapd_ctrl_dir: str = "/run/hostapd"
    wifi_apply_command: str = ""
    unpaired_command: str = ""
    interval: float = 0.5


class Agent:
    def __init__(self, opts: AgentOptions):
        self.opts = opts
        opts.state_dir.mkdir(parents=True, exist_ok=True)
        self.wifi = WifiSettings(opts.state_dir / ENV_NAME, opts.wifi_apply_command, opts.radios)
        deny_file = str(opts.state_dir / "hostapd.deny")
        # One writer of the file; every radio's hostapd told at run time.
        self.deny_lists = [HostapdDenyList(deny_file if i == 0 else "", f"{opts.hostapd_ctrl_dir}/{radio}")
                           for i, radio in enumerate(opts.radios)] or [HostapdDenyList(deny_file, "")]
        self.denied = set(_read_deny_file(Path(deny_file)))
        self.monitors = [MonitorSocket(f"{opts.hostapd_ctrl_dir.rstrip('/')}/{radio}", time.monotonic,
                                       self._monitor_failed(radio), attach=ATTACH,
                                       on_attached=functools.partial(
                                           log.info, "hostapd control socket for %s: attached", radio))
                         for radio in opts.radios] if opts.hostapd_ctrl_dir else []
        self.stop = threading.Event()
        self.connected = threading.Event()
        self.unpaired: str | None = None        # why the router no longer admits this box
        self._reports = 0

    # -- what the router says ----------------------------------------------------------------
    def handle(self, message: dict) -> None:
        kind = message["type"]
        if kind == "wifi":
            ssid, passphrase = agentwire.wifi(message)
            current = read_env(self.wifi.env_file)
            if (current.get("SSID"), current.get("PASSPHRASE")) != (ssid, passphrase):
                log.warning("the router's Wi-Fi settings: SSID %r", ssid)
                self.wifi.set(ssid, passphrase)
        elif kind == "deny":
            macs = set(agentwire.deny(message))
            added, removed = sorted(macs - self.denied), sorted(self.denied - macs)
            for deny in self.deny_lists:
                deny.update(sorted(macs), added, removed)
            self.denied = macs
        elif kind == "unpaired":
            self._unpaired(agentwire.unpaired(message))
        # anything else: a newer router's message this agent does not know; ignored

    def _unpaired(self, state: str) -> None:
        log.warning("the router no longer admits this satellite (%s): the agent stops", state)
        self.unpaired = state
        self.stop.set()
        if not self.opts.unpaired_command:
            return
        try:
            res = subprocess.run(shlex.split(self.opts.unpaired_command), capture_output=True, text=True,
                                 timeout=60, stdin=subprocess.DEVNULL, env=dict(os.environ, HOMEWORK_UNPAIRED=state))
            if res.returncode != 0:
                log.warning("the unpaired command exited %d: %s", res.returncode,
                            (res.stderr or res.stdout).strip()[-300:])
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            log.warning("the unpaired command failed: %s", exc)

    # -- what the agent says -----------------------------------------------------------------
    def reports(self, radios: list[str] | None = None) -> list[dict]:
        """Every radio's report (the interval's); or only these radios' dumps (hostapd's cue)."""
        if not self.opts.radios:
            return [{"type": "ping"}]
        out = []
        read_info = radios is None and self._reports % INFO_EVERY == 0
        if radios is None:
            self._reports += 1
        for radio in self.opts.radios if radios is None else radios:
            dump = run_for(self.opts.station_dump_command, radio)
            info = run_for(self.opts.info_command, radio) if read_info else ""
            out.append({"type": "radio", "radio": radio,
                        "dump": dump if isinstance(dump, str) else "",
                        "info": info if isinstance(info, str) else ""})
        return out

    def station_events(self) -> list[str]:
        """The radios whose hostapd said, since the last look, that a station joined or left."""
        radios = []
        for monitor in self.monitors:
            for text in monitor.receive():
                event = station_event(text)
                if event is not None:
                    log.info("%s: station %s %s; its radio is reported now", monitor.ifname, event[1], event[0])
                    if monitor.ifname not in radios:
                        radios.append(monitor.ifname)
        return radios

    @staticmethod
    def _monitor_failed(radio: str):
        def said(why: str, first: bool) -> None:
            if first:                           # once per episode: hostapd restarts with each Wi-Fi change
                log.info("hostapd control socket for %s: %s (station events wait; dumps go on)", radio, why)
        return said

    # -- the session -------------------------------------------------------------------------
    def connect(self):
        context = pki.client_context(self.opts.ca, self.opts.cert, self.opts.key)
        sock = socket.create_connection(self.opts.router, timeout=10)
        try:
            tls = context.wrap_socket(sock)
        except Exception:
            sock.close()
            raise
        tls.settimeout(None)
        return tls

    def run(self) -> None:
        backoff = 1.0
        while not self.stop.is_set():
            try:
                tls = self.connect()
            except (OSError, ValueError) as exc:
                log.warning("cannot reach the router at %s:%d: %s", *self.opts.router, exc)
            else:
                backoff = 1.0
                log.info("connected to the router at %s:%d", *self.opts.router)
                self.session(tls)
                log.warning("the session with the router ended")
            self.stop.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    def session(self, tls) -> None:
        """One thread reads and writes: an OpenSSL connection must not be read in one
        thread while another writes to it (TLS 1.3 delivers its session tickets after the
        handshake, and a read handling them beside a write broke the first session in CI).
        So the reads time out when the next report is due."""
        reader = agentwire.LineReader(tls)
        self._reports = 0           # each session's first report carries the radios' info
        try:
            tls.sendall(agentwire.encode({"type": "hello", "radios": self.opts.radios}))
            self.connected.set()
            due = said_at = time.monotonic()
            while not self.stop.is_set():
                cued = self.station_events()
                now = time.monotonic()
                if now >= due:
                    batch = self.reports()
                    due = now + self.opts.interval
                elif cued:
                    batch = self.reports(cued)
                elif now - said_at >= KEEPALIVE:        # a long interval: a ping keeps the session
                    batch = [{"type": "ping"}]
                else:
                    batch = []
                for out in batch:
                    tls.sendall(agentwire.encode(out))
                if batch:
                    said_at = time.monotonic()
                wake = min(due, said_at + KEEPALIVE)
                if not self._router_spoke(tls, reader, max(0.01, wake - time.monotonic())):
                    continue
                tls.settimeout(max(0.01, wake - time.monotonic()))
                try:
                    message = reader.read()
                except TimeoutError:
                    continue
                except agentwire.WireError as exc:
                    log.warning("dropped a line from the router: %s", exc)
                    continue
                if message is None:
                    return
                self._handle_safely(message)
        except OSError as exc:
            log.warning("the session broke: %s", exc)
        finally:
            self.connected.clear()
            try:
                tls.close()
            except OSError:
                pass

    def _router_spoke(self, tls, reader: agentwire.LineReader, timeout: float) -> bool:
        """Wait until the router's next bytes, a hostapd event or the timeout; True for the
        router (a line may already wait in the reader's or TLS's buffer: no wait then)."""
        if b"\n" in reader.buffer or tls.pending():
            return True
        hostapds = [m.sock for m in self.monitors if m.sock is not None]
        ready, _, _ = select.select([tls, *hostapds], [], [], timeout)
        return tls in ready

    def _handle_safely(self, message: dict) -> None:
        try:
            self.handle(message)
        except agentwire.WireError as exc:
            log.warning("dropped the router's %s: %s", message.get("type"), exc)
        except Exception:       # a message the agent could not apply never ends the session
            log.exception("the router's %s could not be applied", message.get("type"))


def _read_deny_file(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return [line.strip().lower() for line in lines if line.strip() and not line.startswith("#")]
