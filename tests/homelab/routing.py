"""Helpers for routing end-to-end tests and the routing benchmark: permitted devices,
TCP probes, a byte stream that records when data last arrived, hwdb queries in the
router namespace. All probes are small Python programs run inside the namespaces
(Debian's /usr/bin/python3), so nothing but the standard library is needed there."""
from __future__ import annotations

import json
import subprocess
import time

from . import REPO, WEB_ADDR, Device, Home

PY = "/usr/bin/python3"

CONNECT = r"""
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])).close()
except OSError as exc:
    print(exc); sys.exit(1)
"""

TCP_SERVER = r"""
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(128)
while True:
    c, _ = s.accept(); c.close()
"""

# Sends chunks forever to whoever connects (paced, so a 2-core machine stays usable).
STREAM_SERVER = r"""
import socket, sys, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(16)
def serve(c):
    chunk = b"x" * 16384
    try:
        while True:
            c.sendall(chunk); time.sleep(0.005)
    except OSError:
        pass
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# Reads the stream; rewrites `path` with the wall-clock time of the last data received.
STREAM_CLIENT = r"""
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
c.settimeout(30)
path = sys.argv[3]
n = 0
while True:
    try:
        data = c.recv(65536)
    except OSError:
        break
    if not data:
        break
    n += len(data)
    with open(path, "w") as fh:
        fh.write(f"{time.time()} {n}\n")
"""


def permitted_device(home: Home, name: str | None = None, client: str = "udhcpc", switch=None,
                     lease_timeout: float = 20) -> Device:
    """A device with a lease, permitted, and able to reach its gateway; `switch`: a
    satellite to plug it into instead of the router."""
    dev = home.add_device(name=name, switch=switch)
    dev.start_dhcp(client)
    dev.wait_for_ipv4(lease_timeout)
    out = home.homework("permit", dev.mac)
    assert out.returncode == 0, out.stderr + out.stdout
    wait_until(lambda: dev.ping(gateway(dev), timeout=1), 10, f"{dev.name} cannot reach its gateway")
    return dev


def pending_device(home: Home, name: str | None = None) -> Device:
    dev = home.add_device(name=name)
    dev.start_udhcpc()
    dev.wait_for_ipv4(20)
    return dev


def gateway(dev: Device) -> str:
    a, b, c, d = dev.ipv4()[0].split(".")
    return f"{a}.{b}.{c}.{int(d) - 1}"


def wait_until(pred, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:       # the last answer says how far it got
            raise AssertionError(f"timed out after {timeout}s: {what} (last: {value!r})")
        time.sleep(interval)


def can_connect(dev: Device, addr: str, port: int, timeout: float = 1.0) -> bool:
    return dev.run([PY, "-c", CONNECT, addr, str(port), str(timeout)], check=False,
                   timeout=timeout + 10).returncode == 0


def curl(dev: Device, url: str, timeout: float = 3, extra: tuple = ()) -> subprocess.CompletedProcess:
    return dev.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", str(timeout), *extra, url],
                   check=False, timeout=timeout + 10)


def router_tcp_server(home: Home, port: int, addr: str = "0.0.0.0") -> subprocess.Popen:
    p = home.router_popen([PY, "-c", TCP_SERVER, addr, str(port)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    wait_until(lambda: home.router(["ss", "-Hltn", f"sport = :{port}"]).stdout.strip(), 10,
               f"router listener on {port}")
    return p


def internet_stream_server(home: Home, port: int) -> subprocess.Popen:
    p = home.internet_popen([PY, "-c", STREAM_SERVER, WEB_ADDR, str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_until(lambda: home.internet(["ss", "-Hltn", f"sport = :{port}"]).stdout.strip(), 10,
               f"stream server on {port}")
    return p


def stream_client(dev: Device, port: int, path) -> subprocess.Popen:
    return dev.popen([PY, "-c", STREAM_CLIENT, WEB_ADDR, str(port), str(path)], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)


def last_rx(path) -> tuple[float, int]:
    try:
        t, n = open(path).read().split()
        return float(t), int(n)
    except (OSError, ValueError):
        return 0.0, 0


HWDB_QUERY = r"""
import json, sys
import hwdb_client
r = hwdb_client.Client("127.0.0.1", int(sys.argv[2]), timeout=5).query(sys.argv[1])
print(json.dumps(r.rows))
"""


def hwdb_query(home: Home, sql: str, port: int = 987) -> list[dict]:
    """Rows of a hwdb select, asked from inside the router namespace."""
    out = home.router(["env", f"PYTHONPATH={REPO / 'hwdb' / 'python'}", PY, "-c", HWDB_QUERY, sql, str(port)])
    return json.loads(out.stdout)


def routing_status(home: Home) -> dict:
    out = home.homework("--json", "call", "routing-status")
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)
