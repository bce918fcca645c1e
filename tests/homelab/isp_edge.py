"""An ISP edge lab (ispedge/ in this repository) on real Open vSwitch: households' lines
on a DSLAM, a backhaul to the edge bridge, the internet behind it.

    with EdgeLab(households={"a": {...}, "b": {...}}) as lab:
        lab.issue("a")                      # the ISP signs household a's router's request
        client = lab.client("a")            # homework's EdgeClient with that certificate

    <id>-e   the edge: private ovsdb-server + ovs-vswitchd (netdev), bridge edge0 with ports
             up0 (to the internet) and bh0 (the backhaul to the DSLAM), both shaped; the
             control interface on edge0's own port, 100.64.0.254:6700
    <id>-d   the DSLAM: a Linux bridge joining the backhaul and every household's line
    <id>-i   the internet: 100.64.0.1 (2001:db8:f0::1), servers 203.0.113.10 and 2001:db8:cafe::10
    <id>-hX  household X (unless a test brings its own router): its public address
             100.64.0.1N and its delegated prefix 2001:db8:aN::/48 (an address of it on lo)

Teardown kills by PID what it started and deletes the namespaces and its directory."""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import sys
import time

from . import REPO, RUN_ROOT, _kill_pid, _python, _read_pid, new_run_id, ns_cmd, sh, start_ovs, to_toml

EDGE_ADDR = "100.64.0.254"
EDGE_PORT = 6700
HOME_EDGE_ADDR = "198.51.100.254"      # an emulated home's edge: on its WAN link's network
INTERNET_ADDR = "100.64.0.1"
INTERNET6_ADDR = "2001:db8:f0::1"
SERVER_ADDR = "203.0.113.10"
SERVER6_ADDR = "2001:db8:cafe::10"
ISPEDGE = REPO / "ispedge"
CLONE_NEWNET = 0x40000000
if str(ISPEDGE) not in sys.path:         # the edge's package, for its CA in the tests
    sys.path.insert(0, str(ISPEDGE))


@contextlib.contextmanager
def in_netns(name: str):
    """This thread in network namespace `name` for the block (sockets made inside stay
    there): a client that speaks from a household's line without a process per call."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f"/run/netns/{name}") as target, open("/proc/thread-self/ns/net") as own:
        if libc.setns(target.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
        try:
            yield
        finally:
            libc.setns(own.fileno(), CLONE_NEWNET)


def home_edge(budget: int = 8, guaranteed_kbit: int = 1000, **edge) -> tuple[EdgeLab, dict]:
    """An edge for one emulated home (homelab.Home), whose WAN line it takes over once the
    home runs (EdgeLab.splice): the lab, and the home's [isp] section (its certificate
    issued before the router starts)."""
    from . import LAN6_SITE, ROUTER_WAN_ADDR
    lab = EdgeLab({"home": {"addresses": [f"{ROUTER_WAN_ADDR}/32", LAN6_SITE], "budget": budget,
                            "guaranteed_kbit": guaranteed_kbit}},
                  namespaces=False, edge_addr=HOME_EDGE_ADDR, edge={"messages_per_second": 20, "burst": 40, **edge})
    return lab, {"edge": f"https://{HOME_EDGE_ADDR}:{EDGE_PORT}", **lab.issue_direct("home")}


def household_public(n: int) -> str:
    return f"100.64.0.{10 + n}"


def household_prefix(n: int) -> str:
    return f"2001:db8:a{n}::/48"


class EdgeLab:
    def __init__(self, households: dict[str, dict], backhaul_kbit: int = 20000, edge: dict | None = None,
                 namespaces: bool = True, internet: dict | None = None, edge_addr: str = EDGE_ADDR,
                 tap_ports: bool = False):
        """households: name -> {line_kbit, guaranteed_kbit, budget?, addresses?}, in order
        (a=1, b=2...). namespaces=False: no household namespaces (a test attaches its own
        routers: splice_home). internet: an existing namespace to put behind the edge
        instead of making one: {"ns", "ifname", "addrs": [...], "routes6": [(prefix, via)]}."""
        self.run_id = "ie" + new_run_id()[2:]
        self.internet_spec = internet
        # tap_ports: the edge's ports are taps (t-up0, t-bh0), each joined to its veth by a
        # kernel bridge; the queues are on the veths (ispedge's [[port]] tap, queue_device)
        self.tap_ports = tap_ports
        self.edge_addr = edge_addr
        self.dir = RUN_ROOT / f"homework-{self.run_id}"
        self.edge_ns, self.dslam_ns = f"{self.run_id}-e", f"{self.run_id}-d"
        self.internet_ns = internet["ns"] if internet else f"{self.run_id}-i"
        self.households = households
        self.index = {name: i for i, name in enumerate(households, start=1)}
        self.backhaul_kbit = backhaul_kbit
        self.edge_overrides = edge or {}
        self.with_namespaces = namespaces
        self.serving = True             # False: the edge serves no household (one queue: today's ISP)
        self.ovs_dir = self.dir / "ovs"
        self.pki = self.dir / "pki"
        self.config_path = self.dir / "ispedge.toml"
        self._namespaces: list[str] = []
        self._edge: subprocess.Popen | None = None
        self._procs: list[subprocess.Popen] = []

    # -- commands -------------------------------------------------------------------------
    @property
    def ovs_env(self) -> dict:
        env = dict(os.environ)
        env.update(OVS_RUNDIR=str(self.ovs_dir / "run"), OVS_LOGDIR=str(self.ovs_dir / "log"),
                   OVS_DBDIR=str(self.ovs_dir / "db"), OVS_SYSCONFDIR=str(self.ovs_dir / "etc"),
                   PYTHONPATH=f"{ISPEDGE}:{REPO / 'nox-modules'}:{os.environ.get('PYTHONPATH', '')}")
        return env

    def edge(self, cmd, check: bool = True, timeout: float = 30, input: str | None = None):
        return sh(ns_cmd(self.edge_ns, cmd), check=check, timeout=timeout, env=self.ovs_env, input=input)

    def ns(self, name: str) -> str:
        return f"{self.run_id}-h{name}"

    def household(self, name: str, cmd, check: bool = True, timeout: float = 30):
        return sh(ns_cmd(self.ns(name), cmd), check=check, timeout=timeout)

    def internet(self, cmd, check: bool = True, timeout: float = 30):
        return sh(ns_cmd(self.internet_ns, cmd), check=check, timeout=timeout)

    def popen(self, ns: str, cmd, **kw) -> subprocess.Popen:
        p = subprocess.Popen(ns_cmd(ns, cmd), start_new_session=True, **kw)
        self._procs.append(p)
        return p

    def dump_flows(self) -> str:
        return self.edge(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", "edge0"]).stdout

    def tc_classes(self, port: str) -> str:
        return self.edge(["tc", "-s", "class", "show", "dev", port]).stdout

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> EdgeLab:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _netns(self, name: str) -> None:
        sh(["ip", "netns", "add", name])
        self._namespaces.append(name)
        sh(["ip", "-n", name, "link", "set", "lo", "up"])

    def splice(self, home) -> EdgeLab:
        """Start, with `home`'s WAN line running through the edge: the home's internet
        namespace goes behind the edge and the router's link becomes a line on the DSLAM."""
        from . import ISP6_ADDR, ISP_ADDR, LAN6_SITE, ROUTER_WAN6_ADDR
        self.internet_spec = {"ns": home.internet_ns, "ifname": "isp0",
                              "addrs": [f"{ISP_ADDR}/24", f"{ISP6_ADDR}/64"],
                              "routes6": [(LAN6_SITE, ROUTER_WAN6_ADDR)]}
        self.internet_ns = home.internet_ns
        return self.start()

    def prepare_pki(self) -> None:
        """The ISP's CA, before the edge runs (a router's certificate can be issued first)."""
        from ispedge.pki import EdgeCA
        self.dir.mkdir(parents=True, exist_ok=True)
        EdgeCA(self.pki).ensure()

    def start(self) -> EdgeLab:
        self.dir.mkdir(parents=True, exist_ok=True)
        for d in ("run", "log", "db", "etc"):
            (self.ovs_dir / d).mkdir(parents=True)
        for ns in (self.edge_ns, self.dslam_ns) + (() if self.internet_spec else (self.internet_ns,)):
            self._netns(ns)
        start_ovs(self.ovs_dir, lambda cmd: self.edge(cmd, timeout=60))
        e, d, i = self.edge_ns, self.dslam_ns, self.internet_ns
        ifname = self.internet_spec["ifname"] if self.internet_spec else "eth0"
        if self.internet_spec:      # the household's old link to it becomes its line on the DSLAM
            sh(["ip", "-n", i, "link", "set", ifname, "netns", d])
            sh(["ip", "-n", d, "link", "set", ifname, "name", "lhome"])
        sh(["ip", "-n", e, "link", "add", "up0", "type", "veth", "peer", "name", ifname, "netns", i])
        sh(["ip", "-n", e, "link", "add", "bh0", "type", "veth", "peer", "name", "bh0", "netns", d])
        sh(["ip", "-n", d, "link", "add", "name", "dslam", "type", "bridge"])
        sh(["ip", "-n", d, "link", "set", "bh0", "master", "dslam"])
        if self.internet_spec:
            sh(["ip", "-n", d, "link", "set", "lhome", "master", "dslam"])
            sh(["ip", "-n", d, "link", "set", "lhome", "up"])
        for ns, dev in ((e, "up0"), (e, "bh0"), (d, "bh0"), (d, "dslam"), (i, ifname)):
            sh(["ip", "-n", ns, "link", "set", dev, "up"])
            # HTB and TBF must see wire-sized packets, not GSO aggregates
            sh(ns_cmd(ns, ["ethtool", "-K", dev, "tx", "off", "gso", "off", "tso", "off", "gro", "off"]), check=False)
        if self.internet_spec:
            for addr in self.internet_spec["addrs"]:
                sh(["ip", "-n", i, "addr", "add", addr, "dev", ifname] + (["nodad"] if ":" in addr else []))
            for prefix, via in self.internet_spec.get("routes6", []):
                sh(["ip", "-n", i, "-6", "route", "replace", prefix, "via", via, "dev", ifname])
        else:
            sh(["ip", "-n", i, "addr", "add", f"{INTERNET_ADDR}/24", "dev", "eth0"])
            sh(["ip", "-n", i, "addr", "add", f"{INTERNET6_ADDR}/64", "dev", "eth0", "nodad"])
            sh(["ip", "-n", i, "addr", "add", f"{SERVER_ADDR}/32", "dev", "lo"])
            sh(["ip", "-n", i, "addr", "add", f"{SERVER6_ADDR}/128", "dev", "lo"])
            for name, n in self.index.items():
                if self.with_namespaces:
                    self.add_household_ns(name)
                sh(["ip", "-n", i, "-6", "route", "add", household_prefix(n), "via", f"2001:db8:f0::{10 + n}"])
        self.pki.mkdir(exist_ok=True)
        self.config_path.write_text(self.config_text())
        self.start_edge()
        if self.tap_ports:           # the taps exist once the edge added them to its bridge
            for port in ("up0", "bh0"):
                self.edge(["ip", "link", "add", "name", f"k-{port}", "type", "bridge"])
                for dev in (f"t-{port}", port):
                    self.edge(["ip", "link", "set", dev, "master", f"k-{port}"])
                    self.edge(["ethtool", "-K", dev, "tx", "off", "gso", "off", "tso", "off", "gro", "off"],
                              check=False)
                self.edge(["ip", "link", "set", f"t-{port}", "up"])
                self.edge(["ip", "link", "set", f"k-{port}", "up"])
        return self

    def add_household_ns(self, name: str) -> None:
        n, ns = self.index[name], self.ns(name)
        self._netns(ns)
        sh(["ip", "-n", self.dslam_ns, "link", "add", f"l{name}", "type", "veth", "peer", "name", "wan0", "netns", ns])
        sh(["ip", "-n", self.dslam_ns, "link", "set", f"l{name}", "master", "dslam"])
        sh(["ip", "-n", self.dslam_ns, "link", "set", f"l{name}", "up"])
        sh(ns_cmd(self.dslam_ns, ["ethtool", "-K", f"l{name}", "tx", "off", "gso", "off", "gro", "off"]), check=False)
        sh(["ip", "-n", ns, "addr", "add", f"{household_public(n)}/24", "dev", "wan0"])
        sh(["ip", "-n", ns, "addr", "add", f"2001:db8:f0::{10 + n}/64", "dev", "wan0", "nodad"])
        sh(["ip", "-n", ns, "addr", "add", f"2001:db8:a{n}::2/128", "dev", "lo"])
        sh(["ip", "-n", ns, "link", "set", "wan0", "up"])
        sh(ns_cmd(ns, ["ethtool", "-K", "wan0", "tx", "off", "gso", "off", "tso", "off", "gro", "off"]), check=False)
        sh(["ip", "-n", ns, "route", "add", "default", "via", INTERNET_ADDR])
        sh(["ip", "-n", ns, "-6", "route", "add", "default", "via", INTERNET6_ADDR])

    def config_text(self) -> str:
        edge = {"bridge": "edge0", "datapath": "netdev", "listen": f"0.0.0.0:{EDGE_PORT}",
                "pki_dir": str(self.pki), "budget": 64, "messages_per_second": 50, "burst": 100}
        edge.update(self.edge_overrides)
        text = to_toml({"edge": edge})
        for port in ("up0", "bh0"):
            spec = {"name": port, "rate_kbit": self.backhaul_kbit}
            if self.tap_ports:
                spec.update(name=f"t-{port}", tap=True, queue_device=port)
            text += to_toml({"[port]": spec})
        for name, n in (self.index.items() if self.serving else ()):
            h = {"name": name, "addresses": [f"{household_public(n)}/32", household_prefix(n)],
                 "line_kbit": 20000, "guaranteed_kbit": 2000}
            h.update(self.households[name])
            text += to_toml({"[household]": h})
        return text

    def start_edge(self) -> None:
        log = open(self.dir / "ispedge.log", "ab")
        self._edge = subprocess.Popen(ns_cmd(self.edge_ns, [_python(), "-m", "ispedge", "run", "--config",
                                                            str(self.config_path)]),
                                      env=self.ovs_env, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        # the control interface on the bridge's own port, once the edge made the bridge
        deadline = time.monotonic() + 60
        while True:
            if self._edge.poll() is not None:
                raise RuntimeError(f"ispedge exited: {self.edge_log()[-2000:]}")
            up = self.edge(["ip", "link", "show", "edge0"], check=False).returncode == 0
            if up and self.edge(["ip", "-br", "addr", "show", "edge0"]).stdout.find(self.edge_addr) < 0:
                self.edge(["ip", "addr", "add", f"{self.edge_addr}/24", "dev", "edge0"])
                self.edge(["ip", "link", "set", "edge0", "up"])
            if up and self.edge(["ss", "-Hltn", f"sport = :{EDGE_PORT}"]).stdout.strip():
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"ispedge did not come up in 60 s: {self.edge_log()[-2000:]}")
            time.sleep(0.05)

    def reconfigure(self, serving: bool) -> None:
        """Restart the edge serving the households (three queues each) or none (every
        packet in one queue at the backhaul's rate: a plain ISP's shared buffer)."""
        self.serving = serving
        self.config_path.write_text(self.config_text())
        self.restart_edge()

    def stop_edge(self) -> None:
        if self._edge is not None:
            _kill_pid(self._edge.pid, 5)
            self._edge = None

    def restart_edge(self) -> None:
        self.stop_edge()
        self.start_edge()

    def edge_log(self) -> str:
        try:
            return (self.dir / "ispedge.log").read_text()
        except OSError:
            return ""

    def issue_direct(self, name: str) -> dict:
        """As issue(), signed in this process (before the edge runs: a router configured
        with its certificate from its first start)."""
        from ispedge.pki import EdgeCA, make_request
        self.prepare_pki()
        d = self.dir / f"router-{name}"
        d.mkdir(exist_ok=True)
        (d / "edge.crt").write_text(EdgeCA(self.pki).sign_household(make_request(d / "edge.key"), name))
        shutil.copy(self.pki / "ca.crt", d / "isp-ca.crt")
        return {"ca": str(d / "isp-ca.crt"), "cert": str(d / "edge.crt"), "key": str(d / "edge.key")}

    def issue(self, name: str, household: str | None = None) -> dict:
        """Household `name`'s router makes a key and request; the ISP signs it for
        `household` (default: the same name). Paths of ca, cert, key."""
        from ispedge.pki import make_request
        d = self.dir / f"router-{name}"
        d.mkdir(exist_ok=True)
        csr = make_request(d / "edge.key")
        cert = self.edge([_python(), "-m", "ispedge", "issue", "--config", str(self.config_path),
                          "--household", household or name, "--csr", "-"], input=csr).stdout
        (d / "edge.crt").write_text(cert)
        shutil.copy(self.pki / "ca.crt", d / "isp-ca.crt")
        return {"ca": str(d / "isp-ca.crt"), "cert": str(d / "edge.crt"), "key": str(d / "edge.key")}

    def close(self) -> None:
        for p in self._procs:
            _kill_pid(p.pid, 3)
        self.stop_edge()
        run = self.ovs_dir / "run"
        for daemon in ("ovs-vswitchd", "ovsdb-server"):
            pid = _read_pid(run / f"{daemon}.pid")
            if pid:
                _kill_pid(pid, 5)
        for ns in reversed(self._namespaces):
            sh(["ip", "netns", "del", ns], check=False)
        self._namespaces.clear()
        if os.environ.get("HOMELAB_KEEP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
