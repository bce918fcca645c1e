"""Fixtures that run the real hwdbd: each daemon gets a free ephemeral port on
127.0.0.1 (--port 0, read back from its ready line) and is killed by PID afterwards,
even when the test fails."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HWDB_DIR = Path(__file__).resolve().parents[2] / "hwdb"
sys.path.insert(0, str(HWDB_DIR / "python"))

BIN = HWDB_DIR / "target" / "release"
SCHEMA = HWDB_DIR / "schema" / "router.hwdb"
READY = re.compile(r"ready on 127\.0\.0\.1:(\d+)")


def _ensure_built() -> None:
    if not (BIN / "hwdbd").exists() or not (BIN / "hwdb").exists():
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=HWDB_DIR, check=True)


class Daemon:
    """A running hwdbd; `port`, `pid`, `state_dir`, `log` (stderr lines so far)."""

    def __init__(self, state_dir: Path, extra: list[str] | None = None):
        _ensure_built()
        self.state_dir = state_dir
        args = [str(BIN / "hwdbd"), "--port", "0", "--listen", "127.0.0.1", "--schema", str(SCHEMA),
                "--state-dir", str(state_dir), "--memory", "16M"] + (extra or [])
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.log: list[str] = []
        lines: queue.Queue[str | None] = queue.Queue()

        def pump():
            for line in self.proc.stderr:
                self.log.append(line.rstrip("\n"))
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        self.port = None
        try:
            while self.port is None:
                line = lines.get(timeout=15)
                if line is None:
                    raise RuntimeError("hwdbd exited before it was ready:\n" + "\n".join(self.log))
                m = READY.search(line)
                if m:
                    self.port = int(m.group(1))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, 9)
        self.proc.wait(timeout=10)


@pytest.fixture
def start_daemon(tmp_path):
    started: list[Daemon] = []

    def start(state_dir: Path | None = None, extra: list[str] | None = None) -> Daemon:
        d = Daemon(state_dir or tmp_path / "state", extra)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


@pytest.fixture
def daemon(start_daemon) -> Daemon:
    return start_daemon()


@pytest.fixture
def client(daemon):
    import hwdb_client

    c = hwdb_client.Client(port=daemon.port, timeout=5)
    yield c
    c.close()


@pytest.fixture
def cli(daemon):
    """Run the hwdb CLI against the daemon: cli(args..., input=None) -> CompletedProcess."""
    _ensure_built()

    def run(*args: str, input: str | None = None, timeout: float = 20) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "hwdb"), "--port", str(daemon.port), "--timeout", "5", *args],
                              input=input, capture_output=True, text=True, timeout=timeout)

    return run
