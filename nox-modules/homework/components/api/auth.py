"""Who may call the ws.v1 API: the admin password, Guest Board sessions and API tokens.

Everything is kept in the controller's SQLite state, and only as hashes: the password
with scrypt (slow on purpose, it is guessable), session ids and tokens with SHA-256
(they are 256-bit random strings, so a fast hash is enough and keeps every request cheap).

Roles: `admin` may do everything; `read-only` may only read (GET); `panel` (a session
only: the router's own screen or a paired wall tablet, panels.py) may read and let
devices in or out, and change nothing else. A Guest Board login is an admin session. A
password change ends the admin sessions; panels stay until they are revoked.

Checking a password (scrypt: tens of milliseconds and 16 MiB) never runs on the
controller's event loop: `check_password` hands it to a real thread (worker.offload), at
most HASH_PARALLEL at once, so guessers hammering the login cannot stall DHCP, GET
/status or the CLI; past HASH_WAITING queued checks a login is told to come back (Busy).

A full disk must not lock the household out of its own router: a login whose session row
cannot be written keeps the session in memory and queues the row (saved when space
returns); logout works the same way.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
from dataclasses import dataclass

from ...passwords import hash_password, verify_password
from ...state import StorageError
from ...worker import offload

log = logging.getLogger("homework.api.auth")

ROLES = ("admin", "read-only")          # of API tokens
PANEL = "panel"                          # the role of a panel's session
PANEL_LIFETIME = 400 * 86400             # a panel stays paired until revoked (or a year unused)
TOKEN_PREFIX = "hwk_"
MIN_PASSWORD = 8
MAX_PASSWORD = 256
LAST_USED_EVERY = 60.0   # seconds: refresh a session's last use at most this often (one write)
MAX_UNSAVED_SESSIONS = 64   # sessions kept in memory while the disk is full (oldest go first)
HASH_PARALLEL = 2           # password checks hashing at once (2 cores; 16 MiB each)
HASH_WAITING = 16           # more checks than this queued: Busy (a login answers 503)
_INSERT_SESSION = ("INSERT INTO api_sessions (id_hash, csrf, role, created, expires, last_used, client, kind, label, "
                   "mac) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id_hash) DO NOTHING")



class Busy(Exception):
    """Too many password checks are queued; try again in a moment."""


class HashGate:
    """Runs password hashing in real threads, at most `parallel` at once, with at most
    `waiting` callers queued (green threads under the controller: waiting costs nothing)."""

    def __init__(self, parallel: int = HASH_PARALLEL, waiting: int = HASH_WAITING, off_loop: bool = True):
        self.off_loop = off_loop       # False: on the caller's (green) thread, the benchmark's peer
        self._slots = threading.BoundedSemaphore(parallel)
        self._lock = threading.Lock()
        self._queued = 0
        self.waiting = waiting

    def run(self, fn, *args):
        with self._lock:
            if self._queued >= self.waiting:
                raise Busy("the router is checking many passwords right now; try again in a few seconds")
            self._queued += 1
        try:
            with self._slots:
                return offload(fn, *args) if self.off_loop else fn(*args)
        finally:
            with self._lock:
                self._queued -= 1


@dataclass(frozen=True)
class Principal:
    """Who is calling: how they proved it and what they may do."""
    kind: str            # "session" | "token"
    role: str
    ident: str           # token id, or the session's id hash
    csrf: str = ""       # sessions only
    panel: str = ""      # a panel's session: "screen" | "tablet"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def may_decide(self) -> bool:
        """May let devices in or out: an admin, or a panel."""
        return self.role in ("admin", PANEL)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check_new_password(password) -> str:
    if not isinstance(password, str) or not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise ValueError(f"password must be text of {MIN_PASSWORD} to {MAX_PASSWORD} characters")
    return password


class Auth:
    def __init__(self, state, clock, session_lifetime: int = 43200, hash_off_loop: bool = True):
        self.state = state
        self.now = clock
        self.session_lifetime = session_lifetime
        # Sessions made or ended while the state could not be written (see the docstring).
        self._unsaved: dict[str, dict] = {}
        self._ended: set[str] = set()
        self.hashing = HashGate(off_loop=hash_off_loop)
        self.panel_lifetime = PANEL_LIFETIME

    # -- the admin password ----------------------------------------------------------
    def has_password(self) -> bool:
        return bool(self.state.execute("SELECT 1 FROM api_admin WHERE id=1"))

    def set_password(self, password: str, chosen: bool = True) -> None:
        """Replace the admin password; every session ends (tokens stay). `chosen`: the
        household chose it (False only for the router's own first password, which keeps
        the first-hour set-up offer open: setup.py)."""
        hashed = self.hashing.run(hash_password, check_new_password(password))
        with self.state.transaction() as st:
            st.db.execute("INSERT INTO api_admin (id, password_hash, changed, chosen) VALUES (1, ?, ?, ?) "
                          "ON CONFLICT(id) DO UPDATE SET password_hash=excluded.password_hash, "
                          "changed=excluded.changed, chosen=excluded.chosen", (hashed, self.now(), int(chosen)))
            st.db.execute("DELETE FROM api_sessions WHERE role != ?", (PANEL,))

    def password_chosen(self) -> bool:
        """Has the household chosen (or taken over) the admin password? A router without one
        counts as not set up."""
        rows = self.state.execute("SELECT chosen FROM api_admin WHERE id=1")
        return bool(rows) and bool(rows[0]["chosen"])

    def adopt_password(self) -> None:
        """The household took the router's first password as its own (it logged in with it,
        or decided something by another door): the set-up offer closes."""
        self.state.execute("UPDATE api_admin SET chosen=1 WHERE id=1 AND chosen=0")

    def ensure_password(self, password_file: str = "") -> str | None:
        """First start: take the password from `password_file`, or generate one. Returns
        a generated password (for the caller to show once), else None."""
        if self.has_password():
            return None
        if password_file:
            try:
                with open(password_file, encoding="utf-8") as fh:
                    password = fh.read().strip()
            except OSError as exc:
                raise ValueError(f"api.admin_password_file: cannot read {password_file}: {exc}") from None
            self.set_password(password, chosen=False)
            return None
        password = secrets.token_urlsafe(12)
        self.set_password(password, chosen=False)
        return password

    def check_password(self, password) -> bool:
        """Off the event loop (HashGate); Busy when too many checks are queued."""
        rows = self.state.execute("SELECT password_hash FROM api_admin WHERE id=1")
        if not rows or not isinstance(password, str) or len(password) > MAX_PASSWORD:
            return False
        return self.hashing.run(verify_password, password, rows[0]["password_hash"])

    # -- sessions (the Guest Board) ----------------------------------------------------
    def create_session(self, client: str = "", role: str = "admin", kind: str = "", label: str = "",
                       mac: str = "") -> tuple[str, str]:
        """Returns (cookie value, CSRF token). A panel's (role PANEL, kind screen/tablet)
        lasts PANEL_LIFETIME."""
        sid, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = self.now()
        lifetime = self.panel_lifetime if role == PANEL else self.session_lifetime
        row = {"id_hash": _sha256(sid), "csrf": csrf, "role": role, "created": now,
               "expires": now + lifetime, "last_used": now, "client": client,
               "kind": kind, "label": label, "mac": mac}
        try:
            self.state.execute("DELETE FROM api_sessions WHERE expires < ?", (now,))
            self.state.execute(_INSERT_SESSION, tuple(row.values()))
        except StorageError:
            if len(self._unsaved) >= MAX_UNSAVED_SESSIONS:
                self._unsaved.pop(next(iter(self._unsaved)))
            self._unsaved[row["id_hash"]] = row
            self.state.defer(_INSERT_SESSION, tuple(row.values()))
            log.warning("session kept in memory: the state cannot be written now")
        return sid, csrf

    def _session_row(self, id_hash: str) -> dict | None:
        self._forget_saved()
        if id_hash in self._ended:
            return None
        rows = self.state.execute("SELECT * FROM api_sessions WHERE id_hash=?", (id_hash,))
        return dict(rows[0]) if rows else self._unsaved.get(id_hash)

    def _writable(self) -> bool:
        return self.state.storage()["writable"]

    def _forget_saved(self) -> None:
        """Once every queued write is on disk, the memory copies are no longer needed."""
        if (self._unsaved or self._ended) and self.state.storage()["queued_writes"] == 0:
            self._unsaved.clear()
            self._ended.clear()

    def session(self, sid: str) -> Principal | None:
        if not sid or len(sid) > 128:
            return None
        id_hash = _sha256(sid)
        row = self._session_row(id_hash)
        now = self.now()
        if row is None or row["expires"] < now:
            return None
        if now - row["last_used"] > LAST_USED_EVERY and self._writable():
            # Queued (write-behind); skipped on a full disk, where it would only grow the queue.
            self.state.defer("UPDATE api_sessions SET last_used=? WHERE id_hash=?", (now, id_hash))
            row["last_used"] = now
        return Principal("session", row["role"], id_hash, row["csrf"], row.get("kind", "") or "")

    def end_session(self, principal: Principal) -> None:
        try:
            self.state.execute("DELETE FROM api_sessions WHERE id_hash=?", (principal.ident,))
        except StorageError:
            self._unsaved.pop(principal.ident, None)
            self._ended.add(principal.ident)
            self.state.defer("DELETE FROM api_sessions WHERE id_hash=?", (principal.ident,))

    # -- panels (components/api/panels.py) -------------------------------------------------
    def panels(self) -> list[dict]:
        """The panels' sessions: the router's screen and paired tablets, newest first."""
        rows = self.state.execute("SELECT * FROM api_sessions WHERE role=? AND expires >= ? ORDER BY created DESC",
                                  (PANEL, self.now()))
        return [{"id": r["id_hash"][:16], "kind": r["kind"], "name": r["label"], "mac": r["mac"],
                 "created": r["created"], "last_used": r["last_used"], "expires": r["expires"]} for r in rows]

    def end_panels(self, panel_id: str = "", kind: str = "") -> int:
        """End a panel's session by its id (the first 16 hex digits of its hash), or every
        panel of a kind; returns how many ended."""
        if panel_id:
            if not (isinstance(panel_id, str) and len(panel_id) == 16 and set(panel_id) <= set("0123456789abcdef")):
                return 0
            rows = self.state.execute("SELECT id_hash FROM api_sessions WHERE role=? AND substr(id_hash, 1, 16)=?",
                                      (PANEL, panel_id))
        else:
            rows = self.state.execute("SELECT id_hash FROM api_sessions WHERE role=? AND kind=?", (PANEL, kind))
        for r in rows:
            self.state.execute("DELETE FROM api_sessions WHERE id_hash=?", (r["id_hash"],))
        return len(rows)

    def still_valid(self, principal: Principal) -> bool:
        """For long-lived streams: has the session ended or the token been revoked since?"""
        if principal.kind == "session":
            row = self._session_row(principal.ident)
            return row is not None and row["expires"] >= self.now()
        rows = self.state.execute("SELECT revoked FROM api_tokens WHERE id=?", (principal.ident,))
        return bool(rows) and not rows[0]["revoked"]

    # -- API tokens (scripts) -----------------------------------------------------------
    def create_token(self, name: str, role: str = "read-only") -> dict:
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(name, str) or not 1 <= len(name.strip()) <= 64 or any(ord(c) < 0x20 for c in name):
            raise ValueError("token name must be 1 to 64 printable characters")
        token_id = secrets.token_hex(4)
        secret = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        now = self.now()
        self.state.execute("INSERT INTO api_tokens (id, name, role, token_hash, created) VALUES (?,?,?,?,?)",
                           (token_id, name.strip(), role, _sha256(secret), now))
        log.info("API token %s (%s, %s) created", token_id, name.strip(), role)
        return {"id": token_id, "name": name.strip(), "role": role, "created": now, "token": secret}

    def tokens(self) -> list[dict]:
        return [{k: r[k] for k in ("id", "name", "role", "created", "last_used", "revoked")}
                for r in self.state.execute("SELECT * FROM api_tokens ORDER BY created")]

    def revoke_token(self, token_id: str) -> dict:
        rows = self.state.execute("SELECT * FROM api_tokens WHERE id=?", (str(token_id),))
        if not rows:
            raise LookupError(f"no API token with id {token_id!r}")
        if not rows[0]["revoked"]:
            self.state.execute("UPDATE api_tokens SET revoked=? WHERE id=?", (self.now(), str(token_id)))
            log.info("API token %s revoked", token_id)
        return [t for t in self.tokens() if t["id"] == str(token_id)][0]

    def token(self, secret: str) -> Principal | None:
        if not secret.startswith(TOKEN_PREFIX) or len(secret) > 128:
            return None
        token_id = secret[len(TOKEN_PREFIX):].split("_", 1)[0]
        rows = self.state.execute("SELECT * FROM api_tokens WHERE id=?", (token_id,))
        if not rows or rows[0]["revoked"] or not hmac.compare_digest(rows[0]["token_hash"], _sha256(secret)):
            return None
        now = self.now()
        if now - rows[0]["last_used"] > LAST_USED_EVERY and self._writable():
            self.state.defer("UPDATE api_tokens SET last_used=? WHERE id=?", (now, token_id))
        return Principal("token", rows[0]["role"], token_id)
