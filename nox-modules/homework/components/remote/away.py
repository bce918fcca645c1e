"""The away namespace: where remote devices join the home as devices like any other.

WireGuard's UDP socket stays in the router's namespace, on the WAN (the interface is made
there, then moved: WireGuard keeps its socket where the interface was made, and so does
wireguard-go, whose process stays). The interface itself, the clear side, lives in a
network namespace of its own, with one veth per remote device whose other end is a port of
the router's bridge. A remote device is therefore a MAC on a switch port: a real DHCP client
(udhcpc) asks for its /30 from that port, the household lets it in on the board as any
device, and every rule (DNS, schedules, priorities, usage, limits) applies to it as to a
device at home. The namespace only moves packets between the tunnel and the veths:

* From the device (tunnel, source its /30 address or /64): policy routing sends them out
  its veth to its gateway (tables 1000+i).
* To the device (from its veth): its address is on the veth, for its DHCP client; the
  namespace's `local` rule is moved below one that sends every address of a device back
  into the tunnel (table 3000), except DHCP answers (UDP 68), which stay local.

The namespace is held by one `sleep` process (`unshare --net`), named by its pid: no name
to collide with another router's (the emulated homes run side by side), and it disappears
with the processes in it.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

from ... import nftplan

log = logging.getLogger("homework.remote.away")

ROUTER_NET = Path(__file__).resolve().parents[4] / "scripts" / "router-net.sh"
DHCP_SCRIPT = Path(__file__).with_name("dhcp-script.sh")
TO_DEVICES = 3000          # table: each remote device's address -> the tunnel
RULE_DHCP, RULE_TO_DEVICES, RULE_FROM_DEVICE, RULE_LOCAL = 50, 60, 100, 500


def run(argv: list[str], text: str | None = None, env: dict | None = None) -> tuple[int, str]:
    try:
        res = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=20,
                             env={**os.environ, **env} if env else None)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return res.returncode, res.stdout + res.stderr


def port_names(index: int) -> tuple[str, str]:
    """(the bridge's end, the namespace's end) of a remote device's veth."""
    return f"hwr{index}", f"rmt{index}"


def kill_pidfile(path: Path, name: str) -> None:
    """End a process an earlier controller left (its pid file, if it still runs `name`)."""
    try:
        pid = int(path.read_text().strip())
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except (OSError, ValueError, IndexError):
        path.unlink(missing_ok=True)
        return
    if os.path.basename(cmd).decode(errors="replace") == name:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    path.unlink(missing_ok=True)


class Away:
    def __init__(self, run_dir: Path, bridge: str, datapath_type: str):
        self.run_dir = run_dir
        self.bridge = bridge
        self.datapath_type = datapath_type
        self.holder: subprocess.Popen | None = None
        self.clients: dict[int, subprocess.Popen] = {}     # index -> its udhcpc
        self.routes: dict[int, tuple] = {}                 # index -> (address, gateway, /64) routed now
        self.wg = "wg0"                                    # the tunnel's name (the component sets it)

    # -- the namespace ------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.holder.pid if self.holder else 0

    def ns(self, *cmd: str) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.pid}/ns/net", "--", *cmd]

    def run(self, *cmd: str, text: str | None = None) -> tuple[int, str]:
        return run(self.ns(*cmd), text)

    def start(self) -> str:
        """A fresh namespace ('' when done, else why not). An earlier controller's goes."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.run_dir.glob("udhcpc-*.pid"):
            kill_pidfile(stale, "udhcpc")
        kill_pidfile(self.run_dir / "away.pid", "sleep")
        try:
            self.holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"],
                                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            return f"cannot make the away namespace: {exc}"
        (self.run_dir / "away.pid").write_text(f"{self.holder.pid}\n")
        mine = os.readlink("/proc/self/ns/net")
        for _ in range(200):
            try:
                if os.readlink(f"/proc/{self.holder.pid}/ns/net") != mine:
                    break
            except OSError:
                pass
            time.sleep(0.01)
        else:
            return "the away namespace did not come up"
        script = "\n".join([
            "link set lo up",
            "rule del pref 0",
            f"rule add pref {RULE_LOCAL} lookup local",
            f"rule add pref {RULE_TO_DEVICES} lookup {TO_DEVICES}",
        ]) + "\n"
        rc, out = self.run("ip", "-batch", "-", text=script)
        if rc != 0:
            return f"the away namespace's routing: {out.strip()}"
        self.run("sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
                 "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
                 "net.ipv6.conf.default.accept_ra=0")
        return ""

    def adopt_tunnel(self, ifname: str, mtu: int = 1420) -> str:
        """Move the WireGuard interface in; clamp TCP's MSS to it on the way out."""
        rc, out = run(["ip", "link", "set", ifname, "netns", str(self.pid)])
        if rc != 0:
            return f"cannot move {ifname} into the away namespace: {out.strip()}"
        self.run("sysctl", "-q", "-w", f"net.ipv4.conf.{ifname}.accept_local=1", f"net.ipv4.conf.{ifname}.rp_filter=0")
        rc, out = self.run("ip", "link", "set", ifname, "mtu", str(mtu), "up")
        if rc != 0:
            return f"cannot bring {ifname} up: {out.strip()}"
        forward = nftplan.AWAY.chain("forward")
        self.run("nft", "-f", "-", text=(
            f"table {nftplan.AWAY.family} {nftplan.AWAY.name} {{\n"
            f"  chain {forward.name} {{\n    {forward.header()}\n"
            f'    oifname "{ifname}" tcp flags syn tcp option maxseg size set rt mtu\n  }}\n}}\n'))
        return ""

    def stop(self) -> None:
        for index in list(self.clients):
            self._stop_client(index)
        if self.holder is not None:
            try:
                self.holder.terminate()
                self.holder.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.holder.kill()
            self.holder = None
        (self.run_dir / "away.pid").unlink(missing_ok=True)

    # -- a remote device --------------------------------------------------------------------------
    def add_device(self, index: int, mac: str, hostname: str, ovs_env: dict | None = None) -> str:
        """Its veth (one end a port of the bridge, guarded as any LAN port), and its DHCP
        client in the namespace, which makes it a device asking to join."""
        outer, inner = port_names(index)
        run(["ip", "link", "del", outer])                   # an earlier run's
        rc, out = run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner,
                       "netns", str(self.pid)])
        if rc != 0:
            return f"cannot make {outer}: {out.strip()}"
        rc, out = self.run("ip", "link", "set", inner, "address", mac)
        if rc != 0:
            return f"cannot set {inner}'s address: {out.strip()}"
        self.run("sysctl", "-q", "-w", f"net.ipv6.conf.{inner}.accept_ra=0", f"net.ipv4.conf.{inner}.proxy_arp=1",
                 f"net.ipv4.conf.{inner}.rp_filter=0", f"net.ipv6.conf.{inner}.forwarding=1")
        if self.datapath_type == "netdev":   # the userspace datapath never completes partial checksums
            run(["ethtool", "-K", outer, "tx", "off"])
            self.run("ethtool", "-K", inner, "tx", "off")
        rc, out = run(["ovs-vsctl", "--timeout=10", "--may-exist", "add-port", self.bridge, outer], env=ovs_env)
        if rc != 0:
            return f"cannot plug {outer} into {self.bridge}: {out.strip()}"
        run(["bash", str(ROUTER_NET), "guard", outer], env={"DATAPATH_TYPE": self.datapath_type})
        run(["ip", "link", "set", outer, "up"])
        self.run("ip", "link", "set", inner, "up")
        return self._start_client(index, inner, hostname)

    def _start_client(self, index: int, inner: str, hostname: str) -> str:
        pidfile = self.run_dir / f"udhcpc-{index}.pid"
        kill_pidfile(pidfile, "udhcpc")
        try:
            proc = subprocess.Popen(self.ns("udhcpc", "-f", "-i", inner, "-s", str(DHCP_SCRIPT),
                                            "-x", f"hostname:{hostname}", "-t", "10", "-T", "2", "-A", "3"),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
        except OSError as exc:
            return f"cannot start its DHCP client: {exc}"
        pidfile.write_text(f"{proc.pid}\n")
        self.clients[index] = proc
        return ""

    def _stop_client(self, index: int) -> None:
        proc = self.clients.pop(index, None)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
        (self.run_dir / f"udhcpc-{index}.pid").unlink(missing_ok=True)

    def remove_device(self, index: int, ovs_env: dict | None = None) -> None:
        self._stop_client(index)
        outer, _inner = port_names(index)
        run(["ovs-vsctl", "--timeout=10", "--if-exists", "del-port", self.bridge, outer], env=ovs_env)
        run(["ip", "link", "del", outer])
        self.route(index, None, None, None)

    def route(self, index: int, address: str | None, gateway: str | None, prefix6: str | None) -> str:
        """Point the namespace's routing at the device's lease (address None: it has none
        now). Nothing is done when it is where it was."""
        wanted = (address, gateway, prefix6) if address else None
        if self.routes.get(index) == wanted:
            return ""
        self._drop_device_routes(index)
        if wanted is None:
            return ""
        _outer, inner = port_names(index)
        table = 1000 + index
        v4 = [f"route replace {address}/32 dev {self.wg} table {TO_DEVICES}",
              f"rule add pref {RULE_FROM_DEVICE} iif {self.wg} from {address} lookup {table}",
              f"route replace default via {gateway} dev {inner} onlink table {table}",
              f"rule add pref {RULE_DHCP} iif {inner} ipproto udp dport 68 lookup local"]
        v6 = [f"route replace {prefix6} dev {self.wg}",
              f"rule add pref {RULE_FROM_DEVICE} iif {self.wg} from {prefix6} lookup {table}",
              f"route replace default via fe80::1 dev {inner} table {table}"] if prefix6 else []
        self.routes[index] = wanted
        problems = []
        for family, lines in (("-4", v4), ("-6", v6)):
            if lines:
                rc, out = self.run("ip", family, "-batch", "-", text="\n".join(lines) + "\n")
                if rc != 0:
                    problems.append(out.strip()[:300])
        return f"routing for remote device {index}: {'; '.join(problems)}" if problems else ""

    def _drop_device_routes(self, index: int) -> None:
        old = self.routes.pop(index, None)
        if not old:
            return
        address, _gateway, prefix6 = old
        _outer, inner = port_names(index)
        table = 1000 + index
        v4 = [f"route del {address}/32 table {TO_DEVICES}", f"rule del pref {RULE_FROM_DEVICE} lookup {table}",
              f"rule del pref {RULE_DHCP} iif {inner} ipproto udp dport 68 lookup local", f"route flush table {table}"]
        v6 = [f"route del {prefix6}", f"rule del pref {RULE_FROM_DEVICE} lookup {table}",
              f"route flush table {table}"] if prefix6 else []
        for family, lines in (("-4", v4), ("-6", v6)):
            if lines:
                self.run("ip", family, "-force", "-batch", "-", text="\n".join(lines) + "\n")


def host_address(prefix6: str, host: int = 2) -> str:
    """The remote device's own IPv6 address in its /64 (the router's is ::1)."""
    return str(ipaddress.IPv6Network(prefix6).network_address + host)
