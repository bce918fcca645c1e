"""The first hour on a new (or factory-reset) router: who may set it up from the LAN.

A router nobody has set up yet (its admin password is still the one it made itself at
first boot, or the one a factory reset brought back) offers "This is my router: set it
up" on the waiting page. The set-up chooses the household's password and lets the
device that did it in (components/api/setup.py). What the device must show:

- on a wired port of the router: nothing more. At first boot nobody can be on the
  Wi-Fi (its passphrase exists only on the router's console), so a wired device was
  plugged in by someone standing at the router; after a factory reset, the one who reset
  it is at hand.
- on the Wi-Fi (or anywhere the router cannot tell): a secret from the router itself,
  either the first-boot password from its console, or the set-up code the factory reset
  showed on the board of whoever reset it (kept here, outside state.db, until the
  set-up is done).

The offer closes for good once the household has a password of its own: the set-up, a
password change, a login with the first password (it was taken over), a restore
(a backup's password), or a device let in by any other door.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import ssl
from pathlib import Path

SETUP_CODE_FILE = "setup-code"       # in [state] dir; a factory reset leaves it
CODE_ALPHABET = "ACDEFGHJKLMNPQRTUVWXY345679"   # no look-alikes (0/O, 1/I/L, 2/Z, 8/B)
CODE_LENGTH = 8


def new_setup_code(state_dir: str | Path) -> str:
    """A fresh set-up code (XXXX-XXXX), written 0600 next to state.db; replaces any older one."""
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    shown = f"{code[:4]}-{code[4:]}"
    path = Path(state_dir) / SETUP_CODE_FILE
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(shown + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return shown


def _normal(code: str) -> str:
    return "".join(ch for ch in code.upper() if ch.isalnum())


def setup_code_matches(state_dir: str | Path, given) -> bool:
    if not isinstance(given, str) or not 4 <= len(given) <= 32:
        return False
    try:
        kept = (Path(state_dir) / SETUP_CODE_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(kept) and hmac.compare_digest(_normal(kept).encode(), _normal(given).encode())


def has_setup_code(state_dir: str | Path) -> bool:
    return (Path(state_dir) / SETUP_CODE_FILE).is_file()


def drop_setup_code(state_dir: str | Path) -> None:
    try:
        (Path(state_dir) / SETUP_CODE_FILE).unlink()
    except FileNotFoundError:
        pass


def is_wifi_port(name: str, radio_interfaces=(), sys_class_net: str = "/sys/class/net") -> bool:
    """A Wi-Fi interface of the router (an access point's port on the bridge)."""
    if name in radio_interfaces:
        return True
    base = Path(sys_class_net) / name
    return (base / "phy80211").exists() or (base / "wireless").exists()


def wired_port(ctx, mac: str) -> str | None:
    """The name of the router's wired port the device's lease is on, or None (Wi-Fi, a
    satellite's port, behind a relay, no lease, no switch)."""
    lease = ctx.leases.get(mac)
    dp = ctx.datapath
    if lease is None or not lease.local or dp is None:
        return None
    name = dp.port_name(lease.port)
    if not name or is_wifi_port(name, ctx.config.radio_interfaces):
        return None
    if any(name == s.router_port for s in ctx.config.satellites):
        return None         # a satellite's cable: its devices are behind another box
    return name


def certificate_fingerprint(state_dir: str | Path) -> str | None:
    """SHA-256 of the router's HTTPS certificate (the image keeps it in <state>/tls), as
    browsers and the console's HOMEWORK-CRED tls-sha256 line show it; None if not there."""
    try:
        pem = (Path(state_dir) / "tls" / "server.crt").read_text(encoding="ascii")
        der = ssl.PEM_cert_to_DER_cert(pem)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))
