"""The admin password's hash: scrypt, slow on purpose (a password is guessable).

A module of its own, with nothing but the standard library, because the image's
homework-firstboot checks at every boot whether the initial password was changed: through
the API package that check imported the whole web stack, which under the boot test's
emulated CPU cost about 20 s of every boot."""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

# ~16 MiB and tens of milliseconds per try; an online guesser is further slowed by the
# API's failed-login limiter.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 1


def hash_password(password: str, salt: bytes | None = None) -> str:
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        want = base64.b64decode(digest)
        got = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r),
                             p=int(p), dklen=len(want))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, want)
