"""The Wi-Fi network name and passphrase: what the settings page's "Wi-Fi" section sets.

    wifi-info                        -> {ssid, interfaces, passphrase_set, apply_command, last_apply}
    set-wifi {ssid, passphrase?}     -> {ssid, interfaces, passphrase_set, applying, note}
                                        (no passphrase: keep the current one)

They are kept in `<state.dir>/wifi.env` (mode 0600), the shell-quoted `SSID=` / `PASSPHRASE=`
file the image's first boot creates and its hostapd units read, so there is one copy of the
secret on the router and a factory reset (which wipes state.db) keeps the Wi-Fi as it is.
After a change `[wifi] apply_command` (the image: `homework-wifi apply`, which restarts hostapd
so stations re-associate) runs in the background: a hostapd restart takes seconds and must not
hold the API. The passphrase is never returned.
"""
from __future__ import annotations

import logging
import os
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path
from collections.abc import Callable

from .commands import CommandError
from . import events

log = logging.getLogger("homework.wifi")

ENV_NAME = "wifi.env"
APPLY_TIMEOUT = 60
HEX_PSK = re.compile(r"^[0-9A-Fa-f]{64}$")


def check_ssid(ssid) -> str:
    """1-32 bytes of UTF-8 (802.11's limit); control characters would break hostapd's and the
    console's line-based formats, so they are refused too."""
    if not isinstance(ssid, str) or not ssid:
        raise CommandError("ssid: give the network name (1-32 bytes)")
    size = len(ssid.encode("utf-8", "surrogatepass"))
    if size > 32:
        raise CommandError(f"ssid: at most 32 bytes of UTF-8 (this one is {size})")
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in ssid):
        raise CommandError("ssid: no control characters")
    return ssid


def check_passphrase(passphrase) -> str:
    """WPA2-PSK: 8-63 printable ASCII characters, or the 256-bit key as 64 hex digits."""
    if not isinstance(passphrase, str):
        raise CommandError("passphrase: give 8-63 printable ASCII characters (or 64 hex digits)")
    if HEX_PSK.match(passphrase):
        return passphrase
    if not 8 <= len(passphrase) <= 63:
        raise CommandError(f"passphrase: 8-63 characters (or 64 hex digits); this one has {len(passphrase)}")
    if any(not 32 <= ord(c) <= 126 for c in passphrase):
        raise CommandError("passphrase: printable ASCII only (letters, digits, space and punctuation)")
    return passphrase


def read_env(path: Path) -> dict[str, str]:
    """KEY=value lines, shell-quoted or bare (the first boot's form); {} when there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    values = {}
    for line in text.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue                      # an unbalanced quote: not ours to guess
        if len(words) == 1 and "=" in words[0]:
            key, value = words[0].split("=", 1)
            values[key] = value
    return values


def write_env(path: Path, ssid: str, passphrase: str) -> None:
    """Atomically (temp file + rename), readable by root only."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"SSID={shlex.quote(ssid)}\nPASSPHRASE={shlex.quote(passphrase)}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class WifiSettings:
    def __init__(self, env_file: Path, apply_command: str, interfaces: list[str],
                 changed: Callable[[str], None] = lambda ssid: None):
        self.env_file = env_file
        self.changed = changed      # told the new SSID after each save (satellites follow: satlink)
        self.apply_command = apply_command
        self.interfaces = list(interfaces)
        self.last_apply: dict | None = None
        self._write_lock = threading.Lock()
        self._apply_lock = threading.Lock()   # one apply at a time; a save meanwhile is applied after it

    def info(self) -> dict:
        env = read_env(self.env_file)
        return {"ssid": env.get("SSID", ""), "interfaces": self.interfaces,
                "passphrase_set": bool(env.get("PASSPHRASE")),
                "apply_command": bool(self.apply_command), "last_apply": self.last_apply}

    def set(self, ssid=None, passphrase=None) -> dict:
        """A new SSID; a new passphrase, or None to keep the current one (a rename only)."""
        ssid = check_ssid(ssid)
        if passphrase is None:
            passphrase = read_env(self.env_file).get("PASSPHRASE")
            if not passphrase:
                raise CommandError("passphrase: none is set yet: give one (8-63 characters)")
        check_passphrase(passphrase)
        renamed_only = passphrase == read_env(self.env_file).get("PASSPHRASE")
        with self._write_lock:
            try:
                write_env(self.env_file, ssid, passphrase)
            except OSError as exc:
                raise CommandError(f"wifi: cannot save the settings ({exc.strerror})", 503) from None
        log.warning("Wi-Fi settings changed: SSID %r, passphrase %s", ssid, "kept" if renamed_only else "changed")
        self.changed(ssid)
        applying = bool(self.apply_command)
        if applying:
            threading.Thread(target=self._apply, daemon=True, name="wifi-apply").start()
        return {**self.info(), "applying": applying,
                "note": "the access point restarts with the new settings: stations re-associate in a few seconds"
                if applying else "saved; no [wifi] apply_command is configured to use it"}

    def _apply(self) -> None:
        with self._apply_lock:
            started = time.time()
            try:
                res = subprocess.run(shlex.split(self.apply_command), capture_output=True, text=True,
                                     timeout=APPLY_TIMEOUT, stdin=subprocess.DEVNULL)
                ok, detail = res.returncode == 0, (res.stderr or res.stdout).strip()[-300:]
            except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
                ok, detail = False, str(exc)
            self.last_apply = {"ok": ok, "at": started, "error": "" if ok else detail}
        if not ok:
            log.warning("[wifi] apply_command failed: %s", detail)


def register(core) -> WifiSettings:
    cfg = core.config
    wifi = WifiSettings(Path(cfg.state_dir) / ENV_NAME, cfg.wifi_apply_command, cfg.radio_interfaces,
                        changed=lambda ssid: core.bus.publish(events.Wifi(ssid=ssid)))
    core.commands.register("wifi-info", wifi.info)
    core.commands.register("set-wifi", wifi.set)
    return wifi
