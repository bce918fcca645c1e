"""The router's WireGuard interface: the kernel's (the image's kernel has the module) or
Debian's wireguard-go over TUN (this dev kernel has none), made in the router's namespace,
so its UDP socket listens on the WAN, then handed to the away namespace (away.py). Peers
and their endpoints are set and read with `wg` inside that namespace."""
from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .away import Away, kill_pidfile, run

log = logging.getLogger("homework.remote.tunnel")
UAPI_DIR = Path("/var/run/wireguard")     # wireguard-go's control sockets


@dataclass(frozen=True)
class PeerState:
    public_key: str
    endpoint: str           # "203.0.113.7:51000", '' before its first handshake
    latest_handshake: float  # epoch seconds, 0 = never
    rx: int
    tx: int


def parse_dump(text: str) -> dict[str, PeerState]:
    """`wg show IF dump`: the interface's line, then one per peer: public key, preshared
    key, endpoint, allowed ips, latest handshake, rx, tx, keepalive."""
    peers = {}
    for line in text.splitlines()[1:]:
        f = line.split("\t")
        if len(f) < 8:
            continue
        endpoint = "" if f[2] == "(none)" else f[2]
        try:
            peers[f[0]] = PeerState(f[0], endpoint, float(f[4]), int(f[5]), int(f[6]))
        except ValueError:
            continue
    return peers


class Tunnel:
    def __init__(self, ifname: str, backend: str, run_dir: Path):
        self.ifname = ifname
        self.backend = backend            # auto | kernel | wireguard-go
        self.run_dir = run_dir
        self.userspace: subprocess.Popen | None = None
        self.kind = ""                    # what it is once up: kernel | wireguard-go

    def start(self, away: Away, private_key: str, port: int) -> str:
        """Make it, give it the router's key and port, move it into the away namespace.
        '' when done, else why not."""
        run(["ip", "link", "del", self.ifname])           # an earlier run's
        kill_pidfile(self.run_dir / "wireguard-go.pid", "wireguard-go")
        made = ""
        if self.backend in ("auto", "kernel"):
            rc, out = run(["ip", "link", "add", self.ifname, "type", "wireguard"])
            if rc == 0:
                self.kind = "kernel"
            elif self.backend == "kernel":
                return f"the kernel has no WireGuard ({out.strip()})"
        if not self.kind:
            made = self._start_userspace()
            if made:
                return made
            self.kind = "wireguard-go"
        rc, out = run(["wg", "set", self.ifname, "listen-port", str(port), "private-key", "/dev/stdin"], private_key)
        if rc != 0:
            return f"cannot configure {self.ifname}: {out.strip()}"
        why = away.adopt_tunnel(self.ifname)
        if why:
            return why
        log.info("WireGuard %s (%s) on UDP port %d, its clear side in the away namespace", self.ifname,
                 self.kind, port)
        return ""

    def _start_userspace(self) -> str:
        try:
            self.userspace = subprocess.Popen(["wireguard-go", "-f", self.ifname], stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              env={**os.environ, "WG_PROCESS_FOREGROUND": "1"},
                                              start_new_session=True)
        except OSError as exc:
            return f"cannot start wireguard-go: {exc}"
        (self.run_dir / "wireguard-go.pid").write_text(f"{self.userspace.pid}\n")
        sock = UAPI_DIR / f"{self.ifname}.sock"
        for _ in range(500):
            if sock.exists() and run(["ip", "link", "show", "dev", self.ifname])[0] == 0:
                return ""
            if self.userspace.poll() is not None:
                return f"wireguard-go exited with status {self.userspace.returncode}"
            time.sleep(0.01)
        return "wireguard-go did not make its interface"

    def stop(self, away: Away) -> None:
        if self.kind == "kernel" and away.pid:
            away.run("ip", "link", "del", self.ifname)
        if self.userspace is not None:
            self.userspace.terminate()
            try:
                self.userspace.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.userspace.kill()
            self.userspace = None
        (self.run_dir / "wireguard-go.pid").unlink(missing_ok=True)
        self.kind = ""

    def running(self) -> bool:
        return self.kind == "kernel" or (self.userspace is not None and self.userspace.poll() is None)

    def set_peer(self, away: Away, public_key: str, preshared_key: str, allowed: list[str]) -> str:
        rc, out = away.run("wg", "set", self.ifname, "peer", public_key, "preshared-key", "/dev/stdin",
                           "allowed-ips", ",".join(allowed) if allowed else "", text=preshared_key)
        return "" if rc == 0 else f"cannot set a peer of {self.ifname}: {out.strip()}"

    def remove_peer(self, away: Away, public_key: str) -> None:
        away.run("wg", "set", self.ifname, "peer", public_key, "remove")

    def peers(self, away: Away) -> dict[str, PeerState]:
        rc, out = away.run("wg", "show", self.ifname, "dump")
        return parse_dump(out) if rc == 0 else {}
