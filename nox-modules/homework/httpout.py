"""The router's own HTTP(S) requests to household-given URLs (webhooks, blocklists), with
two guarantees urllib does not give:

- a total deadline per request: a timeout on each socket operation lets a receiver that
  sends one byte every few seconds hold a request for ever; here a watchdog shuts the
  socket down when the deadline passes, whatever the request is waiting for (connect,
  TLS handshake, headers, body);
- every connection, redirects included, goes only to an address netguard.Guard let
  through (no loopback, the router's own services or the LAN unless allowed).

Failures raise HttpOutError whose message is in the household's words and says nothing
of what the remote answered (netguard.describe_failure); `.status` keeps the HTTP status
for the caller's own decisions (2xx or not)."""
from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from .netguard import Guard, LocalAddress, describe_failure

MAX_REDIRECTS = 5
CHUNK = 64 * 1024


class HttpOutError(Exception):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class Deadline:
    """Shuts down the request's socket when `seconds` have passed since it was made."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds
        self.expired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        return left

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._sock is not None:
                _shut(self._sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Connection(http.client.HTTPConnection):
    """Connects only to the addresses given (netguard's), under the deadline."""

    def __init__(self, host: str, port: int, addresses: list[tuple], deadline: Deadline):
        super().__init__(host, port, timeout=deadline.left())
        self.addresses = addresses
        self.deadline = deadline

    def _raw(self) -> socket.socket:
        last: OSError | None = None
        for family, sockaddr in self.addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            self.deadline.watch(sock)
            sock.settimeout(self.deadline.left())
            try:
                sock.connect(sockaddr)
                return sock
            except OSError as exc:
                sock.close()
                last = exc
        raise last or OSError("no address")

    def connect(self) -> None:
        self.sock = self._raw()
        self.sock.settimeout(self.deadline.left())


class _TlsConnection(_Connection):
    context = ssl.create_default_context()

    def connect(self) -> None:
        raw = self._raw()
        raw.settimeout(self.deadline.left())
        self.sock = self.context.wrap_socket(raw, server_hostname=self.host)


def _open(url: str, method: str, body: bytes | None, headers: dict, deadline: Deadline, guard: Guard,
          allow_local: bool):
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpOutError("the URL must be http:// or https:// with a host")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = guard.connect_addresses(parts.hostname, port, allow_local)
    cls = _TlsConnection if parts.scheme == "https" else _Connection
    conn = cls(parts.hostname, port, addresses, deadline)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn.request(method, path, body=body, headers=headers)
    return conn, conn.getresponse()


def _request(url: str, method: str, body: bytes | None, headers: dict, seconds: float, guard: Guard,
             allow_local: bool, follow: bool, sink=None) -> int:
    deadline = Deadline(seconds)
    try:
        for _ in range(MAX_REDIRECTS + 1):
            conn, resp = _open(url, method, body, headers, deadline, guard, allow_local)
            try:
                if follow and resp.status in (301, 302, 303, 307, 308) and resp.getheader("Location"):
                    url = urljoin(url, resp.getheader("Location"))
                    continue
                if sink is not None and 200 <= resp.status < 300:
                    sink(resp, deadline)
                return resp.status
            finally:
                conn.close()
        raise HttpOutError("too many redirects")
    except HttpOutError:
        raise
    except LocalAddress as exc:
        raise HttpOutError(describe_failure(exc)) from None
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
        if deadline.expired or isinstance(exc, socket.timeout):
            raise HttpOutError("no answer in time") from None
        raise HttpOutError(describe_failure(exc)) from None
    finally:
        deadline.cancel()


def post(url: str, body: bytes, headers: dict, seconds: float, guard: Guard, allow_local: bool = False) -> int:
    """POST within `seconds` in all; the HTTP status (redirects are not followed)."""
    return _request(url, "POST", body, {**headers, "Content-Length": str(len(body))}, seconds, guard,
                    allow_local, follow=False)


def download(url: str, dest: Path, cap: int, seconds: float, guard: Guard, allow_local: bool = False,
             headers: dict | None = None) -> int:
    """GET into `dest` (at most `cap` bytes) within `seconds` in all, following redirects
    (each one guarded). Returns the byte count; HttpOutError if it was not 2xx, too big, late."""
    got = {"n": 0}

    def sink(resp, deadline: Deadline) -> None:
        length = resp.getheader("Content-Length")
        if length and length.isascii() and length.isdigit() and int(length) > cap:
            raise HttpOutError(f"the file is {int(length):,} bytes, more than the {cap:,} allowed")
        try:
            out = open(dest, "wb")
        except OSError as exc:
            raise HttpOutError(f"the router cannot store the download ({exc.strerror})") from None
        with out:
            while True:
                deadline.left()
                chunk = resp.read1(CHUNK) if hasattr(resp, "read1") else resp.read(CHUNK)
                if not chunk:
                    break
                got["n"] += len(chunk)
                if got["n"] > cap:
                    raise HttpOutError(f"the file is larger than the {cap:,} bytes allowed")
                try:
                    out.write(chunk)
                except OSError as exc:
                    raise HttpOutError(f"the router cannot store the download ({exc.strerror})") from None

    status = _request(url, "GET", None, headers or {}, seconds, guard, allow_local, follow=True, sink=sink)
    if not 200 <= status < 300:
        raise HttpOutError("the server answered with an error", status)
    return got["n"]
