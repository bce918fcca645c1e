"""The emulated home: a Homework router with real Open vSwitch, the real controller,
real DHCP clients in device network namespaces and a small "internet" behind NAT.

    with Home() as home:
        dev = home.add_device()
        dev.start_dhclient()
        addr = dev.wait_for_ipv4(10)
        home.homework("permit", dev.mac)

Every name carries a per-run id (``hw`` + 5 hex digits), so two runs never collide:

    <id>-r    router namespace: private ovsdb-server + ovs-vswitchd (netdev datapath),
              bridge br0 (scripts/router-net.sh up), the controller, hwdbd if built
    <id>-i    "internet": ISP 198.51.100.1 on the WAN link, servers on 203.0.113.0/24
    <id>-dN   device N: eth0 is a veth whose peer is OVS port <id>-N on br0

Everything lives in /tmp/homework-<id>/ (OVS dirs, controller config, state and
control socket, logs, client lease files). Teardown (close(), the context manager,
SIGTERM, atexit) kills by PID only what it started and removes the namespaces and
that directory; scripts/teardown-stale.sh cleans up after a run that was SIGKILLed.
"""
from __future__ import annotations

import atexit
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Sequence

REPO = Path(__file__).resolve().parents[2]
HOOK = Path(__file__).resolve().parent / "dhcp-hook.sh"
GARBAGE = Path(__file__).resolve().parent / "dhcp_garbage.py"
PYPING = Path(__file__).resolve().parent / "pyping.py"
INTERNET_WEB = Path(__file__).resolve().parent / "internet_web.py"
ROUTER_NET = REPO / "scripts" / "router-net.sh"
RUN_ROOT = Path(os.environ.get("HOMELAB_RUN_ROOT", "/tmp"))
RUN_DIR_PREFIX = "homework-"

BRIDGE = "br0"
WAN_IF = "wan0"
ROUTER_HWADDR = "02:68:77:00:00:01"
WAN_NET = ipaddress.IPv4Network("198.51.100.0/24")
ISP_ADDR = "198.51.100.1"
ROUTER_WAN_ADDR = "198.51.100.2"
SERVER_NET = ipaddress.IPv4Network("203.0.113.0/24")
WEB_ADDR = "203.0.113.10"
# IPv6 on the WAN link and in the internet; the ISP routes the LAN's site prefix to the
# router (a static delegation; a home with [ipv6] enabled uses LAN6_SITE).
ISP6_ADDR = "2001:db8:ffff::1"
ROUTER_WAN6_ADDR = "2001:db8:ffff::2"
WEB6_ADDR = "2001:db8:cafe::10"
LAN6_SITE = "2001:db8:100::/48"
# With Home(ipv6_pd=True) the ISP delegates /48s out of this range by DHCPv6-PD (kea).
PD_POOL = "2001:db8:200::/44"
WAN_PD_HOOK = REPO / "scripts" / "wan-pd-hook.sh"
# A home that names no components runs the router image's (household.py); these tests name
# the two every home needs when that is all they are about (DHCP, routing, the switch).
BARE = ("dhcp", "routing")
DNS_ADDR = "203.0.113.53"  # reserved for the internet's DNS resolver (not started yet)
# Home(public_wan=True): the router's first WAN address is one miniupnpd takes for public.
# Every address above is a documentation one (RFC 5737), which miniupnpd 2.3.1 counts as
# private ("behind another NAT: port forwarding is impossible") and so opens nothing. The
# link also keeps ROUTER_WAN_ADDR (the route's source, so NAT still uses it). Traffic to it
# never leaves the namespaces this home makes.
PUBLIC_WAN_ADDR = "192.0.3.2"
PUBLIC_ISP_ADDR = "192.0.3.1"
HWDB_PORT = 987


def _python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def new_run_id() -> str:
    return "hw" + secrets.token_hex(3)[:5]


def sh(cmd: Sequence[str] | str, check: bool = True, timeout: float | None = 30,
       env: dict | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """Run a command, capture text output; raise with its output on failure."""
    shell = isinstance(cmd, str)
    proc = subprocess.run(cmd, shell=shell, capture_output=True, text=True, timeout=timeout,
                          env=env, input=input)
    if check and proc.returncode != 0:
        raise CommandError(proc.returncode, cmd, proc.stdout, proc.stderr)
    return proc


def ns_cmd(ns: str, cmd: Sequence[str] | str) -> list[str]:
    if isinstance(cmd, str):
        return ["ip", "netns", "exec", ns, "sh", "-c", cmd]
    return ["ip", "netns", "exec", ns, *cmd]


def _kill_pid(pid: int, timeout: float = 5.0, sig: int = signal.SIGTERM) -> None:
    """Terminate one process we started; SIGKILL if it does not go in time."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return
        except ChildProcessError:  # not our child (e.g. a daemonised OVS): poll /proc
            if not Path(f"/proc/{pid}").exists() or _is_zombie(pid):
                return
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    except ProcessLookupError:
        pass


def _runs(pid: int, names: tuple[str, ...]) -> bool:
    """Is `pid` still one of these programs (not a number reused by something else)?"""
    try:
        return os.path.basename(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()) in names
    except (OSError, IndexError, UnicodeDecodeError):
        return False


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (/proc/PID/stat; the benches)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v))


def to_toml(doc: dict) -> str:
    out = []
    for section, table in doc.items():
        out.append(f"[{section}]")
        for k, v in table.items():
            out.append(f"{k} = {_toml_value(v)}")
        out.append("")
    return "\n".join(out)


def start_ovs(ovs_dir: Path, run: Callable[[list[str]], object]) -> None:
    """A private Open vSwitch (ovsdb-server and ovs-vswitchd, detached) with its files in
    ovs_dir/{run,log,db}; `run` runs a command where it must live (a namespace, with
    OVS_RUNDIR and friends pointing at ovs_dir)."""
    rundir, logd, db = ovs_dir / "run", ovs_dir / "log", ovs_dir / "db"
    sh(["ovsdb-tool", "create", str(db / "conf.db"), "/usr/share/openvswitch/vswitch.ovsschema"])
    run(["ovsdb-server", str(db / "conf.db"), f"--remote=punix:{rundir}/db.sock",
         f"--pidfile={rundir}/ovsdb-server.pid", f"--unixctl={rundir}/ovsdb-server.ctl",
         f"--log-file={logd}/ovsdb-server.log", "--detach", "--no-chdir"])
    run(["ovs-vsctl", "--no-wait", "init"])
    run(["ovs-vswitchd", f"unix:{rundir}/db.sock", f"--pidfile={rundir}/ovs-vswitchd.pid",
         f"--unixctl={rundir}/ovs-vswitchd.ctl", f"--log-file={logd}/ovs-vswitchd.log", "--detach", "--no-chdir"])


class CommandError(subprocess.CalledProcessError):
    def __str__(self) -> str:
        cmd = self.cmd if isinstance(self.cmd, str) else " ".join(map(str, self.cmd))
        return (f"command failed ({self.returncode}): {cmd}\n"
                f"{(self.stderr or '').strip()[-2000:]}\n{(self.stdout or '').strip()[-1000:]}")


@dataclass
class Lease:
    """One DHCP client event that configured (or kept) an address, as the client saw it."""
    client: str
    reason: str          # bound, renew, rebind, reboot
    time: float
    ip: str | None
    mask: str | None
    router: str | None
    dns: list[str]
    broadcast: str | None
    lease_time: int | None
    server_id: str | None
    hostname: str | None
    env: dict = field(repr=False, default_factory=dict)


_REASONS = {"BOUND": "bound", "RENEW": "renew", "REBIND": "rebind", "REBOOT": "reboot",
            "bound": "bound", "renew": "renew"}


def _parse_event(env: dict) -> Lease | None:
    client = env.get("HOOK_CLIENT", "")
    t = float(env.get("HOOK_TIME", "0") or 0)
    if client == "udhcpc":
        reason = _REASONS.get(env.get("HOOK_ARG1", ""))
        if not reason:
            return None
        lt = env.get("lease")
        return Lease(client, reason, t, env.get("ip"), env.get("subnet"),
                     (env.get("router") or "").split()[0] if env.get("router") else None,
                     (env.get("dns") or "").split(), env.get("broadcast"),
                     int(lt) if lt and lt.isdigit() else None, env.get("serverid"),
                     env.get("hostname"), env)
    reason = _REASONS.get(env.get("reason", ""))
    if not reason or not env.get("new_ip_address"):
        return None
    lt = env.get("new_dhcp_lease_time")
    routers = (env.get("new_routers") or "").split()
    return Lease(client, reason, t, env.get("new_ip_address"), env.get("new_subnet_mask"),
                 routers[0] if routers else None,
                 (env.get("new_domain_name_servers") or "").split(),
                 env.get("new_broadcast_address"),
                 int(lt) if lt and lt.isdigit() else None,
                 env.get("new_dhcp_server_identifier"), env.get("new_host_name"), env)


class Device:
    """A device namespace with one veth (eth0) plugged into the router's bridge."""

    guarded = True      # the switch end is kept from the IP stack of its namespace (router-net.sh guard)

    def __init__(self, home: Home, index: int, name: str, mac: str, switch=None):
        self.home = home
        self.index = index
        self.name = name
        self.mac = mac
        self.switch = switch                     # None: the router's bridge; else a satellite.Satellite
        self.bridge = switch.bridge if switch else BRIDGE
        self.ofport = switch.next_port() if switch else index
        self.ns = f"{home.run_id}-d{index}"
        self.port_name = f"{home.run_id}-{index}"
        self.ifname = "eth0"
        self.dir = home.dir / "devices" / name
        self.client: str | None = None
        self.proc: subprocess.Popen | None = None
        self._log = None

    def __repr__(self) -> str:
        return f"<Device {self.name} {self.mac} ns={self.ns} port={self.port_name}>"

    # -- plumbing ---------------------------------------------------------------------
    def _create(self) -> None:
        h = self.home
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "events").mkdir(exist_ok=True)
        sh(["ip", "netns", "add", self.ns])
        h._namespaces.append(self.ns)
        sh(["ip", "-n", self.ns, "link", "set", "lo", "up"])
        port_ns = self.port_ns
        sh(["ip", "-n", port_ns, "link", "add", self.port_name, "type", "veth",
            "peer", "name", self.ifname, "netns", self.ns])
        sh(["ip", "-n", self.ns, "link", "set", self.ifname, "address", self.mac])
        sh(ns_cmd(self.ns, ["ethtool", "-K", self.ifname, "tx", "off"]))
        sh(ns_cmd(port_ns, ["ethtool", "-K", self.port_name, "tx", "off"]))
        self.vsctl("--may-exist", "add-port", self.bridge, self.port_name, "--", "set", "interface",
                   self.port_name, f"ofport_request={self.ofport}")
        # Only OVS may see the port's frames, not the router's own stack (routing).
        if self.guarded:
            sh(ns_cmd(port_ns, ["bash", str(ROUTER_NET), "guard", self.port_name]))
        sh(["ip", "-n", port_ns, "link", "set", self.port_name, "up"])
        sh(["ip", "-n", self.ns, "link", "set", self.ifname, "up"])

    @property
    def port_ns(self) -> str:
        """The namespace holding the switch end of its cable (the router's, or a satellite's
        with an Open vSwitch of its own)."""
        return self.switch.ns if self.switch else self.home.router_ns

    def vsctl(self, *args: str) -> str:
        """ovs-vsctl of the Open vSwitch its switch belongs to."""
        return self.switch.vsctl(*args) if self.switch else self.home.vsctl(*args)

    def run(self, cmd: Sequence[str] | str, check: bool = True, timeout: float | None = 30,
            input: str | None = None) -> subprocess.CompletedProcess:
        """Run a command in the device's namespace (a string goes through sh -c)."""
        return sh(ns_cmd(self.ns, cmd), check=check, timeout=timeout, input=input)

    def popen(self, cmd: Sequence[str], **kw) -> subprocess.Popen:
        """Start a long-running command in the namespace; it is killed at teardown."""
        p = subprocess.Popen(ns_cmd(self.ns, cmd), start_new_session=True, **kw)
        self.home._procs.append(p)
        return p

    # -- DHCP clients -----------------------------------------------------------------
    def _wrapper(self, client: str, next_script: str) -> Path:
        w = self.dir / f"{client}-hook.sh"
        w.write_text("#!/bin/sh\n"
                     f"HOOK_CLIENT={client} HOOK_EVENTS='{self.dir / 'events'}' "
                     f"HOOK_NEXT='{next_script}'\n"
                     "export HOOK_CLIENT HOOK_EVENTS HOOK_NEXT\n"
                     f"exec '{HOOK}' \"$@\"\n")
        w.chmod(0o755)
        return w

    def _start_client(self, client: str, script: str) -> subprocess.Popen:
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"{self.name}: a DHCP client ({self.client}) is already running")
        resolv = self.dir / "resolv.conf"
        resolv.touch()
        inner = f"mount --bind '{resolv}' /etc/resolv.conf && hostname '{self.name}' && {script}"
        self._log = open(self.dir / f"{client}.log", "ab")
        # ip netns exec, unshare and sh all exec: the Popen pid is the client's pid.
        self.proc = subprocess.Popen(ns_cmd(self.ns, ["unshare", "-m", "-u", "sh", "-c", inner]),
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.client = client
        return self.proc

    def start_dhclient(self, extra: Sequence[str] = ()) -> subprocess.Popen:
        conf = self.dir / "dhclient.conf"
        conf.write_text(f'send host-name "{self.name}";\n'
                        "request subnet-mask, broadcast-address, routers, domain-name,\n"
                        "  domain-name-servers, host-name, dhcp-lease-time,\n"
                        "  dhcp-renewal-time, dhcp-rebinding-time;\n"
                        "timeout 60;\nretry 5;\n")
        hook = self._wrapper("dhclient", "/sbin/dhclient-script")
        d = self.dir
        cmd = (f"exec dhclient -4 -d -v -cf '{conf}' -lf '{d}/dhclient.leases' "
               f"-pf '{d}/dhclient.pid' -sf '{hook}' {' '.join(extra)} {self.ifname}")
        return self._start_client("dhclient", cmd)

    def start_udhcpc(self, extra: Sequence[str] = ()) -> subprocess.Popen:
        hook = self._wrapper("udhcpc", "/etc/udhcpc/default.script")
        cmd = (f"exec udhcpc -f -i {self.ifname} -s '{hook}' -p '{self.dir}/udhcpc.pid' "
               f"-x hostname:{self.name} -t 10 -T 2 -A 3 {' '.join(extra)}")
        return self._start_client("udhcpc", cmd)

    def start_dhcpcd(self, extra: Sequence[str] = (), ipv6: bool = False, conf: str = "") -> subprocess.Popen:
        """dhcpcd for IPv4; with ipv6=True for IPv6 as well (its own SLAAC from the Router
        Advertisements, and stateless DHCPv6 for the DNS server when the RA says so).
        `conf`: more lines for its dhcpcd.conf."""
        hook = self._wrapper("dhcpcd", "/usr/lib/dhcpcd/dhcpcd-run-hooks")
        conf_file = self.dir / "dhcpcd.conf"
        conf_file.write_text("option domain_name_servers, domain_name, host_name\n"
                             "option subnet_mask, routers, broadcast_address\n"
                             "require dhcp_server_identifier\n"
                             + ("" if ipv6 else "noipv6rs\n") + "noipv4ll\n" + conf)
        lib = self.dir / "dhcpcd-lib"
        lib.mkdir(exist_ok=True)
        cmd = ("mount -t tmpfs tmpfs /run && "
               f"mount --bind '{lib}' /var/lib/dhcpcd && "
               f"exec dhcpcd -B {'' if ipv6 else '-4 '}-A -L -h {self.name} -f '{conf_file}' -c '{hook}' "
               f"{' '.join(extra)} {self.ifname}")
        return self._start_client("dhcpcd", cmd)

    def start_networkd(self) -> subprocess.Popen:
        """systemd-networkd as the device's network manager (DHCPv4, and IPv6 from our Router
        Advertisements and stateless DHCPv6), with a private /run so it sees only this
        namespace. Its leases are not in dev.leases(): read the addresses instead."""
        conf = (f"[Match]\nName={self.ifname}\n[Network]\nDHCP=yes\nIPv6AcceptRA=yes\n"
                "[DHCPv4]\nSendHostname=yes\n")
        # A read-only /sys (in this mount namespace only) tells networkd there is no udev to
        # wait for, as in a container; otherwise every link stays "pending udev".
        script = ("mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/network /run/systemd/netif && "
                  "mount -o remount,ro /sys && "
                  "chown systemd-network:systemd-network /run/systemd/netif && "
                  f"printf '%s' '{conf}' > /run/systemd/network/10-homework.network && "
                  "exec /lib/systemd/systemd-networkd")
        return self._start_client("networkd", script)

    def start_dhcp(self, client: str) -> subprocess.Popen:
        return {"dhclient": self.start_dhclient, "udhcpc": self.start_udhcpc,
                "dhcpcd": self.start_dhcpcd}[client]()

    def stop_dhcp(self, timeout: float = 5.0) -> None:
        if self.proc is not None:
            _kill_pid(self.proc.pid, timeout)
            self.proc = None
        if self._log:
            self._log.close()
            self._log = None

    def leave(self, home: Home, timeout: float = 20) -> None:
        """The device leaves `home`: a udhcpc with -R binds its lease afresh (its old
        address flushed, so the wait is for this client's) and gives it back as it stops."""
        self.stop_dhcp()
        self.run(["ip", "addr", "flush", "dev", self.ifname])
        self.start_udhcpc(extra=("-R",))
        self.wait_for_ipv4(timeout)
        self.stop_dhcp()
        self.run(["ip", "addr", "flush", "dev", self.ifname])

    def renew(self) -> None:
        """Ask the running client to renew now: udhcpc only (SIGUSR1). dhclient has no
        such signal; dhcpcd's SIGALRM releases and `dhcpcd -n/-N` did not renew in its
        private mount namespace: those renew at T1 (half the lease)."""
        if self.proc is None:
            raise RuntimeError("no DHCP client running")
        if self.client == "udhcpc":
            os.kill(self.proc.pid, signal.SIGUSR1)
        else:
            raise NotImplementedError(f"{self.client}: no renew-now here; wait for T1")

    # -- observation ------------------------------------------------------------------
    def events(self) -> list[dict]:
        out = []
        for f in sorted((self.dir / "events").glob("*.env")):
            env = {}
            for item in f.read_bytes().split(b"\0"):
                k, sep, v = item.decode(errors="replace").partition("=")
                if sep:
                    env[k] = v
            out.append(env)
        return out

    def leases(self) -> list[Lease]:
        """Every bound/renew/rebind/reboot the client reported, oldest first."""
        return [lease for lease in map(_parse_event, self.events()) if lease]

    def lease(self) -> Lease | None:
        ls = self.leases()
        return ls[-1] if ls else None

    def wait_for_lease(self, timeout: float = 15, pred: Callable[[Lease], bool] | None = None,
                       after: float = 0) -> Lease:
        deadline = time.monotonic() + timeout
        while True:
            for lease in reversed(self.leases()):
                if lease.time > after and (pred is None or pred(lease)):
                    return lease
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: no matching lease in {timeout}s; "
                                   f"events: {[e.get('reason') or e.get('HOOK_ARG1') for e in self.events()]}"
                                   f"\n{self.client_log()[-2000:]}")
            time.sleep(0.1)

    def client_log(self) -> str:
        if not self.client:
            return ""
        try:
            return (self.dir / f"{self.client}.log").read_text(errors="replace")
        except OSError:
            return ""

    def ipv4(self) -> tuple[str, int] | None:
        out = self.run(["ip", "-j", "-4", "addr", "show", "dev", self.ifname]).stdout
        for link in json.loads(out or "[]"):
            for a in link.get("addr_info", []):
                if a.get("family") == "inet":
                    return a["local"], int(a["prefixlen"])
        return None

    def ipv6_link_local(self) -> str | None:
        """The device's fe80:: address on its interface (None before it has one)."""
        out = self.run(["ip", "-j", "-6", "addr", "show", "dev", self.ifname, "scope", "link"]).stdout
        found = [a["local"] for link in json.loads(out or "[]") for a in link.get("addr_info", [])
                 if a.get("local", "").startswith("fe80:")]
        return found[0] if found else None

    def ipv6_global(self) -> list[str]:
        """The device's global IPv6 addresses (SLAAC, privacy ones too), not tentative."""
        out = self.run(["ip", "-j", "-6", "addr", "show", "dev", self.ifname, "scope", "global"]).stdout
        return [a["local"] for link in json.loads(out or "[]") for a in link.get("addr_info", [])
                if a.get("family") == "inet6" and not a.get("tentative")]

    def wait_for_ipv4(self, timeout: float = 15) -> tuple[str, int]:
        """The address once the client has finished configuring it. udhcpc's script uses
        `ifconfig ADDR netmask M`, two steps with a moment of classful /8 in between, so an
        address only counts when two reads 0.2 s apart agree."""
        deadline = time.monotonic() + timeout
        while True:
            addr = self.ipv4()
            if addr:
                time.sleep(0.2)
                if self.ipv4() == addr:
                    return addr
                continue
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} ({self.client}) got no IPv4 address in {timeout}s\n"
                                   f"{self.client_log()[-2000:]}")
            time.sleep(0.05)

    def routes(self) -> list[dict]:
        return json.loads(self.run(["ip", "-j", "-4", "route", "show"]).stdout or "[]")

    def default_gateway(self) -> str | None:
        for r in self.routes():
            if r.get("dst") == "default":
                return r.get("gateway")
        return None

    def wait_for_gateway(self, timeout: float = 5) -> str | None:
        """The default gateway once the client's script has installed it (None on timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            gw = self.default_gateway()
            if gw or time.monotonic() > deadline:
                return gw
            time.sleep(0.05)

    def ping(self, addr: str, count: int = 1, timeout: float = 2) -> bool:
        """ICMP echo to addr; iputils ping if installed, else a tiny Python one."""
        if shutil.which("ping"):
            cmd = ["ping", "-n", "-q", "-c", str(count), "-W", str(int(max(1, timeout))), addr]
        else:
            cmd = ["/usr/bin/python3", str(PYPING), addr, str(count), str(timeout)]
        return self.run(cmd, check=False, timeout=timeout * count + 5).returncode == 0

    def resolv_conf(self) -> str:
        return (self.dir / "resolv.conf").read_text()

    def close(self) -> None:
        self.stop_dhcp(timeout=2)


class Home:
    """An emulated home; see the module docstring. Use as a context manager."""

    def __init__(self, *, controller: bool = True, config: dict | None = None,
                 internet: bool = True, hwdb: bool | None = None, run_id: str | None = None,
                 keep: bool | None = None, log: Callable[[str], None] | None = None,
                 connect_timeout: float = 60, hwdb_memory: str | None = None, ipv6_pd: bool = False,
                 isp_link: dict | None = None, public_wan: bool = False, stand_ins: bool = True):
        self.run_id = run_id or new_run_id()
        self.router_ns = f"{self.run_id}-r"
        self.internet_ns = f"{self.run_id}-i"
        self.dir = RUN_ROOT / f"{RUN_DIR_PREFIX}{self.run_id}"
        self.ovs_dir = self.dir / "ovs"
        self.with_controller = controller
        self.with_internet = internet
        self.want_hwdb = hwdb
        self.hwdb_memory = hwdb_memory          # hwdbd --memory (default: hwdbd's own)
        self.config_overrides = config if config is not None else {}
        self.ipv6_pd = ipv6_pd                  # the ISP delegates a prefix (kea), the router asks (dhcpcd)
        # A home whose config names no components runs what the router image runs
        # (homework.lineup), with every daemon those need (household.py); a test that
        # needs less names its components, and then has IPv6 only if it asks.
        self.household = controller and "components" not in self.config_overrides.get("controller", {})
        self.web = None          # household homes: the Guest Board (homelab.web.Web)
        self.dns = None          # household homes: the DNS path (homelab.dns.DnsLab)
        # stand_ins=False: a household home without the emulated home's stand-ins (the link
        # simulator, which reports every device every second where a wired image reports
        # none): the benchmarks that measure what a box without Wi-Fi runs.
        self.stand_ins = stand_ins
        if self.household:
            from .household import household_config
            household_config(self)
        elif not ipv6_pd:
            self.config_overrides.setdefault("ipv6", {}).setdefault("enabled", False)
        self.pd_prefix_file = self.dir / "ipv6-delegated-prefix"
        # A slow WAN with a modem's deep buffer (isp_link.py: down_kbit, up_kbit, buffer_ms).
        self.isp_link = isp_link
        self.public_wan = public_wan            # see PUBLIC_WAN_ADDR
        # the router's address the internet sees and reaches (forwards, UPnP mappings)
        self.wan_addr = PUBLIC_WAN_ADDR if public_wan else ROUTER_WAN_ADDR
        self.keep = keep if keep is not None else os.environ.get("HOMELAB_KEEP") == "1"
        self.connect_timeout = connect_timeout
        self._say = log or (lambda msg: None)
        self.devices: list[Device] = []
        self._next_index = 0
        self._namespaces: list[str] = []
        self._procs: list[subprocess.Popen] = []
        self._controller: subprocess.Popen | None = None
        self._controller_log = None
        self._hwdbd: subprocess.Popen | None = None
        self._closed = False
        self._started = False
        self._lock = threading.Lock()
        self._old_handlers: dict = {}
        self.config_path = self.dir / "homework.toml"
        self.control_socket = self.dir / "control.sock"
        self.state_dir = self.dir / "state"
        self.hwdb_enabled = False

    # -- environment for OVS tools --------------------------------------------------------
    @property
    def ovs_env(self) -> dict:
        env = dict(os.environ)
        env.update(OVS_RUNDIR=str(self.ovs_dir / "run"), OVS_LOGDIR=str(self.ovs_dir / "log"),
                   OVS_DBDIR=str(self.ovs_dir / "db"), OVS_SYSCONFDIR=str(self.ovs_dir / "etc"))
        return env

    def router(self, cmd: Sequence[str] | str, check: bool = True, timeout: float | None = 30,
               input: str | None = None) -> subprocess.CompletedProcess:
        """Run a command in the router namespace, with this run's OVS environment."""
        return sh(ns_cmd(self.router_ns, cmd), check=check, timeout=timeout, env=self.ovs_env,
                  input=input)

    def internet(self, cmd: Sequence[str] | str, check: bool = True,
                 timeout: float | None = 30) -> subprocess.CompletedProcess:
        return sh(ns_cmd(self.internet_ns, cmd), check=check, timeout=timeout)

    def isp_sent_bytes(self) -> int:
        """Bytes the internet's side has put on its link to the router so far (Ethernet
        frames, retransmissions included): an independent count to hold the router's own
        byte counts against (the router counts what it received, which a loaded userspace
        datapath may then drop and TCP send again)."""
        return int(self.internet(["cat", "/sys/class/net/isp0/statistics/tx_bytes"]).stdout)

    def router_popen(self, cmd: Sequence[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(ns_cmd(self.router_ns, cmd), env=self.ovs_env,
                             start_new_session=True, **kw)
        self._procs.append(p)
        return p

    def internet_popen(self, cmd: Sequence[str], **kw) -> subprocess.Popen:
        """Start a server in the internet namespace (e.g. a DNS resolver on DNS_ADDR)."""
        p = subprocess.Popen(ns_cmd(self.internet_ns, cmd), start_new_session=True, **kw)
        self._procs.append(p)
        return p

    def vsctl(self, *args: str) -> str:
        return self.router(["ovs-vsctl", "--timeout=10", *args]).stdout

    def router_net(self, action: str = "up", **env: str) -> subprocess.CompletedProcess:
        """Run scripts/router-net.sh ACTION in the router namespace with this run's settings."""
        e = self.ovs_env
        e.update(BRIDGE=BRIDGE, DATAPATH_TYPE="netdev", WAN_IF=WAN_IF if self.with_internet else "",
                 LAN_PORTS="", HWADDR=ROUTER_HWADDR, ROUTER_NET_STATE=str(self.dir / "router-net"),
                 CONTROLLER="tcp:127.0.0.1:6653" if self.with_controller else "none")
        e.update(env)
        return sh(ns_cmd(self.router_ns, ["bash", str(ROUTER_NET), action]), env=e, timeout=60)

    def dump_flows(self) -> str:
        return self.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", BRIDGE]).stdout

    def learned_flows(self, port: int) -> list[str]:
        """The learned table's per-connection entries (table 10, priority 100) naming this
        TCP/UDP port; other tables name ports for good (the shared gateway table 5: 53, 80)."""
        return [ln for ln in self.dump_flows().splitlines()
                if "table=10" in ln and "priority=100" in ln and (f"tp_src={port}" in ln or f"tp_dst={port}" in ln)]

    def add_flow(self, flow: str) -> None:
        self.router(["ovs-ofctl", "-O", "OpenFlow13", "add-flow", BRIDGE, flow])

    def router_addresses(self) -> list[str]:
        out = self.router(["ip", "-j", "-4", "addr", "show", "dev", BRIDGE]).stdout
        return [f"{a['local']}/{a['prefixlen']}" for link in json.loads(out or "[]")
                for a in link.get("addr_info", [])]

    # -- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> Home:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> Home:
        if self._started:
            return self
        self._started = True
        atexit.register(self.close)
        self._install_signal_handlers()
        try:
            self.dir.mkdir(parents=True)
            (self.dir / "owner.pid").write_text(f"{os.getpid()}\n")
            (self.dir / "devices").mkdir()
            self._start_router()
            if self.with_internet:
                self._start_internet()
                if self.isp_link:
                    from .isp_link import shape_isp_link
                    shape_isp_link(self.internet, **self.isp_link)
                if self.ipv6_pd:
                    self._start_prefix_delegation()
            if self.with_controller:
                self._start_hwdb()
                self._write_config()
                self.start_controller()
                if self.household:
                    from .household import start_services
                    start_services(self)
        except BaseException:
            self.close()
            raise
        return self

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def on_term(signum, frame):
            raise SystemExit(128 + signum)  # unwinds through __exit__/finally -> close()

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._old_handlers[sig] = signal.signal(sig, on_term)
            except (ValueError, OSError):
                pass
        # SIGINT: Python's default raises KeyboardInterrupt, which unwinds the same way.
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            self._old_handlers[signal.SIGINT] = signal.signal(signal.SIGINT,
                                                              signal.default_int_handler)

    def _start_router(self) -> None:
        for d in ("run", "log", "db", "etc/openvswitch"):
            (self.ovs_dir / d).mkdir(parents=True, exist_ok=True)
        sh(["ip", "netns", "add", self.router_ns])
        self._namespaces.append(self.router_ns)
        sh(["ip", "-n", self.router_ns, "link", "set", "lo", "up"])
        start_ovs(self.ovs_dir, lambda cmd: self.router(cmd, timeout=60))
        self._say(f"OVS running in namespace {self.router_ns} (dirs in {self.ovs_dir})")
        if self.with_internet:
            sh(["ip", "netns", "add", self.internet_ns])
            self._namespaces.append(self.internet_ns)
            sh(["ip", "-n", self.internet_ns, "link", "set", "lo", "up"])
            sh(["ip", "-n", self.router_ns, "link", "add", WAN_IF, "type", "veth",
                "peer", "name", "isp0", "netns", self.internet_ns])
            if self.public_wan:      # first: the address an interface query (miniupnpd's) returns
                sh(["ip", "-n", self.router_ns, "addr", "add", f"{PUBLIC_WAN_ADDR}/24", "dev", WAN_IF])
            sh(["ip", "-n", self.router_ns, "addr", "add", f"{ROUTER_WAN_ADDR}/24", "dev", WAN_IF])
            sh(["ip", "-n", self.router_ns, "addr", "add", f"{ROUTER_WAN6_ADDR}/64", "dev", WAN_IF, "nodad"])
            sh(["ip", "-n", self.router_ns, "link", "set", WAN_IF, "up"])
            self.router(["ethtool", "-K", WAN_IF, "tx", "off"], check=False)
        self.router_net("up")
        if self.with_internet:
            sh(["ip", "-n", self.router_ns, "route", "replace", "default", "via", ISP_ADDR])
            sh(["ip", "-n", self.router_ns, "-6", "route", "replace", "default", "via", ISP6_ADDR, "dev", WAN_IF])

    def _start_internet(self) -> None:
        i = self.internet_ns
        sh(["ip", "-n", i, "addr", "add", f"{ISP_ADDR}/24", "dev", "isp0"])
        if self.public_wan:
            sh(["ip", "-n", i, "addr", "add", f"{PUBLIC_ISP_ADDR}/24", "dev", "isp0"])
        sh(["ip", "-n", i, "link", "set", "isp0", "up"])
        sh(ns_cmd(i, ["ethtool", "-K", "isp0", "tx", "off"]), check=False)
        # Servers live on lo (no dummy module on these kernels).
        for addr in (WEB_ADDR, DNS_ADDR):
            sh(["ip", "-n", i, "addr", "add", f"{addr}/32", "dev", "lo"])
        sh(["ip", "-n", i, "addr", "add", f"{ISP6_ADDR}/64", "dev", "isp0", "nodad"])
        sh(["ip", "-n", i, "addr", "add", f"{WEB6_ADDR}/128", "dev", "lo"])
        sh(["ip", "-n", i, "-6", "route", "add", LAN6_SITE, "via", ROUTER_WAN6_ADDR, "dev", "isp0"])
        # No route back to 10.2.0.0/16 on purpose: like a real ISP, the internet only
        # sees the router's WAN address, so reaching a server proves the NAT works.
        www = self.dir / "www"
        www.mkdir()
        (www / "index.html").write_text(
            "<html><body><h1>Hello from the homelab internet</h1>\n"
            "<p><a href=\"/download/100M\">a 100 MB download</a>, "
            "<a href=\"/stream/3000\">a 3 Mbit/s video stream</a></p></body></html>\n")
        self._web_log = open(self.dir / "web.log", "ab")
        for bind in (WEB_ADDR, WEB6_ADDR):       # www/ plus downloads and streams (internet_web.py)
            self.internet_popen([sys.executable, str(INTERNET_WEB), "--bind", bind, "--port", "80",
                                 "--directory", str(www)], stdout=self._web_log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while (self.internet(["ss", "-Hltn", f"src {WEB_ADDR}:80"]).stdout.strip() == ""
               or self.internet(["ss", "-Hltn", f"src [{WEB6_ADDR}]:80"]).stdout.strip() == ""):
            if time.monotonic() > deadline:
                raise RuntimeError("web server in the internet namespace did not start")
            time.sleep(0.05)
        self._say(f"internet namespace {i}: ISP {ISP_ADDR}, web http://{WEB_ADDR}/")

    def _start_prefix_delegation(self) -> None:
        """kea-dhcp6 in the internet namespace delegates /48s; dhcpcd on the router's WAN
        asks for one, and our hook (scripts/wan-pd-hook.sh) writes it where the
        controller reads it ([ipv6] prefix_file). Waits for the first delegation."""
        pool = ipaddress.IPv6Network(PD_POOL)
        kea_conf = self.dir / "kea-dhcp6.conf"
        kea_conf.write_text(json.dumps({"Dhcp6": {
            "interfaces-config": {"interfaces": ["isp0"]},
            "lease-database": {"type": "memfile", "persist": False},
            "server-id": {"type": "LL", "persist": False},
            "preferred-lifetime": 3000, "valid-lifetime": 4000, "renew-timer": 1000, "rebind-timer": 2000,
            "subnet6": [{"id": 1, "subnet": str(ipaddress.IPv6Network(f"{ISP6_ADDR}/64", strict=False)),
                         "interface": "isp0",
                         "pd-pools": [{"prefix": str(pool.network_address), "prefix-len": pool.prefixlen,
                                       "delegated-len": 48}]}],
            "loggers": [{"name": "kea-dhcp6", "severity": "INFO",
                         "output_options": [{"output": str(self.dir / "kea-dhcp6.log")}]}]}}))
        # kea binds the link-local address: wait until duplicate address detection is over.
        deadline = time.monotonic() + 10
        while True:
            out = sh(["ip", "-n", self.internet_ns, "-6", "addr", "show", "dev", "isp0", "scope", "link"]).stdout
            if "inet6" in out and "tentative" not in out:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("isp0 has no usable link-local address")
            time.sleep(0.1)
        kea_env = dict(os.environ, KEA_PIDFILE_DIR=str(self.dir), KEA_LOCKFILE_DIR=str(self.dir))
        self.internet_popen(["kea-dhcp6", "-c", str(kea_conf)], env=kea_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        # The ISP routes every prefix it delegates to the router.
        sh(["ip", "-n", self.internet_ns, "-6", "route", "add", PD_POOL, "via", ROUTER_WAN6_ADDR, "dev", "isp0"])
        conf = self.dir / "dhcpcd-wan.conf"
        # dhcpcd runs hooks with a clean environment: `env` in its config passes the file's path.
        conf.write_text(f"ipv6only\nnoipv6rs\nia_pd 1\nenv PREFIX_FILE={self.pd_prefix_file}\n")
        lib = self.dir / "dhcpcd-wan-lib"
        lib.mkdir(exist_ok=True)
        inner = (f"mount -t tmpfs tmpfs /run && mount --bind '{lib}' /var/lib/dhcpcd && "
                 f"exec dhcpcd -6 -B -f '{conf}' -c '{WAN_PD_HOOK}' {WAN_IF}")
        self._pd_log = open(self.dir / "dhcpcd-wan.log", "ab")
        self._procs.append(subprocess.Popen(ns_cmd(self.router_ns, ["unshare", "-m", "sh", "-c", inner]),
                                            stdout=self._pd_log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True))
        deadline = time.monotonic() + 30
        while not (self.pd_prefix_file.exists() and self.pd_prefix_file.read_text().strip()):
            if time.monotonic() > deadline:
                raise RuntimeError("no delegated prefix from the ISP in 30 s (see dhcpcd-wan.log, kea-dhcp6.log)")
            time.sleep(0.1)
        self._say(f"ISP delegated {self.pd_prefix_file.read_text().strip()} to the router (DHCPv6-PD)")

    def _hwdbd_binary(self) -> Path | None:
        b = REPO / "hwdb" / "target" / "release" / "hwdbd"
        return b if b.exists() and os.access(b, os.X_OK) else None

    def _start_hwdb(self) -> None:
        binary = self._hwdbd_binary()
        if self.want_hwdb is False or (binary is None and not self.want_hwdb):
            return
        if binary is None:
            raise RuntimeError("hwdb requested but hwdb/target/release/hwdbd is not built")
        schemas = sorted((REPO / "hwdb" / "schema").glob("*"))
        if not schemas:
            if self.want_hwdb:
                raise RuntimeError("hwdb requested but hwdb/schema/ holds no schema")
            return
        state = self.dir / "hwdb"
        state.mkdir(exist_ok=True)
        self._hwdb_log = open(self.dir / "hwdbd.log", "ab")
        self._hwdbd = self.router_popen([str(binary), "--port", str(HWDB_PORT), "--listen", "127.0.0.1",
                                         "--schema", str(schemas[0]), "--state-dir", str(state)]
                                        + (["--memory", self.hwdb_memory] if self.hwdb_memory else []),
                                        stdout=self._hwdb_log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        # hwdbd speaks SRPC over UDP.
        while not self.router(["ss", "-Hlun", f"sport = :{HWDB_PORT}"]).stdout.strip():
            if self._hwdbd.poll() is not None or time.monotonic() > deadline:
                self._say("hwdbd did not start; running without hwdb (see hwdbd.log)")
                _kill_pid(self._hwdbd.pid, 1)
                self._hwdbd = None
                return
            time.sleep(0.05)
        self.hwdb_enabled = True
        self._say(f"hwdbd listening on 127.0.0.1:{HWDB_PORT} in {self.router_ns}")

    def _write_config(self) -> None:
        doc = {
            "lan": {"bridge": BRIDGE, "datapath_type": "netdev", "pool": "10.2.0.0/16"},
            "dhcp": {"pending_lease": 30, "permitted_lease": 3600},
            "controller": {"listen": "127.0.0.1", "port": 6653,
                           "control_socket": str(self.control_socket),
                           "components": ["dhcp", "routing"]},
            "state": {"dir": str(self.state_dir)},
            "hwdb": {"enabled": self.hwdb_enabled, "host": "127.0.0.1", "port": HWDB_PORT},
            # Tests: every API answer is checked against its declared shape (a 500 naming the field if not).
            "api": {"check_answers": True},
            # miniupnpd's files of this home (the image's are in /run/homework/upnp)
            "reach": {"upnp_run_dir": str(self.dir / "upnp")},
            # remote access: this home's own WireGuard interface (wireguard-go's control socket is
            # named after it, in one directory for the whole machine) and pid files
            "remote": {"interface": f"{self.run_id}wg", "run_dir": str(self.dir / "remote")},
        }
        if self.ipv6_pd:
            doc["ipv6"] = {"enabled": True, "prefix": "", "prefix_file": str(self.pd_prefix_file)}
        for section, table in self.config_overrides.items():
            doc.setdefault(section, {}).update(table)
        self.config_path.write_text(to_toml(doc))

    # -- the controller --------------------------------------------------------------------
    def controller_env(self) -> dict:
        env = dict(os.environ)
        # HOMELAB_NOX_MODULES: run a controller from elsewhere (e.g. a snapshot of HEAD).
        nox = os.environ.get("HOMELAB_NOX_MODULES") or str(REPO / "nox-modules")
        paths = [nox, str(REPO / "hwdb" / "python")]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env["PYTHONUNBUFFERED"] = "1"
        env["SETUPTOOLS_USE_DISTUTILS"] = "stdlib"     # as the image's unit: a faster start
        # This home's own Open vSwitch, for the ovs-vsctl the controller runs (satellites).
        env.update({k: v for k, v in self.ovs_env.items() if k.startswith("OVS_")})
        return env

    def start_controller(self, wait: bool = True) -> None:
        if self._controller is not None and self._controller.poll() is None:
            return
        self._controller_log = open(self.dir / "controller.log", "ab")
        self._controller = subprocess.Popen(
            ns_cmd(self.router_ns, [_python(), "-m", "homework", "--config", str(self.config_path)]),
            stdout=self._controller_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=self.controller_env(), cwd=str(REPO), start_new_session=True)
        self._say(f"controller started (pid {self._controller.pid}), log {self.dir / 'controller.log'}")
        if wait:
            self.wait_connected()

    def is_connected(self) -> bool:
        out = self.router(["ovs-vsctl", "--timeout=5", "--columns=is_connected", "--bare",
                           "list", "controller"], check=False).stdout
        return out.strip() == "true"

    def wait_connected(self, timeout: float | None = None) -> None:
        timeout = timeout or self.connect_timeout
        deadline = time.monotonic() + timeout
        while not self.is_connected():
            if self._controller is not None and self._controller.poll() is not None:
                raise RuntimeError(f"controller exited with {self._controller.returncode}:\n"
                                   f"{self.controller_log()[-4000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"switch not connected to the controller after {timeout}s:\n"
                                   f"{self.controller_log()[-4000:]}")
            time.sleep(0.1)
        # Connected; give the controller a moment to install its base flows.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if "priority=" in self.dump_flows():
                break
            time.sleep(0.05)
        # The control socket too: after a restart the switch may still say is_connected of
        # the old session for a moment, and a loaded machine starts the controller slowly.
        if self.control_socket:
            deadline = time.monotonic() + timeout
            while not self._control_listening() and time.monotonic() < deadline:
                time.sleep(0.05)

    def _control_listening(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(str(self.control_socket))
            except OSError:
                return False
        return True

    def stop_controller(self, timeout: float = 5.0) -> None:
        if self._controller is not None:
            _kill_pid(self._controller.pid, timeout)
            self._controller = None
        if self._controller_log:
            self._controller_log.close()
            self._controller_log = None

    def restart_controller(self) -> None:
        self.stop_controller()
        self.start_controller()

    def controller_running(self) -> bool:
        return self._controller is not None and self._controller.poll() is None

    def controller_log(self) -> str:
        try:
            return (self.dir / "controller.log").read_text(errors="replace")
        except OSError:
            return ""

    def homework(self, *args: str, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess:
        """The admin CLI against this run's control socket. The bound is against a hang: on a
        loaded machine the CLI's own start-up and a controller digesting a burst took past
        15 s (a permit, dns-stats after a DNS flood)."""
        return sh([_python(), "-m", "homework.cli", "--socket", str(self.control_socket), *args],
                  check=check, timeout=timeout, env=self.controller_env())

    def control(self, cmd: str, timeout: float = 30, **args):
        """One command straight over the control socket (no CLI process start-up: for tests
        that time the controller, and for scripts that issue thousands of commands)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.control_socket))
            s.sendall(json.dumps({"cmd": cmd, "args": args}).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        reply = json.loads(buf)
        if not reply.get("ok"):
            raise RuntimeError(f"{cmd} {args}: {reply.get('error')}")
        return reply["result"]

    def cli_command(self, *args: str) -> str:
        """The command line a person would type for `homework ARGS` against this run."""
        return f"{REPO / 'scripts' / 'homework'} --socket {self.control_socket} " + " ".join(args)

    # -- devices ---------------------------------------------------------------------------
    def add_device(self, name: str | None = None, mac: str | None = None, switch=None) -> Device:
        """A device on the router's bridge, or on `switch` (a homelab.satellite.Satellite)."""
        with self._lock:
            # Never reuse an index within a run: the controller remembers MACs.
            self._next_index += 1
            index = self._next_index
            name = name or f"dev{index}"
            mac = (mac or f"02:68:77:01:{index >> 8:02x}:{index & 0xff:02x}").lower()
            dev = Device(self, index, name, mac, switch=switch)
            self.devices.append(dev)
        dev._create()
        return dev

    def add_devices(self, n: int, prefix: str = "dev") -> list[Device]:
        return [self.add_device(name=f"{prefix}{self._next_index + 1}") for _ in range(n)]

    def remove_device(self, dev: Device) -> None:
        dev.close()
        try:
            dev.vsctl("--if-exists", "del-port", dev.bridge, dev.port_name)
        except (RuntimeError, CommandError):
            if dev.switch is None:      # a satellite already stopped took its ports with it
                raise
        self._kill_ns_processes(dev.ns)
        sh(["ip", "netns", "del", dev.ns], check=False)
        if dev.ns in self._namespaces:
            self._namespaces.remove(dev.ns)
        if dev in self.devices:
            self.devices.remove(dev)

    def remove_devices(self) -> None:
        for dev in list(self.devices):
            self.remove_device(dev)

    # -- teardown --------------------------------------------------------------------------
    def _kill_ns_processes(self, ns: str) -> None:
        out = sh(["ip", "netns", "pids", ns], check=False).stdout.split()
        for pid in out:
            if pid.isdigit() and int(pid) != os.getpid():
                _kill_pid(int(pid), 2)

    def close(self) -> None:
        with self._lock:
            if self._closed or not self._started:
                return
            self._closed = True
        errors = []

        def attempt(fn, *a):
            try:
                fn(*a)
            except BaseException as exc:  # keep tearing down whatever happens
                errors.append(f"{getattr(fn, '__name__', fn)}: {exc}")

        for dev in list(self.devices):
            attempt(dev.close)
        attempt(self.stop_controller, 3)
        for p in self._procs:
            attempt(_kill_pid, p.pid, 3)
        # what the controller's remote access started, should it have died without stopping them
        for pidfile in sorted((self.dir / "remote").glob("*.pid")):
            pid = _read_pid(pidfile)
            if pid and _runs(pid, ("sleep", "udhcpc", "wireguard-go")):
                attempt(_kill_pid, pid, 3)
        run = self.ovs_dir / "run"
        for daemon in ("ovs-vswitchd", "ovsdb-server"):
            pid = _read_pid(run / f"{daemon}.pid")
            if pid:
                attempt(_kill_pid, pid, 5)
        for ns in reversed(self._namespaces):
            attempt(self._kill_ns_processes, ns)
            attempt(sh, ["ip", "netns", "del", ns], False)
        for f in ("_web_log", "_hwdb_log", "_pd_log"):
            fh = getattr(self, f, None)
            if fh:
                attempt(fh.close)
        artifacts = os.environ.get("HOMELAB_ARTIFACTS")
        if artifacts and self.dir.exists():
            attempt(self._save_artifacts, Path(artifacts))
        if not self.keep:
            attempt(shutil.rmtree, self.dir, True)
        for sig, handler in self._old_handlers.items():
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError, TypeError):
                pass
        try:
            atexit.unregister(self.close)
        except Exception:
            pass
        if errors:
            print(f"homelab {self.run_id}: teardown problems: {errors}", file=sys.stderr)

    def _save_artifacts(self, dest: Path) -> None:
        target = dest / self.run_id
        target.mkdir(parents=True, exist_ok=True)
        for src in [self.dir / "controller.log", self.dir / "hwdbd.log", self.config_path,
                    *(self.ovs_dir / "log").glob("*.log"), *(self.dir / "devices").glob("*/*.log")]:
            if src.exists():
                rel = src.relative_to(self.dir)
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target / rel)
