"""The .hwbak file: one JSON document.

    {"format": "homework-backup", "version": 1, "created": "...", "schema": 8, "software": "0.1.0",
     "settings": {table: [rows]}, "secrets": {"kdf": "scrypt", "n", "r", "p", "salt", "nonce", "ciphertext"}}

The secrets are AES-GCM encrypted under a key derived from the passphrase with scrypt, and
the rest of the document (canonical JSON) is the AEAD's associated data: changing any
setting, the header or the ciphertext makes decryption fail, so one check covers the
whole file and a wrong passphrase is told apart from nothing else (both are refused).
"""
from __future__ import annotations

import base64
import json
import os
import time

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from ...values import BadValue, TooDeep, parse_json

FORMAT = "homework-backup"
VERSION = 1
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 15, 8, 1
# A file chooses its own KDF cost: bounded so a crafted file cannot make the router
# spend gigabytes of memory (scrypt needs 128 * n * r bytes) or minutes of CPU (n * r * p).
MAX_SCRYPT_N = 2 ** 17
MAX_SCRYPT_MEMORY = 64 * 1024 * 1024
MAX_SCRYPT_COST = 4 * SCRYPT_N * SCRYPT_R * SCRYPT_P
MIN_PASSPHRASE = 8
MAX_DOCUMENT = 16 * 1024 * 1024


class BackupError(ValueError):
    """The file cannot be used; the message says why. Nothing was changed."""


def _key(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode())


def _aad(doc: dict) -> bytes:
    rest = {k: v for k, v in doc.items() if k != "secrets"}
    return json.dumps(_canonical(rest), sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _canonical(value):
    """Whole floats as integers: a browser's JSON writes 1700000000.0 as 1700000000, and a
    file saved by the board must still check out."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def check_passphrase(passphrase) -> str:
    if not isinstance(passphrase, str) or len(passphrase) < MIN_PASSPHRASE:
        raise BackupError(f"passphrase: give at least {MIN_PASSPHRASE} characters")
    return passphrase


def pack(settings: dict, secrets: dict, passphrase: str, *, schema: int, software: str,
         now: float | None = None) -> dict:
    check_passphrase(passphrase)
    doc = {"format": FORMAT, "version": VERSION,
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now)),
           "schema": schema, "software": software, "settings": settings}
    salt, nonce = os.urandom(16), os.urandom(12)
    sealed = AESGCM(_key(passphrase, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)).encrypt(
        nonce, json.dumps(secrets, sort_keys=True).encode(), _aad(doc))
    doc["secrets"] = {"kdf": "scrypt", "n": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P,
                      "salt": _b64(salt), "nonce": _b64(nonce), "ciphertext": _b64(sealed)}
    return doc


def parse(raw) -> dict:
    """The file's bytes or text, or an already parsed document -> the document (not yet opened)."""
    if isinstance(raw, (bytes, str)):
        if len(raw) > MAX_DOCUMENT:
            raise BackupError(f"not a Homework backup: larger than {MAX_DOCUMENT // (1024 * 1024)} MiB")
        try:
            raw = parse_json(raw, "the file")
        except TooDeep as exc:
            raise BackupError(f"not a Homework backup: {exc}") from None
        except BadValue:
            raise BackupError("not a Homework backup: the file is not JSON (truncated or corrupt?)") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise BackupError(f"not a Homework backup (format is not {FORMAT!r})")
    if raw.get("version") != VERSION:
        raise BackupError(f"backup format version {raw.get('version')!r} is not supported "
                          f"(this release reads {VERSION})")
    return raw


def unpack(doc: dict, passphrase: str, latest_schema: int) -> tuple[dict, dict]:
    """(settings, secrets) of a parsed document once its integrity is proven."""
    schema = doc.get("schema")
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
        raise BackupError("backup: schema must be a positive whole number")
    if schema > latest_schema:
        raise BackupError(f"this backup was made by a newer release (state schema {schema}; this router "
                          f"understands up to {latest_schema}): update the router first, then restore")
    if not isinstance(doc.get("settings"), dict):
        raise BackupError("backup: settings missing")
    check_passphrase(passphrase)
    sealed = doc.get("secrets") or {}
    try:
        n, r, p = int(sealed["n"]), int(sealed["r"]), int(sealed["p"])
        if sealed.get("kdf") != "scrypt" or not (2 <= n <= MAX_SCRYPT_N and n & (n - 1) == 0) \
                or not (1 <= r <= 16 and 1 <= p <= 4) or 128 * n * r > MAX_SCRYPT_MEMORY \
                or n * r * p > MAX_SCRYPT_COST:
            raise ValueError
        salt, nonce, ciphertext = (base64.b64decode(sealed[k], validate=True) for k in ("salt", "nonce", "ciphertext"))
    except (KeyError, TypeError, ValueError):
        raise BackupError("backup: the encrypted part is damaged or missing") from None
    try:
        plain = AESGCM(_key(passphrase, salt, n, r, p)).decrypt(nonce, ciphertext, _aad(doc))
    except (InvalidTag, ValueError):
        raise BackupError("wrong passphrase, or the backup was changed after it was made: nothing restored") from None
    try:
        secrets = parse_json(plain, "the encrypted part")
    except BadValue as exc:
        raise BackupError(f"backup: {exc}") from None
    return doc["settings"], secrets


def read_file(path) -> bytes:
    try:
        with open(str(path), "rb") as f:
            return f.read(MAX_DOCUMENT + 1)
    except OSError as exc:
        raise BackupError(f"cannot read {path}: {exc.strerror}") from None


def filename(now: float | None = None) -> str:
    return time.strftime("homework-backup-%Y-%m-%d.hwbak", time.gmtime(time.time() if now is None else now))


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")
