"""miniupnpd (Debian's miniupnpd-nftables) as the router's UPnP IGD, NAT-PMP and PCP server.

Why it is driven this way:

* **Who may ask is decided at the door** (plan.py's `gate`): miniupnpd's permission rules
  are by IPv4 address and port only, and its PCP server treats every IPv6 client as
  allowed (pcpserver.c: "we just assume anyone on IPv6 is a good guy"). The nftables gate
  lets a device reach miniupnpd only while the household lets it open ports, over either
  family. The permission rules here only keep miniupnpd off the ports the household
  forwards itself and the router's own (WireGuard), and below 1024.
* **Ending a device's mappings means a restart.** Its SOAP and NAT-PMP deletions are
  honoured only from the device's own address (secure mode), and rules deleted behind
  its back stay in its cache. So: stop it, drop the device's lines from its lease files,
  flush its chains, start it; it re-creates everyone else's mappings from the lease files.
  Done only when a device loses the permission or its access, or the household closes a
  mapping or changes a forward: rare, and a few milliseconds.
* **One listening address for every device.** miniupnpd answers only clients inside the
  prefix of its listening address, and binds NAT-PMP to that address; every device here
  has a /30 of its own. It listens on a veth of its own (`LISTEN_IF`) holding an address
  whose prefix covers the pool (plan.upnp_address); a device's NAT-PMP/PCP to its own
  gateway is DNATed there (plan.py), and its SSDP answers carry that address, which the
  switch sends to the router like any address outside the pool.

The lease files are where the mappings are read from for the board (protocol, ports,
device address, description, expiry).
"""
from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

from .plan import ROUTER_TABLE, TABLE, UPNP_FILTER_CHAIN, UPNP_NAT_CHAIN, UPNP_POST_CHAIN

log = logging.getLogger("homework.reach.upnp")

BINARY = "/usr/sbin/miniupnpd"
LISTEN_IF = "hwupnp0"        # its veth (the peer, hwupnp1, only keeps the link up)
LISTEN_PEER = "hwupnp1"
LOWEST_PORT = 1024           # devices may not map the well-known ports
READY_WITHIN = 10.0          # seconds a (re)started miniupnpd may take to listen
# Its IPv6 address (on LISTEN_IF), given to control points for IGDv2 pinholes: outside the
# site prefix, so the switch sends it to the router as upstream traffic, and unique local
# (RFC 4193), so it is never routed out. The control connection must come from the
# device's own address (miniupnpd checks), which it does from its /64.
ADDRESS6 = "fd68:7765:7570::1"


@dataclass(frozen=True)
class Mapping:
    """One port a device opened by UPnP, NAT-PMP or PCP."""
    family: int              # 4: a port of the WAN address mapped to the device; 6: a pinhole
    protocol: str            # tcp | udp
    port: int                # 4: the external port; 6: the device's port
    address: str             # the device's address it goes to
    to_port: int
    description: str
    expires: float           # epoch seconds; 0 = no expiry (UPnP lease 0)
    uid: int = 0             # 6: miniupnpd's pinhole id
    handles: tuple = ()      # its rules: (table, chain, handle)

    @property
    def key(self) -> str:
        return f"{self.family}/{self.protocol}/{self.port}/{self.address}"

    def as_dict(self) -> dict:
        return {"key": self.key, "family": self.family, "protocol": self.protocol, "port": self.port,
                "address": self.address, "to_port": self.to_port, "description": self.description,
                "expires": self.expires}


def _expiry(stamp: int, written: float, now: float) -> float:
    """A lease file's stamp: epoch seconds of the end (miniupnpd's default build), or
    seconds left when it was written (LEASEFILE_USE_REMAINING_TIME); 0 = never."""
    if stamp <= 0:
        return 0.0
    return float(stamp) if stamp > 1_000_000_000 else written + stamp


def parse_leases(text: str, written: float, now: float) -> list[Mapping]:
    """IPv4 lines 'TCP:50000:10.2.0.2:50000:1795400000:description'."""
    out = []
    for line in text.splitlines():
        parts = line.split(":", 5)
        if len(parts) < 6:
            continue
        proto, eport, addr, iport, stamp, desc = parts
        try:
            out.append(Mapping(4, proto.lower(), int(eport), addr, int(iport), desc,
                               _expiry(int(stamp), written, now)))
        except ValueError:
            log.debug("lease line not understood: %r", line)
    return out


def parse_leases6(text: str, written: float, now: float) -> list[Mapping]:
    """IPv6 pinholes: 'TCP;2001:db8::2;8080;(null);0;1;1795400000;description' (protocol,
    internal address and port, remote host and port, miniupnpd's id, end, description)."""
    out = []
    for line in text.splitlines():
        parts = line.split(";", 7)
        if len(parts) < 8:
            continue
        proto, addr, iport, _rhost, _rport, uid, stamp, desc = parts
        try:
            out.append(Mapping(6, proto.lower(), int(iport), addr, int(iport), desc,
                               _expiry(int(stamp), written, now), int(uid)))
        except ValueError:
            log.debug("lease6 line not understood: %r", line)
    return out


def config_text(*, wan: str, bridge: str, http_port: int, lease4: Path, lease6: Path, uuid_text: str,
                keep_off: list[tuple[str, int, int]], pool: str, min_lifetime: int, max_lifetime: int) -> str:
    """miniupnpd.conf. `keep_off`: (protocol, first, last) of the WAN ports that are not
    miniupnpd's to give (the household's forwards, the router's own)."""
    lines = [
        "# written by the Homework controller at each start of miniupnpd; edits are lost",
        f"ext_ifname={wan}",
        # miniupnpd keeps these in reverse: its own interface comes first, so its addresses
        # are the ones control points are given (IPv4 and IPv6)
        f"listening_ip={bridge}",
        f"listening_ip={LISTEN_IF}",
        f"http_port={http_port}",
        "enable_upnp=yes",
        "enable_natpmp=yes",
        "secure_mode=yes",
        "system_uptime=yes",
        "notify_interval=60",
        "clean_ruleset_interval=600",
        f"upnp_table_name={ROUTER_TABLE}",
        f"upnp_nat_table_name={TABLE}",
        f"upnp_forward_chain={UPNP_FILTER_CHAIN}",
        f"upnp_nat_chain={UPNP_NAT_CHAIN}",
        f"upnp_nat_postrouting_chain={UPNP_POST_CHAIN}",
        f"lease_file={lease4}",
        f"lease_file6={lease6}",
        f"min_lifetime={min_lifetime}",
        f"max_lifetime={max_lifetime}",
        f"uuid={uuid_text}",
        "friendly_name=Homework router",
        "manufacturer_name=Homework",
        "model_name=Homework router",
        "presentation_url=",
    ]
    # first match wins (upnppermissions.c): the ports that are not miniupnpd's, then the
    # pool's devices for ports >= 1024 (the gate already let only allowed devices ask)
    for _proto, first, last in sorted(set(keep_off)):
        ports = str(first) if first == last else f"{first}-{last}"
        lines.append(f"deny {ports} 0.0.0.0/0 1-65535")
    lines.append(f"allow {LOWEST_PORT}-65535 {pool} 1-65535")
    lines.append("deny 0-65535 0.0.0.0/0 0-65535")
    return "\n".join(lines) + "\n"


def run(argv: list[str], text: str | None = None) -> tuple[int, str]:
    try:
        res = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, str(exc)
    return res.returncode, res.stdout + res.stderr


def ensure_listen_interface(address: str, prefixlen: int) -> str:
    """The veth miniupnpd listens on, with `address` (no route: the prefix only tells
    miniupnpd which clients are the LAN's). '' when done, else why not."""
    if run(["ip", "link", "show", "dev", LISTEN_IF])[0] != 0:
        rc, out = run(["ip", "link", "add", LISTEN_IF, "type", "veth", "peer", "name", LISTEN_PEER])
        if rc != 0:
            return f"cannot make {LISTEN_IF}: {out.strip()}"
    run(["sysctl", "-q", "-w", f"net.ipv6.conf.{LISTEN_PEER}.disable_ipv6=1"])
    run(["sysctl", "-q", "-w", f"net.ipv6.conf.{LISTEN_IF}.disable_ipv6=0"])
    rc, out = run(["ip", "addr", "replace", f"{address}/{prefixlen}", "dev", LISTEN_IF, "noprefixroute"])
    if rc != 0:
        return f"cannot give {LISTEN_IF} {address}: {out.strip()}"
    # IPv6 may be off on this kernel: then miniupnpd serves IPv4 only
    run(["ip", "addr", "replace", f"{ADDRESS6}/128", "dev", LISTEN_IF, "nodad"])
    for ifname in (LISTEN_IF, LISTEN_PEER):
        run(["ip", "link", "set", ifname, "up"])
    return ""


def remove_listen_interface() -> None:
    run(["ip", "link", "del", LISTEN_IF])


def flush_chains() -> None:
    """miniupnpd's rules go (it leaves them when it stops)."""
    run(["nft", "-f", "-"], f"flush chain inet {TABLE} {UPNP_NAT_CHAIN}\n"
                            f"flush chain inet {TABLE} {UPNP_POST_CHAIN}\n"
                            f"flush chain inet {ROUTER_TABLE} {UPNP_FILTER_CHAIN}\n")


def stable_uuid(path: Path) -> str:
    """The IGD's UUID, made once (control points remember gateways by it)."""
    try:
        text = path.read_text().strip()
        return str(uuid.UUID(text))
    except (OSError, ValueError):
        text = str(uuid.uuid4())
        try:
            path.write_text(text + "\n")
        except OSError as exc:
            log.warning("cannot keep the UPnP UUID in %s: %s", path, exc)
        return text


# -- miniupnpd's rules in nftables --------------------------------------------------------------
CHAINS = ((TABLE, UPNP_NAT_CHAIN), (TABLE, UPNP_POST_CHAIN), (ROUTER_TABLE, UPNP_FILTER_CHAIN))
PROTO_NAMES = {6: "tcp", 17: "udp", 136: "udplite"}
LABEL = re.compile(r"pinhole-(\d+) ts-(\d+): ?(.*)")


@dataclass(frozen=True)
class Rule:
    """One of miniupnpd's rules, as `nft -j` shows it."""
    table: str
    chain: str
    handle: int
    family: int          # 4 or 6
    address: str         # the device's address it concerns (DNAT target, destination, PEER source)
    port: int            # the destination port it matches (external for a DNAT, the device's otherwise)
    protocol: str
    to_port: int = 0     # a DNAT's port on the device


def parse_rules(table: str, chain: str, text: str) -> list[Rule]:
    """miniupnpd writes raw payload matches (@nh,128,32 and the like); read them back."""
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    out = []
    for item in doc.get("nftables", []):
        rule = item.get("rule")
        if not rule:
            continue
        family, address, port, proto, to_port = 0, "", 0, "", 0
        for expr in rule.get("expr", []):
            match, dnat = expr.get("match"), expr.get("dnat")
            if dnat:
                family, address, to_port = 4, str(dnat.get("addr", "")), int(dnat.get("port") or 0)
            if not match:
                continue
            left, right = match.get("left", {}), match.get("right")
            payload = left.get("payload", {}) if isinstance(left, dict) else {}
            if payload.get("field") == "dport":
                port = int(right)
            elif payload.get("base") == "nh":
                where = (payload.get("offset"), payload.get("len"))
                if where in ((72, 8), (48, 8)):            # IPv4 protocol, IPv6 next header
                    proto = PROTO_NAMES.get(int(right), str(right))
                elif where in ((128, 32), (96, 32)) and not address:   # IPv4 destination, source (PEER)
                    family, address = 4, str(ipaddress.IPv4Address(int(right)))
                elif where == (192, 128):                 # IPv6 destination
                    family, address = 6, str(ipaddress.IPv6Address(int(str(right), 16)))
        if family:
            out.append(Rule(table, chain, int(rule["handle"]), family, address, port, proto, to_port))
    return out


def parse_labels(text: str) -> dict[int, str]:
    """handle -> the rule's userdata, from `nft --debug=netlink list chain` (miniupnpd keeps
    each pinhole's id, end and description there, as raw userdata nft does not print)."""
    labels, handle = {}, None
    for line in text.splitlines():
        head = re.match(r"^\S+ \S+ \S+ (\d+)( \d+)?$", line)
        if head:
            handle = int(head.group(1))
            continue
        m = re.match(r"^\s*userdata = \{ (.*) \}$", line)
        if m and handle is not None:
            labels[handle] = m.group(1)
    return labels


def pinholes(rules: list[Rule], labels: dict[int, str], boot: float) -> list[Mapping]:
    """IPv6 pinholes from the filter rules. miniupnpd 2.3.1's lease file keeps only the
    last pinhole of each address (it removes by address), so its rules are the record;
    their labels' end is on its monotonic clock (`boot` = time.time() - time.monotonic())."""
    out = []
    for r in rules:
        if r.family != 6 or r.chain != UPNP_FILTER_CHAIN:
            continue
        m = LABEL.match(labels.get(r.handle, ""))
        uid, end, desc = (int(m.group(1)), int(m.group(2)), m.group(3)) if m else (0, 0, "")
        out.append(Mapping(6, r.protocol, r.port, r.address, r.port, desc, boot + end if end else 0.0, uid,
                           handles=((r.table, r.chain, r.handle),)))
    return out


def with_handles(m: Mapping, rules: list[Rule]) -> Mapping:
    """A lease file's IPv4 mapping with the rules that make it (DNAT, filter, PEER)."""
    handles = []
    for r in rules:
        if r.family != 4 or r.address != m.address or (r.protocol and r.protocol != m.protocol):
            continue
        if (r.chain == UPNP_NAT_CHAIN and r.port == m.port) or (r.chain == UPNP_FILTER_CHAIN and r.port == m.to_port) \
                or r.chain == UPNP_POST_CHAIN:
            handles.append((r.table, r.chain, r.handle))
    return Mapping(m.family, m.protocol, m.port, m.address, m.to_port, m.description, m.expires, m.uid,
                   handles=tuple(handles))


def listening(port: int) -> bool:
    """Whether a TCP socket of this network namespace listens on `port` (any address)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


class Miniupnpd:
    """Starts, restarts and stops the daemon; reads its mappings; ends some of them."""

    CACHE_SECONDS = 1.0

    def __init__(self, run_dir: Path, write_config: Callable[[], str], binary: str = BINARY):
        self.run_dir = run_dir
        self.conf = run_dir / "miniupnpd.conf"
        self.pidfile = run_dir / "miniupnpd.pid"
        self.lease4 = run_dir / "upnp.leases"
        self.lease6 = run_dir / "upnp6.leases"
        self.write_config = write_config     # () -> the config text of now
        self.binary = binary
        self.proc: subprocess.Popen | None = None
        self.lock = threading.RLock()
        self.starts = 0
        self.error = ""
        self._cache: tuple[float, list[Mapping]] | None = None

    @staticmethod
    def available(binary: str = BINARY) -> bool:
        return os.access(binary, os.X_OK)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> bool:
        """Its rules stay in nftables while it is stopped; at start it reads them back,
        and its lease file, so every mapping still wanted lives on."""
        with self.lock:
            if self.running():
                return True
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._end_stale()
            text = self.write_config()
            self.conf.write_text(text)
            try:
                self.proc = subprocess.Popen([self.binary, "-f", str(self.conf), "-d"], stdin=subprocess.DEVNULL,
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                             start_new_session=True)
            except OSError as exc:
                self.error = f"miniupnpd did not start: {exc}"
                log.error("%s", self.error)
                return False
            self.pidfile.write_text(f"{self.proc.pid}\n")
            self.starts += 1
            self.error = ""
            self._cache = None
            threading.Thread(target=self._relay_log, args=(self.proc,), daemon=True, name="miniupnpd-log").start()
            port = re.search(r"^http_port=(\d+)$", text, re.M)
            if port and not self._wait_listening(int(port.group(1))):
                log.warning("miniupnpd (pid %d) is not listening on port %s after %.0f s", self.proc.pid,
                            port.group(1), READY_WITHIN)
            return True

    def _wait_listening(self, port: int) -> bool:
        """Until the daemon listens (it opens its HTTP socket with its SSDP and NAT-PMP ones):
        a change the household made (a device allowed) is in force when the command returns,
        not a moment later when a device's discovery has already found nothing. In the
        reach worker, never on the event loop."""
        deadline = time.monotonic() + READY_WITHIN
        while time.monotonic() < deadline:
            if listening(port):
                return True
            if self.proc is None or self.proc.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def _end_stale(self) -> None:
        """A miniupnpd of an earlier controller (killed without stopping it) goes first: two
        would fight over the ports and the rules."""
        try:
            pid = int(self.pidfile.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return
        if cmdline and os.path.basename(cmdline[0]) == b"miniupnpd" and str(self.conf).encode() in cmdline:
            log.info("stopping the miniupnpd an earlier controller left (pid %d)", pid)
            try:
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    if not Path(f"/proc/{pid}").exists():
                        break
                    time.sleep(0.05)
            except OSError:
                pass

    def stop(self) -> None:
        with self.lock:
            proc, self.proc = self.proc, None
            if proc is None:
                return
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
            self.pidfile.unlink(missing_ok=True)

    def remove(self, drop: Callable[[Mapping], bool]) -> list[Mapping]:
        """End the mappings `drop` says: stop miniupnpd, delete their rules and lease
        lines, start it again (it reads back the rest). Returns the mappings ended."""
        with self.lock:
            self.stop()
            gone = [m for m in self.mappings(fresh=True) if drop(m)]
            handles = sorted({h for m in gone for h in m.handles})
            if handles:
                rc, out = run(["nft", "-f", "-"], "".join(f"delete rule inet {t} {c} handle {h}\n"
                                                          for t, c, h in handles))
                if rc != 0:
                    log.error("removing UPnP rules failed: %s", out.strip()[:300])
            keys = {m.key for m in gone}
            self._filter_lease_file(self.lease4, lambda line: any(m.key in keys for m in parse_leases(line, 0, 0)))
            self._filter_lease_file(self.lease6, lambda line: any(m.key in keys for m in parse_leases6(line, 0, 0)))
            self.start()
            return gone

    def mappings(self, now: float | None = None, fresh: bool = False) -> list[Mapping]:
        """Every mapping that exists now (not expired): IPv4 ones from the lease file with
        their rules, IPv6 pinholes from the rules."""
        now = time.time() if now is None else now
        if not fresh and self._cache is not None and time.monotonic() - self._cache[0] < self.CACHE_SECONDS:
            return [m for m in self._cache[1] if not m.expires or m.expires > now]
        rules: list[Rule] = []
        labels: dict[int, str] = {}
        for table, chain in CHAINS:
            rc, out = run(["nft", "-j", "-a", "list", "chain", "inet", table, chain])
            if rc == 0:
                rules += parse_rules(table, chain, out)
        if any(r.family == 6 for r in rules):
            rc, out = run(["nft", "--debug=netlink", "list", "chain", "inet", ROUTER_TABLE, UPNP_FILTER_CHAIN])
            labels = parse_labels(out) if rc == 0 else {}
        try:
            text, written = self.lease4.read_text(), self.lease4.stat().st_mtime
        except OSError:
            text, written = "", now
        found = [with_handles(m, rules) for m in parse_leases(text, written, now)]
        found += pinholes(rules, labels, time.time() - time.monotonic())
        self._cache = (time.monotonic(), found)
        return [m for m in found if not m.expires or m.expires > now]

    @staticmethod
    def _filter_lease_file(path: Path, drop: Callable[[str], bool]) -> None:
        try:
            lines = path.read_text().splitlines()
        except OSError:
            return
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line in lines if not drop(line)))
        os.replace(tmp, path)

    def _relay_log(self, proc: subprocess.Popen) -> None:
        """Its stderr into the controller's log: what it refuses or cannot do as warnings,
        mappings made or removed as info, its chatter at debug."""
        for line in proc.stdout or ():
            line = line.strip()
            if not line:
                continue
            low = line.lower()
            if "try_sendto" in low or "sendto(" in low:
                log.debug("miniupnpd: %s", line)       # multicast notifies on a link with no one
            elif any(w in low for w in ("error", "failed", "impossible", "reserved", "cannot", "can't")):
                log.warning("miniupnpd: %s", line)
            elif any(w in low for w in ("addportmapping", "deleteportmapping", "addpinhole", "deletepinhole",
                                        "redirecting port", "added mapping", "removing", "expired")):
                log.info("miniupnpd: %s", line)
            else:
                log.debug("miniupnpd: %s", line)
        code = proc.wait()
        if self.proc is proc:
            self.error = f"miniupnpd exited with status {code}"
            log.error("%s; it is started again at the next check", self.error)
