"""Webhooks: where notifications are POSTed (table `webhooks`), how a delivery is signed,
and the delivery log (table `webhook_deliveries`, the newest `keep` attempts).

The secret signs each body with HMAC-SHA256, so the controller must keep the secret
itself (a hash would not do): it is kept only in state.db (root-only, like the tokens'
hashes), shown once when the webhook is made, and never returned again."""
from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from urllib.parse import urlsplit

SIGNATURE_HEADER = "X-Homework-Signature"


class BadWebhook(ValueError):
    pass


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def check_url(url: str) -> str:
    if not isinstance(url, str) or len(url) > 2000:
        raise BadWebhook("url must be a string of at most 2000 characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadWebhook(f"url must be http:// or https:// with a host, not {url!r}")
    return url


class WebhookStore:
    def __init__(self, state, keep_log: int, max_hooks: int = 16):
        self.state = state
        self.keep_log = keep_log
        self.max_hooks = max_hooks
        self._lock = threading.Lock()
        [row] = state.execute("SELECT COALESCE(MAX(id), 0) FROM webhook_deliveries")
        self._last_log = row[0]

    def create(self, url: str, now: float) -> dict:
        url = check_url(url)
        if len(self.all()) >= self.max_hooks:
            raise BadWebhook(f"at most {self.max_hooks} webhooks; remove one first")
        hook_id = "wh-" + secrets.token_hex(4)
        secret = secrets.token_urlsafe(32)
        self.state.execute("INSERT INTO webhooks (id, url, secret, created) VALUES (?,?,?,?)",
                           (hook_id, url, secret, now))
        return {"id": hook_id, "url": url, "created": now, "secret": secret}

    def remove(self, hook_id: str) -> bool:
        if not self.state.execute("SELECT id FROM webhooks WHERE id = ?", (hook_id,)):
            return False
        self.state.execute("DELETE FROM webhooks WHERE id = ?", (hook_id,))
        return True

    def all(self) -> list[dict]:
        """Without the secrets."""
        return [dict(r) for r in self.state.execute("SELECT id, url, created FROM webhooks ORDER BY created")]

    def targets(self) -> list[tuple[str, str, str]]:
        """(id, url, secret) for the deliverer."""
        return [(r["id"], r["url"], r["secret"]) for r in self.state.execute("SELECT id, url, secret FROM webhooks")]

    def log(self, webhook: str, notification: int, at: float, attempt: int, status: str, ok: bool) -> None:
        with self._lock:
            self._last_log += 1
            lid = self._last_log
        self.state.defer("INSERT INTO webhook_deliveries (id, webhook, notification, at, attempt, status, ok) "
                         "VALUES (?,?,?,?,?,?,?)", (lid, webhook, notification, at, attempt, status, int(ok)))
        self.state.defer("DELETE FROM webhook_deliveries WHERE id <= ?", (lid - self.keep_log,))

    def deliveries(self, limit: int = 100) -> list[dict]:
        rows = self.state.execute("SELECT id, webhook, notification, at, attempt, status, ok "
                                  "FROM webhook_deliveries ORDER BY id DESC LIMIT ?", (limit,))
        return [{**dict(r), "ok": bool(r["ok"])} for r in rows]
