"""What crosses an interface of the emulated home, captured with tcpdump:

    with Sniffer(home.router_ns, "wan0", "port 53 or port 853") as cap:
        ...                                   # traffic
    cap.lines                                 # tcpdump's one line per packet
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time

from . import ns_cmd


class Sniffer:
    def __init__(self, ns: str, iface: str, bpf: str, timeout: float = 10):
        self.ns, self.iface, self.bpf, self.timeout = ns, iface, bpf, timeout
        self.lines: list[str] = []
        fd, self.pcap = tempfile.mkstemp(suffix=".pcap", prefix="homelab-sniff-")
        os.close(fd)

    def __enter__(self) -> Sniffer:
        self.err = open(self.pcap + ".err", "w+")
        self.proc = subprocess.Popen(ns_cmd(self.ns, ["tcpdump", "--immediate-mode", "-i", self.iface, "-n", "-U",
                                                      "-w", self.pcap, self.bpf]),
                                     stdout=subprocess.DEVNULL, stderr=self.err, start_new_session=True)
        deadline = time.monotonic() + self.timeout
        while True:          # capturing once tcpdump says it listens
            self.err.seek(0)
            if "listening on" in self.err.read():
                return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.err.seek(0)
                raise RuntimeError(f"tcpdump did not start on {self.iface}: {self.err.read()[-500:]}")
            time.sleep(0.05)

    def __exit__(self, *exc) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()
        out = subprocess.run(["tcpdump", "-n", "-r", self.pcap], capture_output=True, text=True)
        self.lines = [line for line in out.stdout.splitlines() if line.strip()]
        for path in (self.pcap, self.pcap + ".err"):
            os.unlink(path)

    def port(self, port: int) -> list[str]:
        """Packets from or to `port` (tcpdump writes '... IP A.B.C.D.PORT > E.F.G.H.PORT: ...')."""
        out = []
        for line in self.lines:
            src, _, rest = line.partition(" > ")
            dst = rest.split(": ", 1)[0]
            if src.endswith(f".{port}") or dst.endswith(f".{port}"):
                out.append(line)
        return out
