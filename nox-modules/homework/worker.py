"""A background worker that applies queued jobs in batches.

Several components must change the router's Linux side (nftables sets, hostapd's deny
list, addresses) from inside an event handler. Doing it inline would stall the
controller on a subprocess; this worker takes the jobs off the hot path and hands
everything queued so far to one `apply(batch)` call, so a burst costs one process.
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Generic, TypeVar
from collections.abc import Callable

log = logging.getLogger(__name__)
Job = TypeVar("Job")


class BatchWorker(Generic[Job]):
    def __init__(self, name: str, apply: Callable[[list[Job]], None], gather: float = 0.0):
        """`gather`: seconds the first job of a batch waits for others to join it (a
        stream of decisions, one a few milliseconds, otherwise costs a process each). A
        flush cuts the wait short: whoever waits for the jobs wants them applied now (a
        command answering; the gathering cost every single permit 50 ms)."""
        self.name = name
        self._apply = apply
        self._gather = gather
        self._queue: queue.Queue[Job] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        # jobs put and jobs applied so far: flush waits for the jobs put before it only, so
        # a steady stream of new ones (a crowd of devices) cannot hold it forever
        self._done = threading.Condition()
        self._put = 0
        self._applied = 0
        self._hurry = threading.Event()      # a flush is waiting: stop gathering

    def put(self, job: Job) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name=self.name)
                self._thread.start()
        with self._done:
            self._put += 1
        self._queue.put(job)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every job queued so far has been applied (a command that must be in
        force when it answers, tests, shutdown); False if `timeout` seconds passed first."""
        with self._done:
            mark = self._put
            if self._applied < mark:
                self._hurry.set()
            return self._done.wait_for(lambda: self._applied >= mark, timeout)

    def _loop(self) -> None:
        while True:
            batch = [self._queue.get()]
            if self._gather:
                self._hurry.wait(self._gather)
            self._hurry.clear()
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._apply(batch)
            except Exception:   # a failed batch is logged; the worker lives on
                log.exception("%s: applying %d queued changes failed", self.name, len(batch))
            finally:
                with self._done:
                    self._applied += len(batch)
                    self._done.notify_all()


def offload(fn, *args):
    """Run blocking or CPU-heavy work (parsing a million lines, an fsync of a gigabyte, a
    read from a slow disk) in a real OS thread under the controller's eventlet hub, so its
    loop (DHCP, OpenFlow, the control socket, the API) keeps running; a plain call
    otherwise (unit tests, tools)."""
    try:
        from eventlet import patcher, tpool
    except ImportError:
        return fn(*args)
    if patcher.is_monkey_patched("thread"):
        return tpool.execute(fn, *args)
    return fn(*args)


def os_lock():
    """A lock that works between real OS threads (offload's) even under eventlet, whose
    monkey-patched threading.Lock is a green lock meant for green threads only."""
    try:
        from eventlet import patcher
    except ImportError:
        import threading
        return threading.Lock()
    return patcher.original("threading").Lock()
