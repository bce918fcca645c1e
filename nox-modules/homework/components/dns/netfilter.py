"""The router's Linux side of interception: an nftables table of our own that sends every
port-53 packet arriving from the bridge to homework-dnsd (DNAT to its address on `lo`, so
dnsd's replies leave from that address and conntrack turns them back into replies "from"
whatever address the device asked), and sends port 80 of pending devices to the captive
"waiting for approval" page. Applied in batches by one worker (`nft -f -`)."""
from __future__ import annotations

import logging
import subprocess
import threading

from ...counters import Counters
from ...worker import BatchWorker

log = logging.getLogger("homework.dns.net")

TABLE = "homework_dns"
CAPTIVE_PORT = 8088   # not 80: the Guest Board's lighttpd holds *:80 (redirect to HTTPS)


def ruleset(bridge: str, listen_addr: str, listen_port: int, listen6: tuple[str, int] | None = None,
            dot: tuple[str, int] | None = None, dot6: tuple[str, int] | None = None) -> str:
    """`listen6`: dnsd's IPv6 address and port, when devices have IPv6 (their port 53
    over IPv6 goes there; without it the router drops it, scripts/router-net.sh).
    `dot`, `dot6`: dnsd's DNS over TLS; a device's TCP 853 to any of the router's own
    addresses (its gateway, whatever address it was told) goes there, keeping its source
    address, which names the device. 853 to anywhere else is the switch's business (a
    restricted device's is dropped: component.py)."""
    v6 = (f"""
    iifname "{bridge}" meta nfproto ipv6 meta l4proto {{ udp, tcp }} th dport 53 dnat ip6 to [{listen6[0]}]:{listen6[1]}"""
          if listen6 else "")
    if dot:
        v6 += f"""
    iifname "{bridge}" meta nfproto ipv4 tcp dport 853 fib daddr type local dnat ip to {dot[0]}:{dot[1]}"""
    if dot6:
        v6 += f"""
    iifname "{bridge}" meta nfproto ipv6 tcp dport 853 fib daddr type local dnat ip6 to [{dot6[0]}]:{dot6[1]}"""
    return f"""table inet {TABLE}
delete table inet {TABLE}
table inet {TABLE} {{
  set captive4 {{ type ipv4_addr; }}
  chain prerouting {{
    type nat hook prerouting priority dstnat; policy accept;
    iifname "{bridge}" meta nfproto ipv4 meta l4proto {{ udp, tcp }} th dport 53 dnat ip to {listen_addr}:{listen_port}{v6}
    iifname "{bridge}" ip saddr @captive4 tcp dport 80 dnat ip to {listen_addr}:{CAPTIVE_PORT}
  }}
}}
"""


def split_host_port(value: str) -> tuple[str, int]:
    """'169.254.53.53:5300' or '[fd00:53::53]:5300' -> (address, port)."""
    addr, _, port = value.rpartition(":")
    return addr.strip("[]"), int(port)


class DnsNet:
    """Keeps the nftables captive set equal to the controller's wish. Every batch writes
    the whole set in one nft transaction (flush + add), so a failed or partial batch can
    never leave it wrong: the next attempt rewrites it all. A failure is counted and
    retried after RETRY_SECONDS until it succeeds (a flood once left 730 changes
    unapplied). The set holds pending devices only, which the device registry caps."""

    RETRY_SECONDS = 2.0

    def __init__(self, bridge: str, listen: str, count=None, listen6: str = "", dot: str = "", dot6: str = ""):
        self.bridge = bridge
        self.addr, self.port = split_host_port(listen)
        self.listen6 = split_host_port(listen6) if listen6 else None
        self.dot = split_host_port(dot) if dot else None
        self.dot6 = split_host_port(dot6) if dot6 else None
        self._wanted: set[str] = set()
        self._lock = threading.Lock()
        self.counters = None if count else Counters()     # own registry only when used alone (tests)
        self.count = count or self.counters.count
        self._nft = BatchWorker("dns-nft", self._apply)

    def setup(self) -> None:
        """Install the table and dnsd's address (idempotent; replaces an old table)."""
        res = subprocess.run(["ip", "addr", "replace", f"{self.addr}/32", "dev", "lo"],
                             capture_output=True, text=True, timeout=10)
        if res.returncode != 0:
            log.error("cannot add %s to lo: %s", self.addr, res.stderr.strip())
        for addr in {a for a, _ in filter(None, (self.listen6, self.dot6))}:
            res = subprocess.run(["ip", "addr", "replace", f"{addr}/128", "dev", "lo", "nodad"],
                                 capture_output=True, text=True, timeout=10)
            if res.returncode != 0:
                log.error("cannot add %s to lo: %s", addr, res.stderr.strip())
        res = subprocess.run(["nft", "-f", "-"], input=ruleset(self.bridge, self.addr, self.port, self.listen6,
                                                                self.dot, self.dot6),
                             capture_output=True, text=True, timeout=10)
        if res.returncode != 0:
            log.error("nftables interception rules failed: %s", res.stderr.strip())
        else:
            log.info("port 53 from %s -> homework-dnsd %s:%d", self.bridge, self.addr, self.port)

    def captive(self, ip: str, on: bool) -> None:
        with self._lock:
            (self._wanted.add if on else self._wanted.discard)(ip)
        self._nft.put(ip)

    def flush(self) -> None:
        self._nft.flush()

    def script(self) -> str:
        """The nft transaction that makes the set what we want."""
        with self._lock:
            wanted = sorted(self._wanted)
        lines = [f"flush set inet {TABLE} captive4"]
        if wanted:
            lines.append(f"add element inet {TABLE} captive4 {{ {', '.join(wanted)} }}")
        return "\n".join(lines) + "\n"

    def _apply(self, _changed: list[str]) -> None:
        self.count("dns.nft_batches")
        try:
            res = subprocess.run(["nft", "-f", "-"], input=self.script(), capture_output=True,
                                 text=True, timeout=10)
            failed = res.returncode != 0
            why = res.stderr.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            failed, why = True, str(exc)
        if failed:
            self.count("dns.nft_failures")
            log.error("captive set update failed (retrying in %.0f s): %s", self.RETRY_SECONDS, why)
            threading.Timer(self.RETRY_SECONDS, self._nft.put, args=("retry",)).start()


class FakeDnsNet:
    """Unit tests: remembers what would be in the captive set."""

    def __init__(self, *args, **kw):
        self.captive_ips: set[str] = set()
        self.set_up = False

    def setup(self) -> None:
        self.set_up = True

    def captive(self, ip: str, on: bool) -> None:
        (self.captive_ips.add if on else self.captive_ips.discard)(ip)
