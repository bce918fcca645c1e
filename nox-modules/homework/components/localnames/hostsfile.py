"""The hosts file dnsmasq reads from its hostsdir: one line per named device,

    10.2.0.6 tv.home.arpa tv.lan tv

The first name is the one dnsmasq answers PTR queries with (home.arpa, RFC 8375, when it
is one of the local domains). dnsmasq re-reads a changed file in that directory by itself
(inotify; the records of the old version go), so no signal is needed. The file is written
to a dot-named temp file and renamed over the old one: dnsmasq ignores dot files and never
sees half a file.
"""
from __future__ import annotations

import os
from pathlib import Path

FILE_NAME = "homework"
HEADER = "# Written by the Homework controller (localnames): every permitted device's name.\n" \
         "# Rewritten on each change; edits here are lost.\n"
PREFERRED_DOMAIN = "home.arpa"


def domains_of(local_domains: str) -> list[str]:
    """[dns] local_domains as a list, the domain PTR answers use first."""
    domains = [d.strip().strip(".").lower() for d in local_domains.split(",") if d.strip().strip(".")]
    if PREFERRED_DOMAIN in domains:
        domains.remove(PREFERRED_DOMAIN)
        domains.insert(0, PREFERRED_DOMAIN)
    return list(dict.fromkeys(domains))


def fqdn(label: str, domains: list[str]) -> str:
    return f"{label}.{domains[0]}" if domains else label


def render(entries: dict[str, str], domains: list[str]) -> str:
    """entries: IPv4 address -> label. Sorted by label, so equal input gives equal bytes."""
    lines = [HEADER]
    for address, label in sorted(entries.items(), key=lambda item: item[1]):
        names = [f"{label}.{d}" for d in domains] + [label]
        lines.append(f"{address} {' '.join(names)}\n")
    return "".join(lines)


def write_atomically(directory: Path, text: str) -> bool:
    """Replace the hosts file with `text`; False (nothing written) if it already says that."""
    target = directory / FILE_NAME
    try:
        if target.read_text() == text:
            return False
    except OSError:
        pass
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{FILE_NAME}.tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o644)       # dnsmasq reads it after dropping root
    os.replace(tmp, target)
    return True
