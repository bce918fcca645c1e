"""The control interface: HTTPS with client certificates, JSON, four requests and nothing
else. GET /v1/placements, POST /v1/placements, DELETE /v1/placements/<id>, GET /v1/queues.
Every request costs the household one token of its bucket; none left is a 429."""
from __future__ import annotations

import json
import logging
import math
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .edge import Edge
from .pki import household_of
from .placement import PlacementError

log = logging.getLogger("ispedge.api")
MAX_BODY = 4096
PLACEMENT = re.compile(r"^/v1/placements/(\d{1,9})$")


class Handler(BaseHTTPRequestHandler):
    server: EdgeServer
    protocol_version = "HTTP/1.1"
    server_version = "ispedge"
    sys_version = ""

    def log_message(self, format: str, *args) -> None:      # noqa: A002 (the base class's name)
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        edge = self.server.edge
        try:
            h = edge.household(household_of(self.request.getpeercert()))
            wait = edge.admit(h)
            if wait:
                self._send(429, {"error": f"household {h.name} sent more than {edge.cfg.messages_per_second:g} "
                                          "control messages a second: wait and retry"},
                           {"Retry-After": str(max(1, math.ceil(wait)))})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise PlacementError(f"a request is at most {MAX_BODY} bytes")
            raw = self.rfile.read(length) if length else b""
            m = PLACEMENT.match(self.path)
            if self.path == "/v1/placements" and method == "GET":
                self._send(200, edge.listing(h))
            elif self.path == "/v1/placements" and method == "POST":
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    raise PlacementError("the request body is not JSON") from None
                placed, created = edge.place(h, body)
                self._send(201 if created else 200, placed)
            elif m and method == "DELETE":
                self._send(200, edge.remove(h, int(m.group(1))))
            elif self.path == "/v1/queues" and method == "GET":
                self._send(200, edge.queues(h))
            else:
                self._send(404, {"error": f"no {method} {self.path}: the edge offers GET and POST /v1/placements, "
                                          "DELETE /v1/placements/ID and GET /v1/queues"})
        except PlacementError as exc:
            self._send(exc.status, {"error": str(exc)})
        except Exception as exc:
            log.exception("request failed")
            self._send(500, {"error": f"the edge could not do it: {exc}"})

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PUT(self) -> None:
        self._serve("PUT")


class EdgeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, edge: Edge, ssl_context, host: str, port: int):
        self.edge, self.ssl_context = edge, ssl_context
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), Handler)

    def get_request(self):
        sock, addr = super().get_request()
        sock.settimeout(10)             # a client that stalls the handshake costs one thread, briefly
        return self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address) -> None:
        try:
            request.do_handshake()
        except (OSError, ValueError) as exc:
            log.info("TLS handshake from %s refused: %s", client_address[0], exc)
            request.close()
            return
        super().finish_request(request, client_address)

    def serve_in_thread(self) -> threading.Thread:
        t = threading.Thread(target=self.serve_forever, name="ispedge-api", daemon=True)
        t.start()
        return t
