"""The router's Linux side of interception: an nftables table of our own that sends every
port-53 packet arriving from the bridge to homework-dnsd (DNAT to its address on `lo`, so
dnsd's replies leave from that address and conntrack turns them back into replies "from"
whatever address the device asked), and sends the web traffic (ports 80 and 443) of
cut-off devices (pending, denied, paused, at bedtime, over their allowance) to the
router's page saying why, over IPv4 and IPv6. Applied in batches by one worker, through
libnftables in the controller's process (Debian's python3-nftables, the nftables project's
own binding) where it is installed, else `nft -f -`: a command that lets a device in
waits for its set change, and a process for each cost 20 ms, in-process 0.3 ms."""
from __future__ import annotations

import logging
import subprocess
import threading

from ... import nftplan
from ...counters import Counters
from ...worker import BatchWorker, offload

log = logging.getLogger("homework.dns.net")

TABLE = nftplan.DNS.name          # the nftables plan (nftplan.py) names it and its hook
CAPTIVE_PORT = 8088   # not 80: the Guest Board's lighttpd holds *:80 (redirect to HTTPS)
CAPTIVE_TLS_PORT = 8443   # HTTPS of cut-off devices (the RFC 8908 API; any https:// URL gets the page)
# captive6 holds each cut-off device's /64 as its first address, and a source address is
# masked to its /64 to match: a plain hash set. An interval set of /64s made libnftables
# read every member for each change (8 ms a change with a thousand devices, not 0.2 ms).
PREFIX64_MASK = "ffff:ffff:ffff:ffff::"


def ruleset(bridge: str, listen_addr: str, listen_port: int, listen6: tuple[str, int] | None = None,
            dot: tuple[str, int] | None = None, dot6: tuple[str, int] | None = None) -> str:
    """`listen6`: dnsd's IPv6 address and port, when devices have IPv6 (their port 53
    over IPv6 goes there; without it the router drops it, scripts/router-net.sh). The
    captive pages' server listens on the same addresses (CAPTIVE_PORT, CAPTIVE_TLS_PORT):
    a cut-off device's web traffic goes there, over either family.
    `dot`, `dot6`: dnsd's DNS over TLS; a device's TCP 853 to any of the router's own
    addresses (its gateway, whatever address it was told) goes there, keeping its source
    address, which names the device. 853 to anywhere else is the switch's business (a
    restricted device's is dropped: component.py)."""
    dns = "meta l4proto { udp, tcp } th dport 53"
    v6 = ""
    if listen6:
        addr6 = f"[{listen6[0]}]"
        v6 = (f"""
    iifname "{bridge}" meta nfproto ipv6 {dns} dnat ip6 to {addr6}:{listen6[1]}
    iifname "{bridge}" ip6 saddr & {PREFIX64_MASK} @captive6 tcp dport 80 dnat ip6 to {addr6}:{CAPTIVE_PORT}
    iifname "{bridge}" ip6 saddr & {PREFIX64_MASK} @captive6 tcp dport 443 dnat ip6 to {addr6}:{CAPTIVE_TLS_PORT}""")
    if dot:
        v6 += f"""
    iifname "{bridge}" meta nfproto ipv4 tcp dport 853 fib daddr type local dnat ip to {dot[0]}:{dot[1]}"""
    if dot6:
        v6 += f"""
    iifname "{bridge}" meta nfproto ipv6 tcp dport 853 fib daddr type local dnat ip6 to [{dot6[0]}]:{dot6[1]}"""
    family, prerouting = nftplan.DNS.family, nftplan.DNS.chain("prerouting")
    return f"""table {family} {TABLE}
delete table {family} {TABLE}
table {family} {TABLE} {{
  set captive4 {{ type ipv4_addr; }}
  set captive6 {{ type ipv6_addr; }}
  chain {prerouting.name} {{
    {prerouting.header()}
    iifname "{bridge}" meta nfproto ipv4 {dns} dnat ip to {listen_addr}:{listen_port}
    iifname "{bridge}" ip saddr @captive4 tcp dport 80 dnat ip to {listen_addr}:{CAPTIVE_PORT}
    iifname "{bridge}" ip saddr @captive4 tcp dport 443 dnat ip to {listen_addr}:{CAPTIVE_TLS_PORT}{v6}
  }}
}}
"""


_NFT: list = []        # the libnftables context, made on first use ([None]: not installed)


def _library():
    """libnftables (python3-nftables), or None where it is not installed."""
    if not _NFT:
        try:
            import nftables
            _NFT.append(nftables.Nftables())
        except (ImportError, OSError) as exc:
            log.info("no libnftables binding (%s): the captive sets are written with nft -f -", exc)
            _NFT.append(None)
    return _NFT[0]


def run_nft(script: str) -> tuple[bool, str]:
    """One nftables transaction: (applied, why not). In a real OS thread under the
    controller's hub (offload), as a netlink exchange with the kernel may block."""
    lib = _library()
    if lib is not None:
        rc, _out, err = offload(lib.cmd, script)
        return rc == 0, str(err).strip()
    try:
        res = subprocess.run(["nft", "-f", "-"], input=script, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    return res.returncode == 0, res.stderr.strip()


def _set_of(member: str) -> str:
    """Which captive set holds a member: an IPv4 address, or a device's /64 (its first address)."""
    return "captive6" if ":" in member else "captive4"


def split_host_port(value: str) -> tuple[str, int]:
    """'169.254.53.53:5300' or '[fd00:53::53]:5300' -> (address, port)."""
    addr, _, port = value.rpartition(":")
    return addr.strip("[]"), int(port)


class DnsNet:
    """Keeps the nftables captive set equal to the controller's wish. Every batch is one
    nft transaction of the addresses it changed; a failed batch is counted and retried
    after RETRY_SECONDS, writing the whole set (flush + add) until that succeeds, so a
    failed or partial batch can never leave it wrong (a flood once left 730 changes
    unapplied). The sets hold cut-off devices only (their IPv4 address in captive4, their
    /64 in captive6), which the device registry caps."""

    RETRY_SECONDS = 2.0

    def __init__(self, bridge: str, listen: str, count=None, listen6: str = "", dot: str = "", dot6: str = ""):
        self.bridge = bridge
        self.addr, self.port = split_host_port(listen)
        self.listen6 = split_host_port(listen6) if listen6 else None
        self.dot = split_host_port(dot) if dot else None
        self.dot6 = split_host_port(dot6) if dot6 else None
        self._wanted: set[str] = set()
        self._resync = False            # the last batch failed: the next writes the whole set
        self._lock = threading.Lock()
        self.counters: Counters | None = None
        if count is None:               # used alone (tests): a registry of its own
            self.counters = Counters()
            count = self.counters.count
        self.count = count
        # 50 ms for a batch to gather: permitting a list of devices is then a few nft runs
        # rather than one for each (a pending device meets the captive page that much later)
        self._nft = BatchWorker("dns-nft", self._apply, gather=0.05)

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

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every change so far is in the sets (False: `timeout` passed first)."""
        return self._nft.flush(timeout)

    def script(self, changed: list[str] | None = None) -> str:
        """The nft transaction that makes the sets what we want (IPv4 addresses in
        captive4, the first addresses of IPv6 /64s in captive6): the whole sets, or
        (`changed`) only those members, each added or removed (added first, so removing one the set does not hold
        is no error). A crowd of a thousand pending devices wrote the whole set once for
        each of them."""
        with self._lock:
            wanted = set(self._wanted)
        if changed is None:
            lines = []
            for name in ("captive4", "captive6") if self.listen6 else ("captive4",):
                members = sorted(w for w in wanted if _set_of(w) == name)
                lines.append(f"flush set inet {TABLE} {name}")
                if members:
                    lines.append(f"add element inet {TABLE} {name} {{ {', '.join(members)} }}")
            return "\n".join(lines) + "\n"
        lines = []
        for member in sorted(set(changed)):
            name = _set_of(member)
            if name == "captive6" and not self.listen6:
                continue
            lines.append(f"add element inet {TABLE} {name} {{ {member} }}")
            if member not in wanted:
                lines.append(f"delete element inet {TABLE} {name} {{ {member} }}")
        return "\n".join(lines) + "\n"

    def _apply(self, changed: list[str]) -> None:
        """One nftables transaction for the batch: its addresses only, or the whole set after a
        failure (a change that failed must not be lost)."""
        self.count("dns.nft_batches")
        whole = self._resync or "retry" in changed
        applied, why = run_nft(self.script(None if whole else changed))
        failed = not applied
        self._resync = failed
        if failed:
            self.count("dns.nft_failures")
            log.error("captive set update failed (retrying in %.0f s): %s", self.RETRY_SECONDS, why)
            threading.Timer(self.RETRY_SECONDS, self._nft.put, args=("retry",)).start()
