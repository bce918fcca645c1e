"""Failed-login limiter: after `limit` wrong passwords from one client address within
`window` seconds, further attempts from it are refused until the oldest failure ages out.
A success clears that address. Kept in memory: a restart forgives, which is acceptable
because scrypt already makes every guess slow."""
from __future__ import annotations

import threading
from collections import deque

MAX_CLIENTS = 4096   # bound the memory an address-spraying attacker can make us use


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
            q = self._prune(client)
            if q is None or len(q) < self.limit:
                return 0.0
            return max(1.0, q[0] + self.window - self.now())

    def failed(self, client: str) -> None:
        with self._lock:
            if client not in self._failures and len(self._failures) >= MAX_CLIENTS:
                for key in list(self._failures)[: MAX_CLIENTS // 4]:
                    del self._failures[key]
            self._failures.setdefault(client, deque(maxlen=self.limit)).append(self.now())

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._failures.pop(client, None)

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
