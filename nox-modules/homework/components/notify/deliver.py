"""Delivers notifications to webhooks: each webhook on a worker of its own (under the
controller's eventlet a green thread with green sockets), so a slow or dead receiver
delays only its own deliveries, never another webhook's and never the controller.

- Every attempt has a total deadline (`deadline` seconds: connect, TLS, request and the
  answer's status line together; httpout.py). A receiver that dribbles a byte every few
  seconds is cut off at the deadline like one that never answers.
- A failed attempt (no connection, the deadline, a non-2xx answer, a local address) is
  retried after `backoff`, 2 x backoff, 4 x ... up to `attempts` tries; every attempt
  goes to the delivery log, in the household's words (never the remote's own answer).
- What waits for an attempt is kept in state.db (`webhook_queue`), written behind like
  the delivery log: after a restart the deliveries carry on where they were.
- At most MAX_QUEUED_PER_HOOK deliveries wait per webhook; past that new ones for that
  webhook are dropped and counted (`notify.webhook_dropped`).
- Removing a webhook drops what waits for it and ends its worker."""
from __future__ import annotations

import heapq
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable

from ...httpout import HttpOutError, post
from ...netguard import Guard
from .webhooks import SIGNATURE_HEADER, sign

log = logging.getLogger("homework.notify")
MAX_QUEUED_PER_HOOK = 200


class Job:
    __slots__ = ("qid", "hook", "notification", "kind", "body", "attempt", "due")

    def __init__(self, qid: int, hook: str, notification: int, kind: str, body: bytes, attempt: int, due: float):
        self.qid, self.hook, self.notification, self.kind = qid, hook, notification, kind
        self.body, self.attempt, self.due = body, attempt, due


class HookWorker:
    """One webhook's deliveries, in due order, one at a time."""

    def __init__(self, deliverer: Deliverer, hook_id: str):
        self.d = deliverer
        self.hook_id = hook_id
        self.jobs: list = []                   # heap of (due, seq, Job)
        self.cond = threading.Condition()
        self.stopped = False
        self.busy = False
        self.thread = threading.Thread(target=self._loop, daemon=True, name=f"webhook-{hook_id}")
        self.thread.start()

    def add(self, job: Job) -> bool:
        with self.cond:
            if self.stopped or len(self.jobs) >= MAX_QUEUED_PER_HOOK:
                return False
            heapq.heappush(self.jobs, (job.due, next(self.d.seq), job))
            self.cond.notify()
            return True

    def idle(self) -> bool:
        # no lock: it is asked while other workers hold theirs (a best-effort answer for
        # became_idle, never a decision)
        return not self.jobs and not self.busy

    def stop(self) -> list[Job]:
        with self.cond:
            self.stopped = True
            dropped = [j for _, _, j in self.jobs]
            self.jobs.clear()
            self.cond.notify()
            return dropped

    def _next(self) -> Job | None:
        with self.cond:
            while not self.stopped:
                if self.jobs:
                    wait = self.jobs[0][0] - self.d.wall()
                    if wait <= 0:
                        self.busy = True
                        return heapq.heappop(self.jobs)[2]
                    self.cond.wait(min(wait, 60.0))
                else:
                    self.cond.wait(60.0)
            return None

    def _loop(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            try:
                self.d.attempt(self, job)
            except Exception:      # noqa: BLE001 - a worker must outlive any one delivery
                log.exception("webhook %s: delivery of notification %d failed", self.hook_id, job.notification)
            finally:
                with self.cond:
                    self.busy = False
                self.d.became_idle()


class Deliverer:
    """`target(hook_id)` -> (url, secret, allow_local) or None (removed); `queue`: the
    durable store of waiting deliveries (WebhookStore); `post` is httpout.post (tests
    give their own)."""

    def __init__(self, queue, log_attempt: Callable[..., None], count: Callable[..., None],
                 clock: Callable[[], float], attempts: int, backoff: float, deadline: float, guard: Guard,
                 target: Callable[[str], tuple | None], post: Callable[..., int] = post,
                 wall: Callable[[], float] = time.time):
        self.queue = queue
        self.log_attempt = log_attempt
        self.count = count
        self.clock = clock
        self.attempts = attempts
        self.backoff = backoff
        self.deadline = deadline
        self.guard = guard
        self.target = target
        self.post = post
        self.wall = wall          # when retries are due (epoch seconds: they outlive a restart)
        self.seq = itertools.count()
        self._workers: dict[str, HookWorker] = {}
        self._lock = threading.Lock()
        self.quiet = threading.Event()
        self.quiet.set()
        self._stopping = False

    # -- what comes in ---------------------------------------------------------------------
    def resume(self) -> int:
        """At start: the deliveries a previous run left waiting. Returns how many."""
        jobs = [Job(r["id"], r["webhook"], r["notification"], r["kind"], r["body"], r["attempt"], r["due"])
                for r in self.queue.waiting()]
        for job in jobs:
            self._enqueue(job, persist=False)
        if jobs:
            log.info("%d webhook deliveries carried over from before the restart", len(jobs))
        return len(jobs)

    def submit(self, targets: list[tuple[str, str, str]], notification: dict) -> None:
        """One delivery per target; never blocks (a webhook's full queue drops and counts)."""
        body = json.dumps(notification, sort_keys=True).encode()
        now = self.wall()
        for hook_id, _url, _secret in targets:
            job = Job(0, hook_id, notification["id"], notification["kind"], body, 1, now)
            self._enqueue(job, persist=True)

    def _enqueue(self, job: Job, persist: bool) -> None:
        with self._lock:
            if self._stopping:
                return
            worker = self._workers.get(job.hook)
            if worker is None:
                worker = self._workers[job.hook] = HookWorker(self, job.hook)
            self.quiet.clear()
        if persist:
            job.qid = self.queue.put(job)
        if not worker.add(job):
            self.count("notify.webhook_dropped")
            self.queue.done(job.qid)

    def forget_hook(self, hook_id: str) -> None:
        """A webhook was removed: what waits for it is dropped, its worker ends."""
        with self._lock:
            worker = self._workers.pop(hook_id, None)
        if worker is not None:
            for job in worker.stop():
                self.queue.done(job.qid)
        self.queue.drop_hook(hook_id)
        self.became_idle()

    # -- one attempt ---------------------------------------------------------------------------
    def attempt(self, worker: HookWorker, job: Job) -> None:
        target = self.target(job.hook)
        if target is None:                       # removed meanwhile
            self.queue.done(job.qid)
            return
        url, secret, allow_local = target
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(secret, job.body),
                   "X-Homework-Event": job.kind, "User-Agent": "homework-notify"}
        try:
            code = self.post(url, job.body, headers, self.deadline, self.guard, allow_local)
            ok = 200 <= code < 300
            status = str(code) if ok else "answered with an error"
        except HttpOutError as exc:
            ok, status = False, str(exc)
        self.count("notify.webhook_ok" if ok else "notify.webhook_failed")
        if not ok:
            log.info("webhook %s attempt %d for notification %d: %s", job.hook, job.attempt, job.notification, status)
        try:
            self.log_attempt(job.hook, job.notification, self.clock(), job.attempt, status, ok)
        except Exception:  # noqa: BLE001 - a full disk must not stop deliveries
            log.exception("webhook delivery log write failed")
        if ok or job.attempt >= self.attempts:
            if not ok:
                self.count("notify.webhook_given_up")
            self.queue.done(job.qid)
            return
        job.due = self.wall() + self.backoff * 2 ** (job.attempt - 1)
        job.attempt += 1
        self.queue.retry(job)
        if not worker.add(job) and not worker.stopped:
            # Its worker's queue is full: dropped. A worker stopped while this attempt was
            # out (the controller stopping, or the webhook removed) leaves the row as it is:
            # the next start resumes it, and a removal has dropped it with the webhook.
            self.queue.done(job.qid)

    # -- idle and shutdown -------------------------------------------------------------------------
    def became_idle(self) -> None:
        """Nothing is being sent or waiting for a retry: `quiet` is set (the tests wait on it)."""
        with self._lock:
            workers = list(self._workers.values())
        if all(w.idle() for w in workers):
            self.quiet.set()

    def stop(self) -> None:
        """What waits stays in state.db for the next start."""
        with self._lock:
            self._stopping = True
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            worker.stop()
