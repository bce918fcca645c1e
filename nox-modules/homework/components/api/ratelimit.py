"""Failed-login limiter: at most `limit` password attempts that did not succeed from one
caller within `window` seconds; further attempts are refused until the oldest ages out.
A success clears that caller.

A caller is a key from homework/callers.py (`Caller.key`): a device's MAC whichever of
its addresses it uses (its IPv4 address, any of its /64), a whole /64 for an IPv6 source
that is no device, an address otherwise. So twenty addresses of one /64 are one caller.

Each attempt is charged when it *starts* (`begin`), before the password is hashed, so
parallel guesses cannot all pass the check while the first ones are still being hashed.
Kept in memory: a restart forgives, which is acceptable because scrypt already makes
every guess slow."""
from __future__ import annotations

import threading
from collections import deque

MAX_CLIENTS = 4096   # bound the memory a key-spraying attacker can make us use


class LoginLimiter:
    def __init__(self, clock, limit: int = 5, window: float = 300.0):
        self.now = clock
        self.limit = limit
        self.window = window
        self._failures: dict[str, deque] = {}
        self._lock = threading.Lock()

    def retry_after(self, client: str) -> float:
        """0 if `client` may try now, else the seconds it has to wait."""
        with self._lock:
            return self._wait(client)

    def begin(self, client: str) -> float:
        """An attempt starts: 0 and counted (until `succeeded` clears it), or the seconds
        to wait (nothing counted)."""
        with self._lock:
            wait = self._wait(client)
            if not wait:
                self._add(client)
            return wait

    def failed(self, client: str) -> None:
        with self._lock:
            self._add(client)

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._failures.pop(client, None)

    def _wait(self, client: str) -> float:
        q = self._prune(client)
        if q is None or len(q) < self.limit:
            return 0.0
        return max(1.0, q[0] + self.window - self.now())

    def _add(self, client: str) -> None:
        if client not in self._failures and len(self._failures) >= MAX_CLIENTS:
            for key in list(self._failures)[: MAX_CLIENTS // 4]:
                del self._failures[key]
        self._failures.setdefault(client, deque(maxlen=self.limit)).append(self.now())

    def _prune(self, client: str) -> deque | None:
        q = self._failures.get(client)
        if q is None:
            return None
        cutoff = self.now() - self.window
        while q and q[0] < cutoff:
            q.popleft()
        if not q:
            del self._failures[client]
            return None
        return q
