"""A TLS listener whose sessions each get a thread of their own (green under the
controller's eventlet, real in unit tests): the transport of the satellite agent channel.
One job: accept, complete the handshake (or count the refusal), hand the session over."""
from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable

from ...agentwire import LineReader, encode

HANDSHAKE_TIMEOUT = 10.0
IDLE_TIMEOUT = 30.0     # an agent says something every second or so (a report or a ping)
LINGER = 3.0            # after a last word, how long the peer gets to read it and close

log = logging.getLogger("homework.satlink")


class Session:
    """One agent's connection: its peer certificate, a reader, and a send that many
    threads may call (a write lock keeps lines whole)."""

    def __init__(self, tls: ssl.SSLSocket, peer: tuple):
        self.tls, self.peer = tls, peer
        self.reader = LineReader(tls)
        self._write = threading.Lock()
        self.closed = False
        self.revoked = 0.0          # when its satellite stopped being admitted: what it says is dropped

    def peer_certificate(self) -> bytes | None:
        return self.tls.getpeercert(binary_form=True)

    def send(self, message: dict) -> bool:
        """False if the session is gone (the reader thread ends it)."""
        with self._write:
            if self.closed:
                return False
            try:
                self.tls.sendall(encode(message))
                return True
            except OSError:
                self.close()
                return False

    def last_word(self, message: dict, linger: float = LINGER) -> None:
        """Send a last message and wait (briefly) for the peer to close first. Closing with
        the peer's lines still unread makes the kernel reset the connection, and a reset can
        destroy the last message before the peer has read it. Only for a session nobody
        else reads (the thread that owns it)."""
        if not self.send(message):
            return
        self.tls.settimeout(linger)
        deadline = time.monotonic() + linger
        try:
            while time.monotonic() < deadline and self.tls.recv(65536):
                pass
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        self.closed = True
        try:
            self.tls.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.tls.close()
        except OSError:
            pass


class TlsLineServer:
    def __init__(self, context: ssl.SSLContext, address: tuple[str, int], serve: Callable[[Session], None],
                 refused: Callable[[str, str], None]):
        self.context, self.address = context, address
        self.serve, self.refused = serve, refused
        self.sock: socket.socket | None = None

    def start(self) -> tuple[str, int]:
        ipv6 = ":" in self.address[0]      # "::" listens on IPv4 too (satellites' fe80::1 links)
        self.sock = sock = socket.create_server(self.address, family=socket.AF_INET6 if ipv6 else socket.AF_INET,
                                                dualstack_ipv6=self.address[0] == "::")
        threading.Thread(target=self._accept, args=(sock,), daemon=True, name="satlink-accept").start()
        return sock.getsockname()[:2]

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, peer = sock.accept()
            except OSError:
                return          # closed
            threading.Thread(target=self._handshake, args=(conn, peer), daemon=True, name="satlink-session").start()

    def _handshake(self, conn: socket.socket, peer: tuple) -> None:
        conn.settimeout(HANDSHAKE_TIMEOUT)
        try:
            tls = self.context.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            conn.close()
            self.refused(peer[0], f"at the TLS handshake: {exc}")
            return
        tls.settimeout(IDLE_TIMEOUT)   # a silent or stuck peer: its reads and writes give up
        session = Session(tls, peer)
        try:
            self.serve(session)
        except Exception:       # one agent's trouble never takes the listener down
            log.exception("satellite agent session from %s failed", peer[0])
        finally:
            session.close()
