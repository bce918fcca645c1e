"""MAC address parsing: accept ':' or '-' separators, store lowercase with ':'."""
import re

_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$")


class BadMac(ValueError):
    pass


def normalize(text: str) -> str:
    """'AA-BB-CC-DD-EE-FF' -> 'aa:bb:cc:dd:ee:ff'; raises BadMac naming the input."""
    if not isinstance(text, str) or not _MAC.match(text.strip()):
        raise BadMac(f"not a MAC address: {text!r} (expected six hex pairs separated by ':' or '-')")
    return text.strip().lower().replace("-", ":")


def to_bytes(mac: str) -> bytes:
    return bytes.fromhex(normalize(mac).replace(":", ""))


def from_bytes(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw[:6])
