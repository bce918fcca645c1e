"""hostapd's deny list: the file (read by hostapd at start and on `reload`) and, at run
time, `hostapd_cli deny_acl ADD_MAC/DEL_MAC` plus `deauthenticate`, which take effect at
once without reloading the whole access point (a reload would make every station
re-associate). Runs in a worker thread: hostapd being slow or absent never holds up the
controller."""
from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Sequence

from ...worker import BatchWorker

log = logging.getLogger("homework.eapol.hostapd")


class HostapdDenyList:
    def __init__(self, deny_file: str, ctrl: str):
        self.deny_file = deny_file
        self.ctrl_dir, self.iface = os.path.split(ctrl) if ctrl else ("", "")
        self._worker = BatchWorker("hostapd-deny", self._apply_batch)
        self._write_lock = threading.Lock()

    def update(self, blacklisted: list[str], added: Sequence[str] = (), removed: Sequence[str] = ()) -> None:
        self._worker.put((sorted(blacklisted), list(added), list(removed)))

    def flush(self) -> None:
        """Wait until every queued update has been applied (tests, shutdown)."""
        self._worker.flush()

    def _apply_batch(self, jobs: list[tuple[list[str], list[str], list[str]]]) -> None:
        for blacklisted, added, removed in jobs:   # in order: each add/remove reaches hostapd
            self.apply(blacklisted, added, removed)

    def apply(self, blacklisted: list[str], added: list[str], removed: list[str]) -> None:
        if self.deny_file:
            os.makedirs(os.path.dirname(self.deny_file) or ".", exist_ok=True)
            with self._write_lock:      # one writer of the temp file at a time
                tmp = f"{self.deny_file}.tmp"
                with open(tmp, "w") as fh:
                    fh.write("# written by the Homework controller: blacklisted devices\n")
                    fh.writelines(f"{mac}\n" for mac in blacklisted)
                os.replace(tmp, self.deny_file)
        if not self.iface:
            return
        for mac in added:
            self._cli("deny_acl", "ADD_MAC", mac)
            self._cli("deauthenticate", mac)
        for mac in removed:
            self._cli("deny_acl", "DEL_MAC", mac)

    def _cli(self, *args: str) -> None:
        cmd = ["hostapd_cli", "-p", self.ctrl_dir, "-i", self.iface, *args]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("%s: %s", " ".join(cmd), exc)
            return
        out = (res.stdout + res.stderr).strip()
        if res.returncode != 0 or "FAIL" in out:
            log.warning("%s: %s", " ".join(args), out or f"exit {res.returncode}")
