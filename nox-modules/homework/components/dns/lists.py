"""What the dns component offers the blocklists component (interfaces.DnsLists): the
lists' copy in the reverse check's policy, and their lines for homework-dnsd. The one way
blocklists reaches DNS; it never sees the component itself."""
from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Callable, Iterable

if TYPE_CHECKING:
    from ...interfaces import BlockedNames
    from .component import DnsComponent


class DnsListsOffer:
    def __init__(self, dns: DnsComponent):
        self._dns = dns

    def set_list(self, list_id: str, macs: frozenset[str] | None, names: BlockedNames) -> None:
        self._dns.policy.set_list(list_id, macs, names)

    def remove_list(self, list_id: str) -> None:
        self._dns.policy.remove_list(list_id)

    def send(self, lines: list[str]) -> bool:
        return self._dns.push_lines(lines)

    def resend_on_reconnect(self, lines: Callable[[], Iterable[str]]) -> None:
        self._dns.snapshot_sources.append(lambda: list(lines()))

    def stats(self) -> dict:
        link = self._dns.link
        return link.stats() if link is not None else {}
