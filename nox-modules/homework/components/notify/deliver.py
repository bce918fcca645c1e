"""Delivers notifications to webhooks on a worker thread (under the controller's eventlet
a green thread with green sockets), so a slow or dead receiver never holds up the
controller. A failed attempt (no connection, timeout, a non-2xx answer) is retried after
`backoff`, 2 × backoff, 4 × ... up to `attempts` tries; every attempt goes to the log."""
from __future__ import annotations

import heapq
import itertools
import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from typing import Callable

from .webhooks import SIGNATURE_HEADER, sign

log = logging.getLogger("homework.notify")
TIMEOUT = 5.0
MAX_QUEUED = 1000
# straight to the receiver: a proxy from the controller's environment is not the household's
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Deliverer:
    def __init__(self, log_attempt: Callable[..., None], count: Callable[..., None], clock: Callable[[], float],
                 attempts: int, backoff: float):
        self.log_attempt = log_attempt
        self.count = count
        self.clock = clock
        self.attempts = attempts
        self.backoff = backoff
        self._queue: queue.Queue = queue.Queue(MAX_QUEUED)
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._stopping = False

    def submit(self, targets: list[tuple[str, str, str]], notification: dict) -> None:
        """Queue one delivery per target; never blocks (a full queue drops and counts)."""
        body = json.dumps(notification, sort_keys=True).encode()
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name="notify-webhooks")
                self._thread.start()
        for hook_id, url, secret in targets:
            try:
                self._idle.clear()
                self._queue.put_nowait((hook_id, url, secret, notification["id"], body, notification["kind"]))
            except queue.Full:
                self.count("notify.webhook_dropped")

    def wait_idle(self, timeout: float) -> bool:
        """Tests and shutdown: wait until nothing is queued or waiting for a retry."""
        return self._idle.wait(timeout)

    def stop(self) -> None:
        self._stopping = True

    def _loop(self) -> None:
        retries: list = []                    # heap of (due monotonic, seq, job, attempt)
        seq = itertools.count()
        while not self._stopping:
            wait = max(0.0, retries[0][0] - time.monotonic()) if retries else None
            try:
                job, attempt = self._queue.get(timeout=wait), 1
            except queue.Empty:
                _due, _n, job, attempt = heapq.heappop(retries)
            ok = self._attempt(job, attempt)
            if not ok and attempt < self.attempts:
                delay = self.backoff * 2 ** (attempt - 1)
                heapq.heappush(retries, (time.monotonic() + delay, next(seq), job, attempt + 1))
            elif not ok:
                self.count("notify.webhook_given_up")
            if not retries and self._queue.empty():
                self._idle.set()

    def _attempt(self, job, attempt: int) -> bool:
        hook_id, url, secret, nid, body, kind = job
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", SIGNATURE_HEADER: sign(secret, body),
            "X-Homework-Event": kind, "User-Agent": "homework-notify"})
        try:
            with OPENER.open(req, timeout=TIMEOUT) as resp:
                status, ok = str(resp.status), 200 <= resp.status < 300
        except urllib.error.HTTPError as exc:
            status, ok = str(exc.code), False
        except (urllib.error.URLError, OSError, ValueError) as exc:
            status, ok = f"error: {getattr(exc, 'reason', exc)}"[:200], False
        self.count("notify.webhook_ok" if ok else "notify.webhook_failed")
        if not ok:
            log.info("webhook %s attempt %d for notification %d: %s", hook_id, attempt, nid, status)
        try:
            self.log_attempt(hook_id, nid, self.clock(), attempt, status, ok)
        except Exception:  # noqa: BLE001 - a full disk must not stop deliveries
            log.exception("webhook delivery log write failed")
        return ok
