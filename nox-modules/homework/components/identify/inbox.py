"""What devices' DHCP messages said, as they came, until the identify component reads
them on its timer (interfaces.DeviceSays).

dhcp and routing hand over the raw bytes (a DHCPv4 request's options, a DHCPv6 message,
homework-dhcpd's note) in the packet's handler: one dict store, keyed by device and
source, so a device that asks ten times between two reads is read once, and its last
message is the one read. Parsing (fingerprint.py), the check whether it says anything
new, classification and the state database's write all happen later, a batch at a time,
after the answer went out.

Bounded: at most WAITING_MAX devices wait (beyond, a new device's message is counted and
left: it asks again within seconds, and the new-MAC gate has already limited how many new
devices a port may bring); at most READ_MAX are read per timer pass.
"""
from __future__ import annotations

from itertools import islice

from ... import fingerprint

WAITING_MAX = 4096
READ_MAX = 256
SOURCES = ("dhcp", "dhcp6", "dhcpd")


class Inbox:
    def __init__(self):
        self._waiting: dict[tuple[str, str], object] = {}     # (mac, source) -> as it came
        self._last4: dict[str, tuple] = {}      # mac -> fingerprint.key4 of its last DHCPv4 request read
        self._last_raw: dict[str, int] = {}     # mac -> hash of its last DHCPv4 request's bytes (the same again)
        self.dropped = 0                        # messages left because WAITING_MAX were waiting

    # -- on the packet's path (DeviceSays): a store, nothing more ----------------------------
    def dhcp4(self, mac: str, options: bytes) -> None:
        self._put(mac, "dhcp", options)

    def dhcp6(self, mac: str, payload: bytes) -> None:
        self._put(mac, "dhcp6", payload)

    def dhcpd_note(self, mac: str, fp: object) -> None:
        self._put(mac, "dhcpd", fp)

    def _put(self, mac: str, source: str, raw: object) -> None:
        waiting = self._waiting
        if len(waiting) >= WAITING_MAX and (mac, source) not in waiting:
            self.dropped += 1
            return
        waiting[(mac, source)] = raw

    # -- on identify's timer ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._waiting)

    def read(self, limit: int = READ_MAX) -> list[tuple[str, str, dict[str, str]]]:
        """(mac, source, evidence) of up to `limit` waiting messages, oldest first, each read
        as fingerprint.py reads it; a DHCPv4 request whose telling options are the same as
        the device's last one's is not news and is left out."""
        out = []
        for key in list(islice(self._waiting, limit)):
            raw = self._waiting.pop(key)
            found = self._evidence(key[0], key[1], raw)
            if found:
                out.append((key[0], key[1], found))
        return out

    def read_device(self, mac: str) -> list[tuple[str, str, dict[str, str]]]:
        """What `mac` said that is still waiting (a view asked for before the timer came)."""
        out = []
        for source in SOURCES:
            raw = self._waiting.pop((mac, source), None)
            if raw is not None:
                found = self._evidence(mac, source, raw)
                if found:
                    out.append((mac, source, found))
        return out

    def forget(self, mac: str) -> None:
        self._last4.pop(mac, None)
        self._last_raw.pop(mac, None)
        for source in SOURCES:
            self._waiting.pop((mac, source), None)

    def _evidence(self, mac: str, source: str, raw) -> dict[str, str]:
        if source == "dhcp":
            if not isinstance(raw, bytes):
                return {}
            digest = hash(raw)          # the very same request again (a retry, a renewal): not read
            if self._last_raw.get(mac) == digest:
                return {}
            self._last_raw[mac] = digest
            options = fingerprint.options_of(raw)
            key = fingerprint.key4(options)
            if self._last4.get(mac) == key:
                return {}
            self._last4[mac] = key
            return fingerprint.dhcp4(options)
        if source == "dhcp6":
            return fingerprint.dhcp6(raw) if isinstance(raw, bytes) else {}
        return fingerprint.from_note(raw)
