"""The API's "smaller" holes: event streams are capped (per credentials and in
all, with a reserve for admins), and a full state disk keeps login and reading working."""
import secrets
import sqlite3

import pytest
from webob import Request

from homework.components.api import stream as stream_mod
from test_api import MAC, PROXY, Api
from test_api import core as core  # noqa: F401  (the shared fixture, by name)


@pytest.fixture
def api(core):  # noqa: F811
    return Api(core)


def open_stream(api, token=None, cookies=None):
    req = Request.blank("/ws.v1/events", remote_addr=PROXY)
    if token:
        req.headers["Authorization"] = f"Bearer {token}"
    if cookies:
        req.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    status = {}
    body = api.app(req.environ, lambda s, h: status.update(status=s, headers=dict(h)))
    return int(status["status"].split()[0]), status["headers"], body


# -- event streams ------------------------------------------------------------------------
def test_one_token_gets_a_few_streams_then_a_clear_429(api):
    token = api.token("read-only")
    bodies = []
    for _ in range(stream_mod.MAX_PER_CLIENT):
        code, _, body = open_stream(api, token)
        assert code == 200
        bodies.append(body)
    code, headers, body = open_stream(api, token)
    assert code == 429 and int(headers["Retry-After"]) > 0
    assert headers["Content-Type"].startswith("application/json")
    assert "event streams open" in b"".join(body).decode()
    bodies.pop().close()                      # closing one frees its slot at once
    code, _, body = open_stream(api, token)
    assert code == 200
    bodies.append(body)
    for b in bodies:
        b.close()
    assert api.app.stream.clients() == 0


def test_read_only_tokens_together_cannot_take_the_admins_reserve(api):
    limit = stream_mod.MAX_STREAMS - stream_mod.ADMIN_RESERVE
    bodies = []
    tokens = [api.token("read-only") for _ in range(limit // stream_mod.MAX_PER_CLIENT + 1)]
    refused = 0
    for token in tokens:
        for _ in range(stream_mod.MAX_PER_CLIENT):
            code, _, body = open_stream(api, token)
            if code == 200:
                bodies.append(body)
            else:
                refused += 1
                assert "read-only" in b"".join(body).decode()
    assert len(bodies) == limit and refused > 0
    api.login()                               # the Guest Board (an admin session) still gets its stream
    code, _, body = open_stream(api, cookies=api.cookies)
    assert code == 200
    it = iter(body)
    assert next(it).startswith(b"retry:") and next(it).startswith(b"event: snapshot")
    for b in bodies + [body]:
        b.close()


def test_a_stream_closed_before_it_started_frees_its_slot(api):
    token = api.token("read-only")
    for _ in range(stream_mod.MAX_PER_CLIENT * 3):
        code, _, body = open_stream(api, token)
        assert code == 200
        body.close()                          # never iterated: the server still calls close()
    assert api.app.stream.clients() == 0


# -- a full state disk ------------------------------------------------------------------------
def fill_sessions_table(db: sqlite3.Connection) -> None:
    """Make the state database full for a new session row: no page may be added, and the
    pages api_sessions has are packed with (unexpired, unusable) rows."""
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count={pages}")
    for size in (2000, 400, 80, 16, 0):
        while True:
            try:
                db.execute("INSERT INTO api_sessions (id_hash, csrf, role, created, expires, last_used, client) "
                           "VALUES (?, '', 'admin', 0, 9e12, 0, ?)", (secrets.token_hex(32), "x" * size))
            except sqlite3.OperationalError as exc:
                assert "full" in str(exc)
                break


def free_space(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA max_page_count=1073741823")


def test_full_disk_keeps_login_and_reads_refuses_changes_clearly_and_saves_later(api, core):
    alerts = []
    core.bus.subscribe("alert", lambda topic, ev: alerts.append(ev))
    state = core.state
    state.flush()
    fill_sessions_table(state.db)
    now = [0.0]
    state.clock = lambda: now[0]

    r = api.login()                                        # the session row cannot be written
    assert r.status_int == 200, r.text
    assert api.call("GET", "status").status_int == 200
    assert api.call("GET", "devices").status_int == 200
    session = api.call("GET", "session").json
    assert session["storage"]["full"] is True and session["storage"]["queued_writes"] >= 1
    r = api.call("POST", f"permit/{MAC}")
    assert r.status_int == 503 and "storage is full" in r.json["error"]
    assert [(a["kind"], a["mac"]) for a in alerts] == [("storage-full", "")]
    for _ in range(3):                                     # retries that fail again: no new alert
        now[0] += 5
        state.flush()
    assert len(alerts) == 1

    free_space(state.db)
    now[0] += 5
    assert state.flush()                                   # the core's timer does this
    assert api.call("GET", "session").json["storage"]["full"] is False
    sid_hash = api.app.authenticate(_cookie_request(api)).ident
    rows = state.execute("SELECT role FROM api_sessions WHERE id_hash=?", (sid_hash,))
    assert [r["role"] for r in rows] == ["admin"]          # the session reached the disk
    assert api.call("POST", f"permit/{MAC}").status_int == 200


def test_logout_on_a_full_disk_ends_the_session(api, core):
    state = core.state
    api.login()
    fill_sessions_table(state.db)
    r = api.call("POST", "logout")
    assert r.status_int == 200
    assert api.call("GET", "status").status_int == 401


def _cookie_request(api):
    req = Request.blank("/ws.v1/session", remote_addr=PROXY)
    req.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in api.cookies.items())
    return req
