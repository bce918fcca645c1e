"""The emulated internet's web server: the files tests put in the home's www/ directory,
plus downloads and streams of any size, so charts, priorities and caps have real traffic:

    /                      the index page (www/index.html)
    /<file>                a file of www/ (tests write blobs there)
    /download/<N>M         N MB (also K, G) of bytes made on the fly: a big download
    /stream/<kbit>         an endless stream at that rate (a video), until the client goes;
                           ?seconds=S ends it after S seconds

    python3 internet_web.py --bind ADDR --port 80 --directory DIR   (one per address)

Threaded, so a stream never holds a download up. Python's http.server, as the rest of
the emulated internet uses.
"""
from __future__ import annotations

import argparse
import re
import socket
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CHUNK = 64 * 1024
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
MAX_DOWNLOAD = 8 << 30
_BLOCK = bytes(range(256)) * (CHUNK // 256)


class Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):                        # noqa: N802 (http.server's name)
        url = urlsplit(self.path)
        download = re.fullmatch(r"/download/(\d+)([KMG])B?", url.path, re.IGNORECASE)
        stream = re.fullmatch(r"/stream/(\d+)(?:kbit)?", url.path)
        if download:
            size = int(download.group(1)) * UNITS[download.group(2).upper()]
            return self._send(min(size, MAX_DOWNLOAD), None, None)
        if stream:
            seconds = parse_qs(url.query).get("seconds", [""])[0]
            return self._send(None, max(8, int(stream.group(1))), float(seconds) if seconds else None)
        return super().do_GET()

    def _send(self, size: int | None, kbit: int | None, seconds: float | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream" if size is not None else "video/mp2t")
        self.send_header("Cache-Control", "no-store")
        if size is not None:
            self.send_header("Content-Length", str(size))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        start, sent = time.monotonic(), 0
        try:
            while size is None or sent < size:
                if seconds is not None and time.monotonic() - start >= seconds:
                    break
                n = CHUNK if size is None else min(CHUNK, size - sent)
                if kbit is not None:     # paced: this chunk may leave once the rate allows it
                    n = min(n, 8 * 1024)
                    due = start + sent * 8 / (kbit * 1000)
                    delay = due - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                self.wfile.write(_BLOCK[:n])
                sent += n
        except (BrokenPipeError, ConnectionResetError):
            pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, bind: str, port: int, handler):
        self.address_family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        super().__init__((bind, port), handler)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bind", required=True)
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--directory", required=True)
    args = ap.parse_args()
    Server(args.bind, args.port, partial(Handler, directory=args.directory)).serve_forever()


if __name__ == "__main__":
    main()
