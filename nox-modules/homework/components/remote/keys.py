"""WireGuard keys (Curve25519), made here with python3-cryptography (already the backup's):
no process to start, and the same base64 text `wg genkey | wg pubkey` gives."""
from __future__ import annotations

import base64
import binascii
import os

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey


def new_private() -> str:
    key = X25519PrivateKey.generate()
    raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                            serialization.NoEncryption())
    return base64.b64encode(raw).decode()


def public_of(private: str) -> str:
    key = X25519PrivateKey.from_private_bytes(base64.b64decode(private))
    return base64.b64encode(key.public_key().public_bytes(serialization.Encoding.Raw,
                                                           serialization.PublicFormat.Raw)).decode()


def new_preshared() -> str:
    """A preshared key: a second, symmetric layer (post-quantum hedging, as wg genpsk)."""
    return base64.b64encode(os.urandom(32)).decode()


def is_key(text) -> bool:
    """32 bytes in base64: what every key above and every WireGuard key is."""
    try:
        return isinstance(text, str) and len(base64.b64decode(text, validate=True)) == 32
    except (binascii.Error, ValueError):
        return False
