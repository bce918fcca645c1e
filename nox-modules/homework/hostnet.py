"""The router's own Linux networking: the bridge's LOCAL interface holds the .1 router
address of every live /30. Kept behind a small class so unit tests can use a fake."""
from __future__ import annotations

import logging
import queue
import subprocess
import threading
import time

from .conntrack import ConntrackReader
from .netguard import router_interfaces

log = logging.getLogger(__name__)

LOCAL_MAC_CACHE_SECONDS = 1.0


class HostNet:
    """Address changes are queued and handed by one worker to a long-lived
    `ip -force -batch -` that reads commands from a pipe: a burst of 100 new leases
    costs no process start at all (starting one blocked the whole controller for the
    fork/exec, which under load took milliseconds), and the DHCP reply never waits for
    the kernel. The ip process is let go after IDLE_SECONDS without work, so it never
    holds on to a stale interface index for long.

    Changes are written at most once per window: the first after a quiet spell goes at
    once, those that follow within the window wait for its end and go together. Open
    vSwitch re-reads every interface's addresses and the routing table after each address
    change it hears of (4-9 ms of its CPU each here, with 200 interfaces; more with every
    device's address and /64 route), but once for a batch: a burst of 100 new devices cost
    it 0.9 s one by one and nothing measurable at once. The window starts at
    COALESCE_SECONDS and doubles while changes keep coming, up to COALESCE_MAX_SECONDS: a
    crowd of a thousand devices arriving over ten seconds wrote fifty times a second, each
    write a reload that grew with every address, and Open vSwitch had no time left for
    the devices' frames. A device's address then comes at most a second after its lease
    (its first ARP for the gateway may need its one-second retry); a quiet spell as long
    as the window sends the next change at once and brings the window back to
    COALESCE_SECONDS."""

    IDLE_SECONDS = 5.0
    COALESCE_SECONDS = 0.02
    COALESCE_MAX_SECONDS = 1.0
    IP_BATCH = ("ip", "-force", "-batch", "-")

    def __init__(self, bridge: str):
        self.bridge = bridge
        self._queue: queue.Queue[str] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()
        self._mac: str | None = None
        self._mac_read_at = 0.0
        self.processes_started = 0
        self._proc: subprocess.Popen | None = None    # the running `ip -batch`, if any
        self._written_at = float("-inf")                # monotonic time of the last write
        self._window = self.COALESCE_SECONDS            # how long changes gather before a write
        self.writes = 0
        self._spares: set[str] = set()                  # on the bridge ahead of their lease

    def _enqueue(self, line: str) -> None:
        with self._worker_lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._apply_loop, daemon=True, name="hostnet")
                self._worker.start()
        self._queue.put(line)

    def _apply_loop(self) -> None:
        while True:
            try:
                lines = [self._queue.get(timeout=self.IDLE_SECONDS if self._proc else None)]
            except queue.Empty:
                _close(self._proc)
                self._proc = None
                continue
            since = time.monotonic() - self._written_at
            if since < self._window:      # a write went out just now: gather this window's changes
                time.sleep(self._window - since)
                self._window = min(2 * self._window, self.COALESCE_MAX_SECONDS)
            else:                         # quiet for a whole window: at once, and short windows again
                self._window = self.COALESCE_SECONDS
            while True:
                try:
                    lines.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                for attempt in (1, 2):      # a second try with a fresh process if it died
                    try:
                        if self._proc is None or self._proc.poll() is not None:
                            self._proc = self._start_ip()
                        stdin = self._proc.stdin
                        assert stdin is not None        # stdin=PIPE
                        stdin.write("\n".join(lines) + "\n")
                        stdin.flush()
                        self._written_at = time.monotonic()
                        self.writes += 1
                        break
                    except (BrokenPipeError, OSError, ValueError):
                        _close(self._proc)
                        self._proc = None
                        if attempt == 2:
                            raise
            except Exception:
                log.exception("applying %d address changes failed", len(lines))
            finally:
                for _ in lines:
                    self._queue.task_done()

    def _start_ip(self) -> subprocess.Popen:
        proc = subprocess.Popen(list(self.IP_BATCH), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        self.processes_started += 1
        threading.Thread(target=_log_errors, args=(proc.stderr,), daemon=True, name="hostnet-ip").start()
        return proc

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until queued address changes are handed to ip (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def _ip(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)

    def add_router_address(self, address: str, prefixlen: int = 30) -> bool:
        """Returns whether it took a change (False: a spare was there already)."""
        if address in self._spares:     # already there: a new device costs no change
            self._spares.discard(address)
            return False
        self._enqueue(f"addr replace {address}/{prefixlen} dev {self.bridge}")
        return True

    def remove_router_address(self, address: str, prefixlen: int = 30) -> None:
        self._spares.discard(address)
        self._enqueue(f"addr del {address}/{prefixlen} dev {self.bridge}")

    def reserve_router_addresses(self, addresses, prefixlen: int = 30) -> int:
        """Keep exactly these router addresses on the bridge ahead of their devices (the
        next free blocks): a burst of new devices then takes them without a write. Open
        vSwitch reloads its routing table after every address change it hears of (about
        6 ms of its CPU each with a hundred devices), which in a burst competed with the
        devices' own start. Returns how many changes were queued."""
        wanted = set(addresses)
        changes = 0
        for address in sorted(wanted - self._spares):
            self._enqueue(f"addr replace {address}/{prefixlen} dev {self.bridge}")
            changes += 1
        for address in sorted(self._spares - wanted):
            self._enqueue(f"addr del {address}/{prefixlen} dev {self.bridge}")
            changes += 1
        self._spares = wanted
        return changes

    def spare_router_addresses(self) -> set[str]:
        return set(self._spares)

    def release_spare_router_address(self, address: str, prefixlen: int = 30) -> None:
        """Take a spare off the bridge now (its block went to a client that is not ours
        to route to directly: one behind a relay agent)."""
        if address in self._spares:
            self.remove_router_address(address, prefixlen)

    def add_device_prefix6(self, index: int, prefix: str, router: str, mac: str) -> None:
        """The router's ::1 in the device's /64, and the /64 routed straight to the device's
        MAC: a permanent neighbour stands for the device, so the router never needs
        neighbour discovery towards it (the switch gives a device nothing but its port)."""
        hop = _next_hop6(index)
        self._enqueue(f"addr replace {router}/128 dev {self.bridge} nodad")
        self._enqueue(f"neigh replace {hop} lladdr {mac} dev {self.bridge} nud permanent")
        self._enqueue(f"route replace {prefix} via {hop} dev {self.bridge}")

    def remove_device_prefix6(self, index: int, prefix: str, router: str) -> None:
        hop = _next_hop6(index)
        self._enqueue(f"route del {prefix} dev {self.bridge}")
        self._enqueue(f"neigh del {hop} dev {self.bridge}")
        self._enqueue(f"addr del {router}/128 dev {self.bridge}")

    def router_addresses(self) -> set[str]:
        res = self._ip("-4", "-o", "addr", "show", "dev", self.bridge)
        found = set()
        for line in res.stdout.splitlines():
            parts = line.split()
            if "inet" in parts:
                found.add(parts[parts.index("inet") + 1])
        return found

    def interfaces(self):
        """The router's own addresses and the networks they are on (netguard.py)."""
        return router_interfaces()

    def local_mac(self) -> str | None:
        # Asked for every DHCP reply: read sysfs at most once a second (a bridge that is
        # re-created with another address is noticed that quickly).
        now = time.monotonic()
        if now - self._mac_read_at >= LOCAL_MAC_CACHE_SECONDS or self._mac is None:
            try:
                with open(f"/sys/class/net/{self.bridge}/address") as fh:
                    self._mac = fh.read().strip()
            except OSError:
                self._mac = None
            self._mac_read_at = now
        return self._mac

    def conntrack_reader(self):
        """The kernel's conntrack (per-flow records of NATed traffic), or None without
        the `conntrack` tool."""
        reader = ConntrackReader()
        return reader if reader.available else None


def _next_hop6(index: int) -> str:
    """A link-local stand-in for device `index` (fe80::ff:0:0 + index), never on the wire."""
    return f"fe80::ff:{index >> 16:x}:{index & 0xFFFF:x}"


def _log_errors(stream) -> None:
    for err in stream:
        err = err.strip()
        if err and "Cannot assign" not in err and "Command failed" not in err:
            log.warning("ip: %s", err)


def _close(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=10)
    except Exception:
        proc.kill()
