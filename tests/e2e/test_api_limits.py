"""End to end, the API's "smaller" holes, against the real controller behind lighttpd:

- 300 Server-Sent Events streams opened with one read-only token used to take every green
  thread of the API server (pool of 256), locking out the whole API until they closed;
- a full state filesystem turned every API call, login and GET /status included, into a
  500, and write-behind lease rows that failed were dropped.
"""
from __future__ import annotations

import errno
import json
import shutil
import sqlite3
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from homelab import BARE, REPO, _kill_pid, sh
from homelab.web import Web, api, sse_events, web_home

STREAMS = 300


@pytest.fixture(scope="module")
def home():
    with web_home({"controller": {"components": list(BARE)}}) as h:
        h.web = Web(h).start()
        yield h




# -- event streams ---------------------------------------------------------------------------------
def test_300_streams_from_one_read_only_token_leave_the_api_answering(home):
    web = home.web
    token = web.token("read-only")
    opened: list[requests.Response] = []
    lock = threading.Lock()

    def open_stream(_):
        s = requests.Session()
        s.trust_env = False
        try:
            r = s.get(f"{web.url}ws.v1/events", headers={"Authorization": f"Bearer {token}"},
                      verify=web.ca, stream=True, timeout=(20, 20))
        except requests.RequestException as exc:
            return f"no answer: {type(exc).__name__}"     # a hung stream: the bug
        if r.status_code == 200:
            with lock:
                opened.append(r)
            return 200
        body = r.json()
        r.close()
        return (r.status_code, body.get("error", ""))

    try:
        with ThreadPoolExecutor(max_workers=64) as pool:
            results = list(pool.map(open_stream, range(STREAMS)))
        # With every stream of the token open, the API still answers an admin at once
        # (the request timeout only tells "answered" from "hung").
        r = api(web, "GET", "status", timeout=10)
        assert r.status_code == 200, r.text
        refused = [x for x in results if isinstance(x, tuple)]
        assert all(code == 429 and "event streams open" in msg for code, msg in refused), set(refused)
        hung = [x for x in results if isinstance(x, str)]
        assert not hung, f"{len(hung)} streams neither opened nor refused: {hung[:3]}"
        assert 1 <= results.count(200) <= 8 and len(refused) == STREAMS - results.count(200)
        # ... and the Guest Board's own stream (an admin) still opens.
        with api(web, "GET", "events", stream=True, timeout=10) as board_stream:
            assert board_stream.status_code == 200
    finally:
        for r in opened:
            r.close()


# -- a full state filesystem ---------------------------------------------------------------------------
@pytest.fixture
def full_disk_home():
    """A home whose state directory is a small tmpfs of its own (unmounted even on failure)."""
    h = web_home({"controller": {"components": list(BARE)}})
    mounted: list[Path] = []
    write_config = h._write_config

    def mount_then_write_config() -> None:   # runs inside start(), before the controller
        h.state_dir.mkdir(parents=True, exist_ok=True)
        sh(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", f"{h.run_id}-state", str(h.state_dir)])
        mounted.append(h.state_dir)
        write_config()

    h._write_config = mount_then_write_config
    try:
        with h:
            h.web = Web(h).start()
            yield h
    finally:
        for path in mounted:
            if sh(["umount", str(path)], check=False).returncode != 0:
                sh(["umount", "-l", str(path)], check=False)
        if not h.keep:
            shutil.rmtree(h.dir, ignore_errors=True)


def fill(directory: Path) -> Path:
    """Write a file until the filesystem says it is full."""
    path = directory / "filler"
    with open(path, "wb", buffering=0) as fh:
        for size in (1 << 20, 1 << 16, 4096, 512, 1):
            while True:
                try:
                    fh.write(b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    return path


def storage(web: Web) -> dict:
    return api(web, "GET", "session").json()["storage"]


class BoardInChromium:
    """The Guest Board in Debian's Chromium (tests/ui/storage_banner.mjs), logged in."""

    def __init__(self, web: Web):
        netns, url = web.add_viewer()        # Chromium where the network holds still
        self.proc = subprocess.Popen(["node", "ui/storage_banner.mjs", url, web.password, netns],
                                     cwd=REPO / "tests", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, start_new_session=True)
        assert self.answer().get("ready"), "the board did not open in Chromium"

    def answer(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, f"the browser script ended (exit {self.proc.poll()})"
        return json.loads(line)

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.answer()

    def close(self) -> None:
        _kill_pid(self.proc.pid, 5)


def wait_for(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def test_full_state_disk_keeps_login_and_status_and_loses_no_lease(full_disk_home):
    home, web = full_disk_home, full_disk_home.web
    alerts: list[dict] = []
    ready = threading.Event()

    def read_alerts():
        try:
            with api(web, "GET", "events", role="read-only", stream=True, timeout=120) as r:
                for name, data in sse_events(r):
                    if name == "snapshot":
                        ready.set()
                    elif name == "alert":
                        alerts.append(data)
        except requests.RequestException:
            pass          # the home went away at the end of the test
    threading.Thread(target=read_alerts, daemon=True).start()
    assert ready.wait(10), "no snapshot on the event stream"
    assert storage(web)["full"] is False
    browser = BoardInChromium(web)
    try:
        run_full_disk_episode(home, web, alerts, browser)
    finally:
        browser.close()


def run_full_disk_episode(home, web: Web, alerts: list[dict], browser: BoardInChromium) -> None:
    filler = fill(home.state_dir)
    dev = home.add_device()
    dev.start_dhcp("udhcpc")
    ip, _ = dev.wait_for_ipv4(20)                       # routing goes on: the device gets its lease
    # Its device and lease rows could not be written: the API says so.
    health = wait_for(lambda: (s := storage(web))["full"] and s, 20, "storage to be reported full")
    assert health["queued_writes"] >= 1 and health["writable"] is False

    # Login and reading still work; a change is refused with a clear error, not a 500.
    board = requests.Session()
    board.trust_env = False
    board.verify = web.ca
    r = board.post(f"{web.url}ws.v1/login", json={"password": home.admin_password}, timeout=10)
    assert r.status_code == 200, r.text
    csrf = r.json()["csrf"]
    assert board.get(f"{web.url}ws.v1/status", timeout=10).status_code == 200
    r = api(web, "GET", f"status/{dev.mac}")
    assert r.status_code == 200 and r.json()["lease"]["ip"] == ip, r.text
    assert api(web, "GET", "devices", role="read-only").status_code == 200
    assert board.get(f"{web.url}ws.v1/session", timeout=10).json()["storage"]["full"] is True
    r = board.post(f"{web.url}ws.v1/permit/{dev.mac}", headers={"X-CSRF-Token": csrf}, timeout=10)
    assert r.status_code == 503 and "storage is full" in r.json()["error"]
    # The board shows a banner.
    shown = browser.ask("shown")
    assert "storage is full" in shown.get("text", ""), shown
    # One Alert for the episode, however many retries failed.
    wait_for(lambda: alerts, 10, "the storage-full alert")
    time.sleep(3)
    assert [a["kind"] for a in alerts] == ["storage-full"], alerts

    # No renewal may write the lease again: what reaches the disk is what was queued.
    dev.stop_dhcp()
    filler.unlink()
    wait_for(lambda: storage(web)["writable"], 20, "storage to be writable again")
    assert browser.ask("hidden") == {"hidden": True}
    db = sqlite3.connect(f"file:{home.state_dir / 'state.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT expires FROM leases WHERE mac=?", (dev.mac,)).fetchall()
        assert rows and rows[0][0] > time.time(), f"lease of {dev.mac} lost: {rows}"
        assert db.execute("SELECT state FROM devices WHERE mac=?", (dev.mac,)).fetchall() == [("pending",)]
        assert db.execute("SELECT count(*) FROM api_sessions").fetchone()[0] >= 1   # the login made while full
    finally:
        db.close()
    # The session made on the full disk still works, and now changes do too.
    r = board.post(f"{web.url}ws.v1/permit/{dev.mac}", headers={"X-CSRF-Token": csrf}, timeout=10)
    assert r.status_code == 200 and r.json()["state"] == "permitted", r.text
