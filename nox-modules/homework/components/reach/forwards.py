"""Port forwards: an external port (or range) and protocol of the router's WAN that go to
one device's port. A forward belongs to the device by its MAC, never by an address: the
plan (plan.py) looks the device's current /30 and /64 up each time it is built.

One validator (`parse_forward`) for every way in: the CLI and the API through the
`forward-add` command, and a restored backup's rows (backup/validate.py calls it too).
Stored in state.db, table `port_forwards` (migration 16), mirrored in memory.
"""
from __future__ import annotations

from dataclasses import dataclass

PROTOCOLS = ("tcp", "udp", "both")
MAX_RANGE = 1024            # ports in one forward (a range wider than that is a typo, not a game)
DESCRIPTION_LIMIT = 64
MAX_FORWARDS = 256          # the household's whole list


class ForwardError(ValueError):
    """A forward's value is wrong; the message says which and why, in a whole sentence."""


@dataclass(frozen=True)
class Forward:
    id: int
    mac: str
    protocol: str           # tcp | udp | both
    first: int              # external ports first..last
    last: int
    to_port: int            # the device's port for `first` (a range keeps its ports: to_port == first)
    description: str = ""
    created: float = 0.0

    @property
    def protocols(self) -> tuple[str, ...]:
        return ("tcp", "udp") if self.protocol == "both" else (self.protocol,)

    @property
    def ports_text(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"

    def device_ports(self) -> tuple[int, int]:
        """The device's ports the external ones go to."""
        return self.to_port, self.to_port + (self.last - self.first)

    def overlaps(self, protocol: str, first: int, last: int) -> bool:
        shared = set(self.protocols) & set(("tcp", "udp") if protocol == "both" else (protocol,))
        return bool(shared) and first <= self.last and self.first <= last

    def as_dict(self) -> dict:
        return {"id": self.id, "mac": self.mac, "protocol": self.protocol, "ports": self.ports_text,
                "first": self.first, "last": self.last, "to_port": self.to_port,
                "description": self.description, "created": self.created}


def _port(value, what: str) -> int:
    if isinstance(value, bool):
        raise ForwardError(f"{what} must be a port number from 1 to 65535, got {value!r}.")
    try:
        port = int(str(value).strip())
    except (TypeError, ValueError):
        raise ForwardError(f"{what} must be a port number from 1 to 65535, got {value!r}.") from None
    if not 1 <= port <= 65535:
        raise ForwardError(f"{what} must be a port number from 1 to 65535, got {port}.")
    return port


def parse_ports(text) -> tuple[int, int]:
    """'8080' or '27015-27030' (also an int) -> (first, last)."""
    if isinstance(text, int) and not isinstance(text, bool):
        port = _port(text, "The external port")
        return port, port
    if not isinstance(text, str) or not text.strip():
        raise ForwardError("Give the external port, or a range such as 27015-27030.")
    first_text, sep, last_text = text.strip().partition("-")
    first = _port(first_text, "The external port")
    last = _port(last_text, "The last port of the range") if sep else first
    if last < first:
        raise ForwardError(f"The range {first}-{last} ends before it starts.")
    if last - first + 1 > MAX_RANGE:
        raise ForwardError(f"A range may hold at most {MAX_RANGE} ports; {first}-{last} holds {last - first + 1}.")
    return first, last


def parse_protocol(value) -> str:
    protocol = (value or "tcp") if isinstance(value, str) or value is None else value
    if not isinstance(protocol, str) or protocol.lower() not in PROTOCOLS:
        raise ForwardError(f"The protocol must be tcp, udp or both, got {value!r}.")
    return protocol.lower()


def parse_description(value) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > DESCRIPTION_LIMIT or any(ord(c) < 0x20 for c in value):
        raise ForwardError(f"The description must be text of at most {DESCRIPTION_LIMIT} printable characters.")
    return value.strip()


def parse_forward(ports, protocol=None, to_port=None, description=None) -> tuple[str, int, int, int, str]:
    """(protocol, first, last, to_port, description) from what a person typed. A single
    port may go to another port of the device; a range goes to the same ports."""
    first, last = parse_ports(ports)
    protocol = parse_protocol(protocol)
    if to_port in (None, ""):
        to = first
    else:
        to = _port(to_port, "The device's port")
        if first != last and to != first:
            raise ForwardError(f"A range goes to the same ports on the device: {first}-{last} cannot start at "
                               f"port {to} there.")
    return protocol, first, last, to, parse_description(description)


class ForwardStore:
    """Rows of `port_forwards`, written at once (a forward added just before a restart
    must be there after it)."""

    def __init__(self, state):
        self.state = state
        self.by_id: dict[int, Forward] = {}
        for r in state.execute("SELECT id, mac, protocol, first, last, to_port, description, created "
                               "FROM port_forwards"):
            self.by_id[r["id"]] = Forward(r["id"], r["mac"], r["protocol"], r["first"], r["last"], r["to_port"],
                                          r["description"], r["created"])

    def all(self) -> list[Forward]:
        return sorted(self.by_id.values(), key=lambda f: (f.first, f.id))

    def of(self, mac: str) -> list[Forward]:
        return [f for f in self.all() if f.mac == mac]

    def clash(self, protocol: str, first: int, last: int) -> Forward | None:
        return next((f for f in self.all() if f.overlaps(protocol, first, last)), None)

    def add(self, mac: str, protocol: str, first: int, last: int, to_port: int, description: str,
            now: float) -> Forward:
        rows = self.state.execute(
            "INSERT INTO port_forwards (mac, protocol, first, last, to_port, description, created) "
            "VALUES (?,?,?,?,?,?,?) RETURNING id", (mac, protocol, first, last, to_port, description, now))
        forward = Forward(rows[0]["id"], mac, protocol, first, last, to_port, description, now)
        self.by_id[forward.id] = forward
        return forward

    def remove(self, forward_id: int) -> Forward | None:
        forward = self.by_id.pop(forward_id, None)
        if forward is not None:
            self.state.execute("DELETE FROM port_forwards WHERE id=?", (forward_id,))
        return forward

    def remove_device(self, mac: str) -> list[Forward]:
        gone = self.of(mac)
        for forward in gone:
            self.by_id.pop(forward.id, None)
        if gone:
            self.state.execute("DELETE FROM port_forwards WHERE mac=?", (mac,))
        return gone
