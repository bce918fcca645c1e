"""Latency under load, shared by tests/e2e/test_qos_latency.py and
scripts/bench_qos.py: a bulk device saturating the WAN both ways with iperf3, RTTs of
another device by ping, the time of a small HTTP transfer. Everything runs in the
homelab's namespaces; servers in the internet namespace are stopped by PID."""
from __future__ import annotations

import re
import statistics
import subprocess
import threading
import time

from . import WEB_ADDR, Device, Home, _kill_pid
from .isp_link import start_iperf3, stop_process

_RTT = re.compile(r"time=([0-9.]+) ms")
# "[SUM]   3.00-4.00   sec  2.27 MBytes  19071 Kbits/sec ..." (iperf3 -f k)
_INTERVAL = re.compile(r"^\[[ SUM0-9]+\]\s+[0-9.]+-[0-9.]+\s+sec\s+[0-9.]+ \w?Bytes\s+([0-9.]+) Kbits/sec")


def ping_rtts(dev: Device, addr: str = WEB_ADDR, seconds: float = 4, interval: float = 0.1) -> list[float]:
    """RTTs in ms of `seconds` worth of pings every `interval` (lost ones are left out)."""
    count = max(1, int(seconds / interval))
    out = dev.run(["ping", "-n", "-i", str(interval), "-c", str(count), "-W", "3", addr],
                  check=False, timeout=seconds + 20).stdout
    return [float(x) for x in _RTT.findall(out)]


def http_seconds(dev: Device, url: str = f"http://{WEB_ADDR}/") -> float | None:
    """Time of one small HTTP GET (a new connection: handshake, request, reply)."""
    r = dev.run(["curl", "-s", "-o", "/dev/null", "--max-time", "20", "-w", "%{time_total}", url],
                check=False, timeout=30)
    return float(r.stdout) if r.returncode == 0 and r.stdout else None


def percentile(values: list[float], p: float) -> float | None:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else None


class BulkLoad:
    """One device saturating the link down AND up for `seconds`: two iperf3 clients of
    `streams` TCP connections each (-R for the download), two servers in the internet
    namespace. Each 1 s interval report is stamped with the time it arrived (a loaded
    machine may start iperf3 seconds late), so window() gives the rates over any part of
    the run and one load can span several phases of a test."""

    def __init__(self, home: Home, dev: Device, seconds: float, streams: int = 8,
                 addr: str = WEB_ADDR, ports: tuple[int, int] = (5201, 5202)):
        self.home, self.dev, self.seconds, self.streams = home, dev, int(seconds), streams
        self.addr, self.ports = addr, ports
        self._servers: list[subprocess.Popen] = []
        self._clients: dict[str, subprocess.Popen] = {}
        self._readers: list[threading.Thread] = []
        self.intervals: dict[str, list[tuple[float, float]]] = {"up": [], "down": []}  # (end, kbit/s)
        self.totals: dict[str, float | None] = {"up": None, "down": None}   # receiver's mean kbit/s
        self.started = 0.0

    def __enter__(self) -> BulkLoad:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        for port in self.ports:
            self._servers.append(start_iperf3(self.home, port, self.addr))
        for port in self.ports:
            _wait_listening(self.home, self.addr, port)
        self.started = time.monotonic()
        for direction, port in zip(("up", "down"), self.ports, strict=True):
            cmd = ["iperf3", "-c", self.addr, "-p", str(port), "-P", str(self.streams), "-t", str(self.seconds),
                   "-i", "1", "-f", "k", "--forceflush"] + (["-R"] if direction == "down" else [])
            proc = self.dev.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL, text=True)
            self._clients[direction] = proc
            reader = threading.Thread(target=self._read, args=(direction, proc), daemon=True)
            reader.start()
            self._readers.append(reader)

    def _read(self, direction: str, proc: subprocess.Popen) -> None:
        # With several streams the [SUM] lines are the device's total; with one, its own line.
        tag = "[SUM]" if self.streams > 1 else "[  "
        for line in proc.stdout:
            m = _INTERVAL.match(line)
            if not m or not line.startswith(tag):
                continue
            kbit = float(m.group(1))
            if "receiver" in line:
                self.totals[direction] = kbit
            elif "sender" not in line:
                self.intervals[direction].append((time.monotonic() - self.started, kbit))

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def wait(self) -> None:
        """Until both clients have finished (and their summaries are read)."""
        for proc in self._clients.values():
            proc.wait(timeout=self.seconds + 30)
        for reader in self._readers:
            reader.join(10)

    def running(self) -> bool:
        """Whether both clients are still moving data (the load is still on)."""
        return bool(self._clients) and all(proc.poll() is None for proc in self._clients.values())

    def finish(self) -> None:
        """End the load now (a test that has measured what it needs): the clients go and
        the intervals so far are read to the end."""
        self.stop()
        for reader in self._readers:
            reader.join(10)

    def window(self, start: float, end: float, average=statistics.fmean) -> dict[str, float | None]:
        """kbit/s per direction of the 1 s intervals that lay between `start` and `end`
        seconds after start(): their mean (the throughput), or with
        average=statistics.median the typical second, which one burst does not move (after
        a loss the receiver hands the application a retransmission's backlog of in-order
        data at once, one interval above the line rate)."""
        rates = {}
        for direction, series in self.intervals.items():
            inside = [kbit for t, kbit in series if t - 1 >= start - 0.2 and t <= end + 0.2]
            rates[direction] = average(inside) if inside else None
        return rates

    def total(self) -> dict[str, float | None]:
        """Mean kbit/s per direction over the whole run, as the receiver counted it."""
        self.wait()
        return dict(self.totals)

    def stop(self) -> None:
        for proc in self._clients.values():
            if proc.poll() is None:
                _kill_pid(proc.pid, 3)
            if proc in self.home._procs:     # reaped: teardown must not signal a reused PID
                self.home._procs.remove(proc)
        for proc in self._servers:
            stop_process(self.home, proc)
        self._servers.clear()


def _wait_listening(home: Home, addr: str, port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not home.internet(["ss", "-Hltn", f"src {addr}:{port}"]).stdout.strip():
        if time.monotonic() > deadline:
            raise RuntimeError(f"iperf3 server on {addr}:{port} did not start")
        time.sleep(0.05)
