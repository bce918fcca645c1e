"""A unix datagram socket standing in for hostapd's control socket (monitors, events)."""
import os
import socket
import threading


class FakeHostapd:
    """Answers ATTACH/DETACH like hostapd's control interface and sends events to monitors."""

    def __init__(self, path):
        self.path = str(path)
        self.monitors = set()
        self.probe_monitors = set()
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.05)
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                data, addr = self.sock.recvfrom(4096)
            except (TimeoutError, OSError):
                continue
            self.requests.append(data)
            if data in (b"ATTACH", b"ATTACH probe_rx_events=1"):
                self.monitors.add(addr)
                self.probe_monitors.discard(addr)
                if data.endswith(b"probe_rx_events=1"):     # hostapd: probe events only for monitors asking
                    self.probe_monitors.add(addr)
            elif data == b"DETACH":
                self.monitors.discard(addr)
                self.probe_monitors.discard(addr)
            self._send(b"OK\n", addr)

    def _send(self, data, addr):
        try:
            self.sock.sendto(data, addr)
        except OSError:             # the monitor closed its socket (hostapd counts and drops it)
            self.monitors.discard(addr)
            self.probe_monitors.discard(addr)

    def send(self, text):
        probe = "RX-PROBE-REQUEST" in text
        for addr in list(self.probe_monitors if probe else self.monitors):
            self._send(text.encode(), addr)

    def stop(self):
        self.running = False
        self.thread.join(2)
        self.sock.close()
        os.unlink(self.path)
