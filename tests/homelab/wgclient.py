"""A WireGuard client for the tests and the bench: Debian's wireguard-go in a namespace
(the internet's, for a device away from home), set up from the configuration file the
router made, as the WireGuard apps would (its keys, addresses and peer; `wg setconf`
takes all but the Address and DNS lines, which the apps apply themselves)."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from . import sh

UAPI_DIR = Path("/var/run/wireguard")


def parse(text: str) -> dict:
    """The file's Address and DNS values, and the rest as `wg setconf` takes it."""
    addresses, dns, rest = [], [], []
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        key = key.strip().lower()
        if sep and key == "address":
            addresses += [a.strip() for a in value.split(",") if a.strip()]
        elif sep and key == "dns":
            dns += [a.strip() for a in value.split(",") if a.strip()]
        else:
            rest.append(line)
    return {"addresses": addresses, "dns": dns, "wg": "\n".join(rest) + "\n"}


class WgClient:
    def __init__(self, ns: str, ifname: str, workdir: Path):
        self.ns, self.ifname, self.dir = ns, ifname, workdir
        self.proc: subprocess.Popen | None = None
        self.conf: dict = {}

    def run(self, cmd, check: bool = True, input: str | None = None, timeout: float = 30):
        """A command in the client's namespace (a list, or one string for sh -c)."""
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return sh(["ip", "netns", "exec", self.ns, *argv], check=check, input=input, timeout=timeout)

    def up(self, text: str, routes: list[str]) -> WgClient:
        """wireguard-go with the file's configuration; `routes`: what goes through the
        tunnel (the app's AllowedIPs 0.0.0.0/0 would take the whole namespace, the emulated
        internet itself)."""
        self.conf = parse(text)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, "wireguard-go", "-f", self.ifname],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "WG_PROCESS_FOREGROUND": "1"}, start_new_session=True)
        deadline = time.monotonic() + 10
        while not (UAPI_DIR / f"{self.ifname}.sock").exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("wireguard-go did not start for the client")
            time.sleep(0.05)
        wgconf = self.dir / f"{self.ifname}.conf"
        wgconf.write_text(self.conf["wg"])
        wgconf.chmod(0o600)
        self.run(["wg", "setconf", self.ifname, str(wgconf)])
        for address in self.conf["addresses"]:
            self.run(["ip", "addr", "add", address, "dev", self.ifname, *(["nodad"] if ":" in address else [])])
        self.run(["ip", "link", "set", self.ifname, "mtu", "1420", "up"])
        for route in routes:
            self.run(["ip", "route", "replace", route, "dev", self.ifname])
        return self

    @property
    def address4(self) -> str:
        return next(a.split("/")[0] for a in self.conf["addresses"] if ":" not in a)

    @property
    def address6(self) -> str | None:
        return next((a.split("/")[0] for a in self.conf["addresses"] if ":" in a), None)

    def handshake(self) -> float:
        out = self.run(["wg", "show", self.ifname, "latest-handshakes"], check=False).stdout.split()
        return float(out[1]) if len(out) >= 2 else 0.0

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None
