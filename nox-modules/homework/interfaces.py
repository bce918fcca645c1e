"""The small interfaces components offer one another.

A component that uses another's service names the interface in its manifest's `needs`
(constructor keyword -> interface) and takes it as a keyword of its constructor; the
component that provides it names it in `offers` and returns it from `offer()`. The core
constructs the offering component first and hands the interface over at construction
(None when no loaded component offers it). So no component looks a sibling up by name or
reaches into its internals, and what depends on what is written in the manifests
(docs/architecture.md, "Declared dependencies").

The lease reader (leases.LeaseReader, offered by dhcp) is the one interface shared by
nearly everyone: the core puts it on the context (`ctx.leases`) before it constructs any
other component.
"""
from __future__ import annotations

from typing import Protocol
from collections.abc import Callable, Iterable


class BlockedNames(Protocol):
    """A blocklist's names as the reverse check asks them (blocklists.store.SortedNames)."""

    def covers(self, name: str) -> bool:
        """Listed, itself or a parent, with no more specific exception."""


class DnsLists(Protocol):
    """What the dns component offers the blocklists component: lists of blocked names put
    in force in homework-dnsd and in the reverse check, and safe-search."""

    def set_list(self, list_id: str, macs: frozenset[str] | None, names: BlockedNames) -> None:
        """The reverse check's copy of a list (macs None: the whole household's)."""

    def remove_list(self, list_id: str) -> None:
        """The reverse check forgets a list."""

    def send(self, lines: list[str]) -> bool:
        """Lines for homework-dnsd (`list`, `unlist`, `safesearch`); then every device's
        flows are brought in line with the lists. True when dnsd confirmed (or no dnsd)."""

    def resend_on_reconnect(self, lines: Callable[[], Iterable[str]]) -> None:
        """Lines sent again, as they are then, whenever homework-dnsd (re)connects."""

    def stats(self) -> dict:
        """homework-dnsd's counters (`list_blocked.<id>`: queries a list blocked); {} without it."""


class DnsdReady(Protocol):
    """What the dns component offers the backup component: is homework-dnsd in step with
    the policy (connected and told it, or not used at all)?"""

    def ready(self) -> bool: ...


class RestoredLists(Protocol):
    """What the blocklists component offers the backup component: a restore's lists fetched
    before anything is written, then adopted under their new ids."""

    def prefetch(self, rows: list[dict]) -> dict:
        """url -> a staged names file and its counts, or the problem in words."""

    def drop_prefetched(self, prefetched: dict) -> None:
        """A restore that wrote nothing: its staged files go."""

    def adopt(self, prefetched: dict) -> list[str]:
        """After the restore's transaction: each list gets its names; the problems, in words."""

    def pending(self) -> list[int]:
        """Enabled lists whose names are not in force yet and are still to be fetched."""


class BrokerStatus(Protocol):
    """What the mqtt component offers the notify component's status view."""

    def connected(self) -> bool: ...


class RadioStations(Protocol):
    """What the radio monitor offers the link simulator."""

    def associated(self, mac: str) -> bool:
        """Does a real radio (the router's or a satellite's) report this station?"""


class DeviceSays(Protocol):
    """What the identify component offers dhcp and routing: a device's DHCP messages handed
    over as they came, on the packet's path, for identify to read on its own timer (nothing
    is parsed, compared or published in the packet's handler). Each call is a dict store."""

    def dhcp4(self, mac: str, options: bytes) -> None:
        """A DHCPv4 request's options, the raw bytes after the magic cookie."""

    def dhcp6(self, mac: str, payload: bytes) -> None:
        """A DHCPv6 client message (the UDP payload)."""

    def dhcpd_note(self, mac: str, fp: object) -> None:
        """What homework-dhcpd's note of a new device's offer says it sent (`fp`, unchecked)."""
