"""The satellite agent's channel: what a satellite's agent and the router's
controller say to each other, one JSON object per line, over TLS with certificates from
the household CA on both ends (pki.HouseholdCA.server_context / pki.client_context).

OpenFlow drives a satellite's switch; it has no way to reach its access point. This
channel carries the rest, in the direction each belongs:

    router -> agent  {"type": "wifi", "ssid": S, "passphrase": P}     the one network, on connect and on change
                     {"type": "deny", "macs": [MAC, ...]}              hostapd's deny list (blacklisted devices)
                     {"type": "unpaired", "state": S}                   the household no longer admits this
                                                                       satellite (S: denied, forgotten or
                                                                       replaced); the session ends after it
    agent -> router  {"type": "hello", "radios": [IF, ...]}            once, after the handshake
                     {"type": "radio", "radio": IF, "dump": TEXT, "info": TEXT}
                                                                       every 0.5 s: `iw dev IF station dump`
                                                                       and `iw dev IF info`, as read there

The agent sends the radio's own text rather than numbers it parsed: the router reads it
with the same parser as its own radios (components/radio), so one piece of code decides
what a station dump means. Anything else - a line over MAX_LINE, not JSON, an unknown
type, a field of the wrong shape - is a WireError: the receiver counts it and drops the
line, the session lives on.
"""
from __future__ import annotations

import json
import re

from . import macaddr
from .commands import CommandError
from .wifi import check_passphrase, check_ssid

MAX_LINE = 256 * 1024          # a station dump of ~500 stations
MAX_DENY = 4096
RADIO_NAME = re.compile(r"^[A-Za-z0-9._-]{1,15}$")   # a Linux interface name
DEFAULT_PORT = 6655


class WireError(ValueError):
    pass


def encode(message: dict) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class LineReader:
    """Lines from a (TLS) socket, each at most MAX_LINE bytes."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.skipping = False       # inside a line that was too long: drop up to its end

    def read(self) -> dict | None:
        """The next message; None when the peer closed. A bad line raises WireError (the
        reader stays usable: the next call goes on after it)."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line, self.buffer = self.buffer[:end], self.buffer[end + 1:]
                if self.skipping:
                    self.skipping = False
                    continue
                if len(line) > MAX_LINE:
                    raise WireError(f"a line longer than {MAX_LINE} bytes")
                return decode(line)
            if len(self.buffer) > MAX_LINE:
                self.buffer, self.skipping = b"", True
                raise WireError(f"a line longer than {MAX_LINE} bytes")
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk


def decode(line: bytes) -> dict:
    try:
        message = json.loads(line)
    except (UnicodeDecodeError, ValueError) as exc:
        raise WireError(f"not JSON: {exc}") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise WireError("not an object with a \"type\"")
    return message


def _text(message: dict, key: str, limit: int = MAX_LINE) -> str:
    value = message.get(key, "")
    if not isinstance(value, str) or len(value) > limit:
        raise WireError(f"{key}: a string of at most {limit} characters")
    return value


def radio_name(value) -> str:
    if not isinstance(value, str) or not RADIO_NAME.match(value):
        raise WireError(f"radio: an interface name (letters, digits, . _ -; 1-15), not {value!r}")
    return value


def hello(message: dict) -> list[str]:
    radios = message.get("radios", [])
    if not isinstance(radios, list) or len(radios) > 16:
        raise WireError("radios: a list of at most 16 interface names")
    return [radio_name(r) for r in radios]


def radio_report(message: dict) -> tuple[str, str, str]:
    """(radio, station dump text, info text)."""
    return radio_name(message.get("radio")), _text(message, "dump"), _text(message, "info", 65536)


def wifi(message: dict) -> tuple[str, str]:
    try:
        return check_ssid(message.get("ssid")), check_passphrase(message.get("passphrase"))
    except CommandError as exc:
        raise WireError(str(exc)) from None


UNPAIRED_STATES = ("denied", "forgotten", "replaced")


def unpaired(message: dict) -> str:
    """Why the router no longer admits this satellite: denied, forgotten or replaced."""
    state = message.get("state")
    if state not in UNPAIRED_STATES:
        raise WireError(f"state: one of {', '.join(UNPAIRED_STATES)}, not {state!r}")
    return state


def deny(message: dict) -> list[str]:
    macs = message.get("macs")
    if not isinstance(macs, list) or len(macs) > MAX_DENY:
        raise WireError(f"macs: a list of at most {MAX_DENY} MAC addresses")
    out = set()
    for mac in macs:
        try:
            out.add(macaddr.normalize(mac))
        except (TypeError, ValueError, AttributeError):
            raise WireError(f"macs: not a MAC address: {mac!r}") from None
    return sorted(out)
