"""The names that belong to the router and its satellites, never to a device.

A device whose DHCP host name is `homework` must not become `homework.lan` for everyone:
that is the router's name, the one its TLS certificate carries, so the household's
browser would trust the guest with the board's name. The same goes for the names
software looks up by itself (`wpad`: the proxy configuration; `isatap`; `localhost`;
`_gateway`, systemd's name for the default gateway) and the satellites' names.

One check, `reserved(label)`, used by everything that gives a device a name: the local
names a device answers to (localnames/labels.py: a reserved one gives no name), the name
the household types (devices.set_meta: refused with a message), and the label the Guest
Board shows for a device that calls itself so (api/board.py: marked, never shown as it)."""
from __future__ import annotations

import re
import socket
import unicodedata

# "_gateway" is a label once its underscore is dropped ("gateway"): both are reserved.
FIXED = frozenset({"homework", "router", "gateway", "_gateway", "wpad", "isatap", "localhost", "localdomain",
                   "homework-router", "homework-satellite", "satellite", "guest-board", "guestboard"})
SATELLITE = re.compile(r"^(?:homework-)?(?:satellite|sat)-?\d{1,3}$")     # "satellite 1", sat0, satellite1


def _own_hostname() -> str:
    try:
        return socket.gethostname().split(".", 1)[0].lower()
    except OSError:
        return ""


OWN = _own_hostname()


MAX_LABEL = 63
_NOT_LABEL = re.compile(r"[^a-z0-9]+")
_DROPPED = re.compile(r"['’`]")     # "Tom's" -> "toms", not "tom-s"


def label_of(text: str) -> str:
    """The DNS label a free-text name gives (RFC 1123: a-z, 0-9, '-', at most 63), "" if
    nothing usable is left: "Tom's Laptop" -> "toms-laptop", "Zoë" -> "zoe", "_gateway" -> "gateway"."""
    if not isinstance(text, str):
        return ""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    label = _NOT_LABEL.sub("-", _DROPPED.sub("", ascii_text.lower())).strip("-")
    return label[:MAX_LABEL].rstrip("-")


def reserved(label: str) -> bool:
    """Is this DNS label (lowercase, as localnames makes it) one of the router's?"""
    label = (label or "").strip().strip(".").lower()
    return label in FIXED or bool(SATELLITE.match(label)) or (bool(OWN) and label == OWN)


def check_device_name(name: str) -> str:
    """The validator of a name the household gives a device: ValueError if it is the
    router's or a satellite's."""
    label = label_of(name)
    if label and reserved(label):
        raise ValueError(f"{why(name.strip())}: give this device another name")
    return name


def why(label: str) -> str:
    """For the household: whose name it is."""
    if SATELLITE.match((label or "").lower()):
        return f"“{label}” is a satellite's name"
    return f"“{label}” is one of the router's own names"
