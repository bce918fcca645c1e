"""The admin password's hash: scrypt, slow on purpose (a password is guessable).

A module of its own, with nothing but the standard library, because the image's
homework-firstboot checks at every boot whether the initial password was changed: through
the API package that check imported the whole web stack, which under the boot test's
emulated CPU cost about 20 s of every boot.

A stored hash carries its own scrypt parameters, and a backup carries the hash: so the
parameters are bounded (`check_hash`, used by the restore's validator and by every
verification), or a crafted backup with p=600 would make one wrong login cost a minute
of CPU."""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

# ~16 MiB and tens of milliseconds per try; an online guesser is further slowed by the
# API's failed-login limiter.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 1
# What a stored hash may ask for: at most 4x our own cost, and the memory scrypt allows
# by default (32 MiB: 128 * n * r bytes).
MAX_COST = 4 * SCRYPT_N * SCRYPT_R * SCRYPT_P
MAX_MEMORY = 32 * 1024 * 1024
MIN_N = 2 ** 10


class BadHash(ValueError):
    pass


def hash_password(password: str, salt: bytes | None = None) -> str:
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def parse_hash(stored) -> tuple[int, int, int, bytes, bytes]:
    """(n, r, p, salt, digest) of a stored hash within the bounds; BadHash names the problem."""
    if not isinstance(stored, str) or len(stored) > 512:
        raise BadHash("a password hash is text of at most 512 characters")
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        raise BadHash("a password hash reads scrypt$N$r$p$salt$digest")
    try:
        if not all(x.isascii() and x.isdigit() and len(x) <= 9 for x in parts[1:4]):
            raise ValueError
        n, r, p = (int(x) for x in parts[1:4])
        salt = base64.b64decode(parts[4], validate=True)
        digest = base64.b64decode(parts[5], validate=True)
    except (ValueError, binascii.Error):
        raise BadHash("a password hash's N, r and p are whole numbers, its salt and digest base64") from None
    if n < MIN_N or n & (n - 1) or not 1 <= r <= 32 or not 1 <= p <= 16:
        raise BadHash(f"scrypt N must be a power of two from {MIN_N}, r 1 to 32 and p 1 to 16")
    if n * r * p > MAX_COST or 128 * n * r > MAX_MEMORY:
        raise BadHash(f"scrypt N={n} r={r} p={p} costs more than a router should spend on one login "
                      f"(at most {MAX_COST // (SCRYPT_N * SCRYPT_R * SCRYPT_P)}x the default)")
    if not 8 <= len(salt) <= 64 or not 16 <= len(digest) <= 64:
        raise BadHash("a password hash's salt must be 8 to 64 bytes and its digest 16 to 64")
    return n, r, p, salt, digest


def check_hash(stored) -> str:
    """The validator of a stored hash (a restore's admin password): the text, or BadHash."""
    parse_hash(stored)
    return stored


def verify_password(password: str, stored: str) -> bool:
    try:
        n, r, p, salt, want = parse_hash(stored)
        got = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=len(want),
                             maxmem=MAX_MEMORY + 1024 * 1024)
    except (ValueError, TypeError, MemoryError):
        return False
    return hmac.compare_digest(got, want)
