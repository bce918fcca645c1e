"""Local admin control socket (Unix, mode 0600): newline-delimited JSON requests
{"cmd": NAME, "args": {...}} answered with {"ok": true, "result": ...} or
{"ok": false, "error": MESSAGE, "status": CODE}. Only root on the router can reach it."""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
from pathlib import Path

from . import actor
from .commands import CommandError
from .values import parse_json

log = logging.getLogger("homework.control")
MAX_REQUEST = 64 * 1024


class ControlServer:
    def __init__(self, core, path: Path):
        self.core = core
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self.path.unlink()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            self.sock.bind(str(self.path))
        finally:
            os.umask(old_umask)
        self.sock.listen(16)
        self._closed = False

    def serve_forever(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                if self._closed:
                    return
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            buf = b""
            try:
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                    if len(buf) > MAX_REQUEST:
                        conn.sendall(_encode({"ok": False, "error": "request too large", "status": 413}))
                        return
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        conn.sendall(_encode(self.handle(line)))
            except (TimeoutError, OSError):
                return

    def handle(self, line: bytes) -> dict:
        try:
            request = parse_json(line, "the request")
            if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
                raise ValueError("expected {\"cmd\": NAME, \"args\": {...}}")
            args = request.get("args") or {}
            if not isinstance(args, dict):
                raise ValueError("args must be an object")
        except ValueError as exc:
            return {"ok": False, "error": f"bad request: {exc}", "status": 400}
        try:
            with actor.acting("the router's command line"):
                return {"ok": True, "result": self.core.commands.call(request["cmd"], **args)}
        except CommandError as exc:
            return {"ok": False, "error": str(exc), "status": exc.status}
        except Exception as exc:
            log.exception("control command %s failed", request.get("cmd"))
            return {"ok": False, "error": f"internal error: {exc}", "status": 500}

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.close()
            self.path.unlink()
        except OSError:
            pass


def _encode(obj) -> bytes:
    return (json.dumps(obj, default=str) + "\n").encode()
