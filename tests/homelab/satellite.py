"""A satellite switch in the emulated home: an Open vSwitch bridge (userspace
datapath, fail_mode=secure, its own datapath id) cabled to a router port by a veth pair
and driven by the router's controller. Devices plug into it with
home.add_device(switch=sat).

Two kinds:
  - Satellite(home, i, dpid): a bridge of the router's own ovs-vswitchd, connected over
    plain tcp to 127.0.0.1 (the controller then needs [satellites] require_tls = false:
    OVS's TLS identity is per process, so bridges of one process cannot hold a
    certificate each).
  - Satellite(home, i, dpid, own_ovs=True): a box of its own: its own namespace with its
    own ovsdb-server and ovs-vswitchd. pair() makes its key there, has the router sign a
    certificate for its dpid (`homework satellite-pair`) and connects it over TLS to the
    router in band, over its cable: its LOCAL port (untagged, link-local) reaches the
    router's management port at fe80::1, as the satellite image does.
  - Satellite(home, i, dpid, own_ovs=True, lan=True): a box plugged into a LAN port of
    the router's bridge instead of a listed cable (found, not listed): its own stack
    takes a lease there like a device (lease()) and asks to pair at its gateway."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from . import REPO, ROUTER_NET, Device, Home, _kill_pid, _python, _read_pid, ns_cmd, sh, start_ovs

TLS_PORT = 6654
AGENT_PORT = 6655
SAT_AP = REPO / "tests" / "homelab" / "sat-ap.sh"


class Satellite:
    def __init__(self, home: Home, index: int, dpid: int, own_ovs: bool = False,
                 parent: tuple[Satellite, int] | None = None, lan: bool = False):
        """parent: (a satellite box, its port number) that this one's cable plugs into (a
        tree) instead of the router; lan: its cable is a LAN port of the router's bridge
        (not listed: the router finds it when it asks)."""
        self.home, self.index, self.dpid, self.own_ovs, self.parent = home, index, dpid, own_ovs, parent
        self.lan = lan
        self.udhcpc: subprocess.Popen | None = None
        self.bridge = f"sat{index}"
        self.uplink = f"sat{index}up"           # the cable's satellite end, port 250 of the satellite
        self.router_port = f"sat{index}cable"   # its other end: a router port, or the parent's port
        self.ns = f"{home.run_id}-s{index}" if own_ovs else home.router_ns
        self.dir = home.dir / f"sat{index}"
        self.ovs_dir = self.dir / "ovs"
        # the router on the management link: fe80::1, scoped to the satellite's LOCAL port
        self.mgmt_router = f"fe80::1%{self.bridge}"
        self._port = 0
        self.agent_proc: subprocess.Popen | None = None
        self.agent_dir = self.dir / "agent"

    @property
    def spec(self) -> str:
        """Its line in the controller's [satellites] switches."""
        return self.spec_for(self.index, self.dpid, (self.parent[0].index, self.parent[1]) if self.parent else None)

    @staticmethod
    def spec_for(index: int, dpid: int, parent: tuple[int, int] | None = None) -> str:
        """The config line of the satellite this class makes with that index and dpid (the
        controller's config is written before the satellites exist); parent: (index, port)
        of the satellite it plugs into."""
        where = f"hws{parent[0]}p{parent[1]}" if parent else f"sat{index}cable"
        return f"{dpid:016x}:sat{index}up:{where}"

    def next_port(self) -> int:
        self._port += 1
        return self._port

    # -- its Open vSwitch -------------------------------------------------------------------
    @property
    def ovs_env(self) -> dict:
        if not self.own_ovs:
            return self.home.ovs_env
        env = dict(os.environ)
        env.update(OVS_RUNDIR=str(self.ovs_dir / "run"), OVS_LOGDIR=str(self.ovs_dir / "log"),
                   OVS_DBDIR=str(self.ovs_dir / "db"), OVS_SYSCONFDIR=str(self.ovs_dir / "etc"))
        return env

    def run(self, cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
        """A command in the satellite's namespace, with its OVS's environment."""
        res = subprocess.run(ns_cmd(self.ns, cmd), capture_output=True, text=True, timeout=30, env=self.ovs_env)
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()}")
        return res

    def vsctl(self, *args: str) -> str:
        return self.run(["ovs-vsctl", "--timeout=10", *args]).stdout

    def _start_ovs(self) -> None:
        h = self.home
        for d in ("run", "log", "db", "etc/openvswitch"):
            (self.ovs_dir / d).mkdir(parents=True, exist_ok=True)
        sh(["ip", "netns", "add", self.ns])
        h._namespaces.append(self.ns)
        sh(["ip", "-n", self.ns, "link", "set", "lo", "up"])
        start_ovs(self.ovs_dir, self.run)

    def mgmt(self, port: int) -> str:
        """The router's management address with a port, as OVS and the agent take it."""
        return f"[{self.mgmt_router}]:{port}"

    def mgmt_url(self, path: str) -> str:
        return f"https://[{self.mgmt_router.replace('%', '%25')}]{path}"

    def _management_link(self) -> None:
        """What the satellite does at boot, before it is paired: its own stack (LOCAL)
        up, and the two flows that join it to its uplink, untagged (fail_mode=secure
        keeps them, and the controller's table has the same pair); then wait until the
        router answers at fe80::1 over the cable."""
        self.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{self.bridge}.accept_dad=0"])
        self.run(["ethtool", "-K", self.bridge, "tx", "off"])
        self.join("up")
        deadline = time.monotonic() + 20
        while self.run(["ping", "-6", "-c", "1", "-W", "1", self.mgmt_router], check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"satellite {self.index}: the router never answered at {self.mgmt_router}")

    def local_address(self) -> str:
        """Its own link-local address on the management link (what the router sees)."""
        out = self.run(["ip", "-6", "-o", "addr", "show", "dev", self.bridge, "scope", "link"]).stdout
        return out.split()[3].split("/")[0]

    # -- life cycle ---------------------------------------------------------------------------
    def start(self, controller: str | None = "tcp:127.0.0.1:6653") -> Satellite:
        """Make the switch and its cable; connect it to `controller` (None: not yet, e.g.
        until pair())."""
        h = self.home
        if self.own_ovs:
            self._start_ovs()
        far_ns = self.parent[0].ns if self.parent else h.router_ns
        sh(["ip", "-n", self.ns, "link", "add", self.uplink, "type", "veth", "peer", "name", self.router_port,
            "netns", far_ns])
        for ns, end in ((self.ns, self.uplink), (far_ns, self.router_port)):
            sh(ns_cmd(ns, ["ethtool", "-K", end, "tx", "off"]))
            sh(ns_cmd(ns, ["bash", str(ROUTER_NET), "guard", end]))
            sh(["ip", "-n", ns, "link", "set", end, "up"])
        if self.parent:
            parent, port_no = self.parent
            parent.vsctl("add-port", parent.bridge, self.router_port, "--", "set", "interface", self.router_port,
                         f"ofport_request={port_no}")
        elif self.lan:
            with h._lock:       # a port number no device of the home will ask for
                h._next_index += 1
                ofport = h._next_index
            h.vsctl("add-port", "br0", self.router_port, "--", "set", "interface", self.router_port,
                    f"ofport_request={ofport}")
        self.vsctl("--may-exist", "add-br", self.bridge, "--", "set", "bridge", self.bridge, "datapath_type=netdev",
                   "fail_mode=secure", "protocols=OpenFlow13", f"other-config:datapath-id={self.dpid:016x}",
                   "--", "add-port", self.bridge, self.uplink, "--", "set", "interface", self.uplink,
                   "ofport_request=250")
        if self.own_ovs and self.lan:
            self.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{self.bridge}.accept_dad=0"])
            self.run(["ethtool", "-K", self.bridge, "tx", "off"])
            self.join("up")
        elif self.own_ovs:
            self._management_link()
        if controller:
            self.set_controller(controller)
        return self

    def lease(self, timeout: float = 20) -> str:
        """Its own stack asks the router for an address on its LAN port, as a device does
        (udhcpc on the bridge's LOCAL port); returns the gateway once it has one."""
        script = REPO / "image" / "guest" / "udhcpc-satellite"     # the image's own hook
        self.dir.mkdir(parents=True, exist_ok=True)
        self.udhcpc = subprocess.Popen(ns_cmd(self.ns, ["udhcpc", "-f", "-i", self.bridge, "-s", str(script),
                                                        "-x", f"hostname:satellite{self.index}", "-t", "10",
                                                        "-T", "2", "-A", "3"]),
                                       stdout=open(self.dir / "udhcpc.log", "ab"), stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        self.home._procs.append(self.udhcpc)
        deadline = time.monotonic() + timeout
        while True:
            words = self.run(["ip", "-4", "route", "show", "default"], check=False).stdout.split()
            if "via" in words:
                return words[words.index("via") + 1]
            if time.monotonic() > deadline:
                raise TimeoutError(f"satellite {self.index} got no lease on its LAN port")
            time.sleep(0.2)

    def pair(self, csr_subject: str = "/CN=new satellite") -> dict:
        """Pairing as a satellite does it: make a key here (it never leaves), send the
        certificate request to the router, install the certificate and the household CA it
        answers with, and connect over TLS. Returns the router's answer."""
        key, req = self._make_request(csr_subject)
        res = self.home.homework("--json", "satellite-pair", f"{self.dpid:016x}", "--csr", str(req))
        if res.returncode != 0:
            raise RuntimeError(f"satellite-pair refused: {res.stderr}{res.stdout}")
        answer = json.loads(res.stdout)
        self.install_identity(key, answer["certificate"], answer["ca"])
        return answer

    def _make_request(self, subject: str = "/CN=new satellite") -> tuple[Path, Path]:
        self.dir.mkdir(parents=True, exist_ok=True)
        key, req = self.dir / "satellite-key.pem", self.dir / "satellite-req.pem"
        sh(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(key), "-out", str(req), "-subj", subject])
        return key, req

    def join(self, step: str) -> tuple[int, dict]:
        """The satellite's own joining code (homework.satellite_agent.join, as the image
        runs it): (its exit status, its JSON answer)."""
        env = dict(self.ovs_env, PYTHONPATH=str(REPO / "nox-modules"))
        res = subprocess.run(ns_cmd(self.ns, [_python(), "-m", "homework.satellite_agent.join", step,
                                              "--bridge", self.bridge, "--state-dir", str(self.dir)]),
                             capture_output=True, text=True, timeout=60, env=env)
        try:
            return res.returncode, json.loads(res.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise RuntimeError(f"join {step} exited {res.returncode}: {res.stderr.strip()}") from None

    def ask(self) -> dict:
        """Pairing through the API, as a new satellite does (join ask): key and request
        made here, the request sent to the router; -> {dpid, code}."""
        rc, body = self.join("ask")
        if rc != 0:
            raise RuntimeError(f"pairing request refused: {body}")
        return body

    def poll(self) -> tuple[int, dict]:
        """Its request's state (join poll); once permitted, the certificate is installed and
        the switch connects over TLS. -> (join's exit status, its answer)."""
        return self.join("poll")

    def install_identity(self, key: Path, certificate: str, ca: str) -> None:
        """Give this satellite's OVS a TLS identity and point it at the router over TLS."""
        cert, cacert = self.dir / "satellite-cert.pem", self.dir / "household-ca.pem"
        cert.write_text(certificate)
        cacert.write_text(ca)
        self.vsctl("set-ssl", str(key), str(cert), str(cacert))
        self.set_controller(f"ssl:{self.mgmt(TLS_PORT)}")
        # Open vSwitch empties a bridge's table when it gets its first controller: the
        # management link's two flows again (join up), until the controller's table
        # replaces them
        self.join("up")

    def flows(self) -> str:
        return self.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", self.bridge]).stdout

    def programmed(self) -> bool:
        """The controller has given it its table (its default drop, with the satellite
        cookie; the management link's two flows alone are not a table)."""
        return "cookie=0x900000000000000," in self.flows()      # its default drop

    def connected(self) -> bool:
        """Its OpenFlow connection to the controller is up (OVS's own view)."""
        uuid = self.vsctl("get", "bridge", self.bridge, "controller").strip("[] \n")
        return bool(uuid) and self.vsctl("get", "controller", uuid, "is_connected").strip() == "true"

    def controller_target(self) -> str:
        return self.vsctl("get", "controller", self.bridge, "target").strip().strip('"')

    def set_controller(self, target: str) -> None:
        """Point the satellite at a controller address (one nobody serves cuts it off)."""
        self.vsctl("set-controller", self.bridge, target)

    def take(self, dev) -> float:
        """Move a device's cable from its switch to a free port of this satellite: unplugged
        (its link goes down, as the device sees it), then plugged in here. A real switch's
        ports exist before a cable arrives, so the port is added without link and the cable
        "plugged" (link up) once the router has its patch port. Returns time.time() of the
        plug-in."""
        h = self.home
        sh(["ip", "-n", dev.port_ns, "link", "set", dev.port_name, "down"])
        dev.vsctl("del-port", dev.bridge, dev.port_name)
        if dev.port_ns != self.ns:
            sh(["ip", "-n", dev.port_ns, "link", "set", dev.port_name, "netns", self.ns])
        dev.switch, dev.bridge, dev.ofport = self, self.bridge, self.next_port()
        dev.vsctl("add-port", self.bridge, dev.port_name, "--", "set", "interface", dev.port_name,
                  f"ofport_request={dev.ofport}")
        patch = f"hws{self.index}p{dev.ofport}"
        deadline = time.monotonic() + 10
        while patch not in h.vsctl("list-ports", "br0").split():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the router never got {patch} for port {dev.ofport} of {self.bridge}")
            time.sleep(0.05)
        plugged = time.time()
        sh(["ip", "-n", self.ns, "link", "set", dev.port_name, "up"])
        return plugged

    # -- its agent and access point (a box of its own, paired) ---------------------------------
    def start_agent(self, radios: tuple[str, ...] = ("wlan0",), interval: float | None = None,
                    unpaired_command: str | None = None) -> Satellite:
        """homework.satellite_agent in the satellite's namespace, connecting across the
        management link with the identity pair() installed. Its radios are emulated: the
        station dump it reads is the file air_report() writes (iw's format), and its access
        point is a real hostapd (driver=wired) on the radio port, which sat-ap.sh (its Wi-Fi
        apply command) restarts with the SSID the router pushed."""
        d = self.agent_dir
        d.mkdir(parents=True, exist_ok=True)
        for radio in radios:
            self.air_report(radio, {})
        env = dict(os.environ, PYTHONPATH=str(REPO / "nox-modules"), PYTHONUNBUFFERED="1")
        argv = [_python(), "-m", "homework.satellite_agent", "--router", self.mgmt(AGENT_PORT),
                "--cert", str(self.dir / "satellite-cert.pem"), "--key", str(self.dir / "satellite-key.pem"),
                "--ca", str(self.dir / "household-ca.pem"), "--state-dir", str(d / "state"),
                "--station-dump-command", f"cat {d}/air-{{ifname}}.dump",
                "--info-command", f"cat {d}/air-{{ifname}}.info", "--hostapd-ctrl-dir", str(d / "ctrl"),
                "--wifi-apply-command", f"bash {SAT_AP} {d} {' '.join(radios)}"]
        for radio in radios:
            argv += ["--radio", radio]
        if interval is not None:
            argv += ["--interval", str(interval)]
        if unpaired_command is not None:
            argv += ["--unpaired-command", unpaired_command]
        self.agent_proc = subprocess.Popen(ns_cmd(self.ns, argv), env=env, stdin=subprocess.DEVNULL,
                                           stdout=open(d / "agent.log", "ab"), stderr=subprocess.STDOUT)
        return self

    def stop_agent(self, access_points: bool = True) -> None:
        """The agent, and its access points unless told to keep them (a restart of the agent
        alone, as on a box whose hostapd is a service of its own)."""
        if self.agent_proc is not None:
            _kill_pid(self.agent_proc.pid, 5)
            self.agent_proc.wait(5)
            self.agent_proc = None
        if not access_points:
            return
        for pidfile in self.agent_dir.glob("hostapd-*.pid"):
            pid = _read_pid(pidfile)
            if pid:
                _kill_pid(pid, 5)
            pidfile.unlink(missing_ok=True)

    def agent_log(self) -> str:
        try:
            return (self.agent_dir / "agent.log").read_text(errors="replace")
        except OSError:
            return ""

    def air_report(self, radio: str, stations: dict[str, float | tuple[float, int]], mhz: int = 5180) -> None:
        """What the emulated radio hears: these stations (MAC -> signal in dBm, or (signal,
        ms since it last heard the station)) in `iw dev RADIO station dump`'s format, and
        its channel in `iw dev RADIO info`'s."""
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        lines = []
        for mac, heard in stations.items():
            signal, inactive = heard if isinstance(heard, tuple) else (heard, 40)
            lines += [f"Station {mac} (on {radio})", f"\tinactive time:\t{inactive} ms", "\trx bytes:\t4000",
                      "\trx packets:\t40", "\ttx bytes:\t6000", "\ttx packets:\t50", "\ttx retries:\t2",
                      "\ttx failed:\t0", f"\tsignal:  \t{signal:.0f} [{signal:.0f}, {signal - 2:.0f}] dBm",
                      "\ttx bitrate:\t144.4 MBit/s MCS 15 short GI", "\trx bitrate:\t130.0 MBit/s MCS 15"]
        tmp = self.agent_dir / f".air-{radio}.dump"
        tmp.write_text("\n".join(lines) + ("\n" if lines else ""))
        tmp.replace(self.agent_dir / f"air-{radio}.dump")
        (self.agent_dir / f"air-{radio}.info").write_text(
            f"Interface {radio}\n\ttype AP\n\tchannel 36 ({mhz} MHz), width: 80 MHz, center1: 5210 MHz\n")

    def hostapd_cli(self, radio: str, *args: str) -> str:
        return self.run(["hostapd_cli", "-p", str(self.agent_dir / "ctrl"), "-i", radio, *args], check=False).stdout

    def stop(self) -> None:
        h = self.home
        self.stop_agent()
        if getattr(self, "udhcpc", None) is not None and self.udhcpc.poll() is None:
            self.udhcpc.terminate()
            self.udhcpc.wait(5)
        if self.own_ovs:
            run = self.ovs_dir / "run"
            for daemon in ("ovs-vswitchd", "ovsdb-server"):
                pid = _read_pid(run / f"{daemon}.pid")
                if pid:
                    _kill_pid(pid, 5)
            subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
            if self.ns in h._namespaces:
                h._namespaces.remove(self.ns)
        else:
            h.vsctl("--if-exists", "del-br", self.bridge)
            subprocess.run(["ip", "-n", h.router_ns, "link", "del", self.uplink], capture_output=True)
        if self.parent:
            self.parent[0].vsctl("--if-exists", "del-port", self.parent[0].bridge, self.router_port)
        # its cable is unplugged; the router keeps the demux bridge and management port that
        # it made for the listed satellite (as for a physical port)
        subprocess.run(["ip", "-n", h.router_ns, "link", "del", self.router_port], capture_output=True)
        if self.lan:        # a LAN port of br0, or the found cable's demux bridge: the port goes
            h.vsctl("--if-exists", "del-port", self.router_port)


RADIO_PORT = "wlan0"        # every satellite's radio port: [satellites] radio_ports = ["wlan0"]
RADIO_OFPORT = 200


class Air:
    """The radio coverage of the satellites' access points, for roaming tests: one
    namespace with a Linux bridge per access point ("its air"). A satellite's radio is its
    port wlan0, a veth into its bridge; a station is a device namespace whose eth0 hangs
    in one of the bridges, and roaming moves it to another, as a station reassociating
    elsewhere would (its link stays up; the old radio keeps its link too)."""

    def __init__(self, home: Home):
        self.home = home
        self.ns = f"{home.run_id}-air"

    def start(self) -> Air:
        sh(["ip", "netns", "add", self.ns])
        self.home._namespaces.append(self.ns)
        return self

    def radio(self, sat: Satellite) -> None:
        """Give a satellite (a box of its own) its radio: port wlan0, and air of its own."""
        air = f"air{sat.index}"
        # group_fwd_mask 8: a Linux bridge keeps 802.1X's group address (01:80:c2:00:00:03)
        # to itself; the air carries it, as a radio would, to the access point's hostapd
        sh(["ip", "-n", self.ns, "link", "add", air, "type", "bridge", "group_fwd_mask", "8"])
        sh(["ip", "-n", self.ns, "link", "set", air, "up"])
        sh(["ip", "-n", sat.ns, "link", "add", RADIO_PORT, "type", "veth", "peer", "name", f"ap{sat.index}",
            "netns", self.ns])
        sh(ns_cmd(sat.ns, ["ethtool", "-K", RADIO_PORT, "tx", "off"]))
        sh(["ip", "-n", self.ns, "link", "set", f"ap{sat.index}", "master", air, "up"])
        sat.vsctl("add-port", sat.bridge, RADIO_PORT, "--", "set", "interface", RADIO_PORT,
                  f"ofport_request={RADIO_OFPORT}")
        sh(["ip", "-n", sat.ns, "link", "set", RADIO_PORT, "up"])

    def station(self, name: str, sat: Satellite):
        """A device associated with this satellite's access point."""
        h = self.home
        with h._lock:
            h._next_index += 1
            index = h._next_index
        dev = Station(h, index, name, f"02:68:77:01:{index >> 8:02x}:{index & 0xff:02x}", self)
        h.devices.append(dev)
        dev.ap = sat
        dev._create()
        return dev

    def roam(self, dev, sat: Satellite) -> float:
        """The station reassociates with another satellite's access point; time.time() of it."""
        at = time.time()
        sh(["ip", "-n", self.ns, "link", "set", dev.port_name, "master", f"air{sat.index}"])
        dev.ap = sat
        return at


class Station(Device):
    """A Device whose cable ends in the air (a Linux bridge of Air), not in a switch port."""

    guarded = False     # the guard would drop its IP before the bridge carries it

    def __init__(self, home: Home, index: int, name: str, mac: str, air: Air):
        super().__init__(home, index, name, mac)
        self.air = air
        self.bridge = "air"
        self.ap: Satellite | None = None

    @property
    def port_ns(self) -> str:
        return self.air.ns

    def vsctl(self, *args: str) -> str:     # no switch port of its own: nothing to add or remove
        return ""

    def _create(self) -> None:
        super()._create()
        sh(["ip", "-n", self.air.ns, "link", "set", self.port_name, "master", f"air{self.ap.index}"])
