"""Reaching a device from outside, for the tests, the browser tests' driver and the bench:
a server in a device namespace that says who it is, and a client that reports who
answered (so a test proves it reached *this* device, not merely an open port)."""
from __future__ import annotations

from .routing import PY

# Answers every connection with its name; IPv4 and IPv6 on one socket.
HELLO_SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(("::", int(sys.argv[2]))); s.listen(64)
while True:
    c, _ = s.accept()
    try:
        c.sendall(sys.argv[1].encode() + b"\n")
    except OSError:
        pass
    finally:
        c.close()
"""

HELLO_CLIENT = r"""
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3]))
    c.settimeout(float(sys.argv[3]))
    print(c.recv(100).decode().strip())
except OSError as exc:
    print(f"! {exc}")
"""


def serve_hello(popen, name: str, port: int):
    """Start the server where `popen` starts processes (a Device's popen, the internet's)."""
    return popen([PY, "-c", HELLO_SERVER, name, str(port)])


def hello(run, address: str, port: int, timeout: float = 1.5) -> str:
    """Who answers at address:port from where `run` runs ('' when nobody does)."""
    out = run([PY, "-c", HELLO_CLIENT, address, str(port), str(timeout)], check=False,
              timeout=timeout + 10).stdout.strip()
    return "" if out.startswith("!") else out
