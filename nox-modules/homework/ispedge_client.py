"""The router's side of an ISP edge's control interface (ispedge/ in this repository):
HTTPS with the household's certificate, JSON. Blocking: called from a worker thread, never
on the controller's event loop."""
from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit


class EdgeError(Exception):
    """The edge answered with an error (`status`) or could not be reached (status 0)."""

    def __init__(self, message: str, status: int = 0, retry_after: float = 0.0):
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


@dataclass(frozen=True)
class EdgeEndpoint:
    url: str            # https://HOST:PORT
    ca: str             # the ISP's CA certificate (PEM file)
    cert: str           # the household's certificate the ISP issued (PEM file)
    key: str            # its key (PEM file)


class EdgeClient:
    def __init__(self, endpoint: EdgeEndpoint, timeout: float = 5.0):
        parts = urlsplit(endpoint.url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"the edge's address must be https://HOST:PORT, not {endpoint.url!r}")
        self.host, self.port = parts.hostname, parts.port or 443
        self.timeout = timeout
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=endpoint.ca)
        ctx.check_hostname = False          # reached by address; the ISP's CA is the check
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(endpoint.cert, endpoint.key)
        self.ctx = ctx

    def _call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self.ctx)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
            resp = conn.getresponse()
            raw = resp.read()
            try:
                answer = json.loads(raw or b"{}")
            except ValueError:
                answer = {"error": raw[:200].decode(errors="replace")}
            if resp.status >= 400:
                raise EdgeError(str(answer.get("error") or f"HTTP {resp.status}"), resp.status,
                                float(resp.getheader("Retry-After") or 0))
            return resp.status, answer
        except (OSError, http.client.HTTPException) as exc:
            raise EdgeError(f"the ISP edge at {self.host}:{self.port} did not answer: {exc}") from None
        finally:
            conn.close()

    def placements(self) -> dict:
        return self._call("GET", "/v1/placements")[1]

    def place(self, proto: str, src: str, sport: int, dst: str, dport: int, queue: str) -> dict:
        return self._call("POST", "/v1/placements", {"proto": proto, "src": src, "sport": sport,
                                                     "dst": dst, "dport": dport, "queue": queue})[1]

    def remove(self, pid: int) -> dict:
        return self._call("DELETE", f"/v1/placements/{int(pid)}")[1]

    def queues(self) -> dict:
        return self._call("GET", "/v1/queues")[1]
