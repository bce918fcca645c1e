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
    if any(c.isspace() or ord(c) < 0x20 for c in url):
        raise BadWebhook("url must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadWebhook(f"url is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadWebhook(f"url must be http:// or https:// with a host, not {url!r}")
    del port
    return url


def check_allow_local(value) -> bool:
    if not isinstance(value, bool):
        raise BadWebhook("allow_local must be true or false")
    return value


class WebhookStore:
    def __init__(self, state, keep_log: int, max_hooks: int = 16):
        self.state = state
        self.keep_log = keep_log
        self.max_hooks = max_hooks
        self._lock = threading.Lock()
        [row] = state.execute("SELECT COALESCE(MAX(id), 0) FROM webhook_deliveries")
        self._last_log = row[0]
        [row] = state.execute("SELECT COALESCE(MAX(id), 0) FROM webhook_queue")
        self._last_queued = row[0]

    def create(self, url: str, now: float, allow_local: bool = False) -> dict:
        url = check_url(url)
        allow_local = check_allow_local(allow_local)
        if len(self.all()) >= self.max_hooks:
            raise BadWebhook(f"at most {self.max_hooks} webhooks; remove one first")
        hook_id = "wh-" + secrets.token_hex(4)
        secret = secrets.token_urlsafe(32)
        self.state.execute("INSERT INTO webhooks (id, url, secret, created, allow_local) VALUES (?,?,?,?,?)",
                           (hook_id, url, secret, now, int(allow_local)))
        return {"id": hook_id, "url": url, "created": now, "allow_local": allow_local, "secret": secret}

    def remove(self, hook_id: str) -> bool:
        if not self.state.execute("SELECT id FROM webhooks WHERE id = ?", (hook_id,)):
            return False
        self.state.execute("DELETE FROM webhooks WHERE id = ?", (hook_id,))
        return True

    def all(self) -> list[dict]:
        """Without the secrets."""
        return [{**dict(r), "allow_local": bool(r["allow_local"])}
                for r in self.state.execute("SELECT id, url, created, allow_local FROM webhooks ORDER BY created")]

    def targets(self) -> list[tuple[str, str, str]]:
        """(id, url, secret) for the deliverer."""
        return [(r["id"], r["url"], r["secret"]) for r in self.state.execute("SELECT id, url, secret FROM webhooks")]

    def target(self, hook_id: str) -> tuple[str, str, bool] | None:
        """(url, secret, allow_local) of one webhook, read at each attempt (None: removed)."""
        rows = self.state.execute("SELECT url, secret, allow_local FROM webhooks WHERE id = ?", (hook_id,))
        return (rows[0]["url"], rows[0]["secret"], bool(rows[0]["allow_local"])) if rows else None

    # -- deliveries waiting for an attempt (deliver.py), kept across restarts ------------------
    def put(self, job) -> int:
        with self._lock:
            self._last_queued += 1
            qid = self._last_queued
        self.state.defer("INSERT INTO webhook_queue (id, webhook, notification, kind, body, attempt, due) "
                         "VALUES (?,?,?,?,?,?,?)", (qid, job.hook, job.notification, job.kind, job.body,
                                                    job.attempt, job.due))
        return qid

    def retry(self, job) -> None:
        self.state.defer("UPDATE webhook_queue SET attempt = ?, due = ? WHERE id = ?", (job.attempt, job.due, job.qid))

    def done(self, qid: int) -> None:
        self.state.defer("DELETE FROM webhook_queue WHERE id = ?", (qid,))

    def drop_hook(self, hook_id: str) -> None:
        self.state.defer("DELETE FROM webhook_queue WHERE webhook = ?", (hook_id,))

    def waiting(self) -> list[dict]:
        """Rows of the deliveries left waiting (a removed webhook's are dropped)."""
        self.state.execute("DELETE FROM webhook_queue WHERE webhook NOT IN (SELECT id FROM webhooks)")
        return [{**dict(r), "body": bytes(r["body"])}
                for r in self.state.execute("SELECT * FROM webhook_queue ORDER BY due, id")]

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
