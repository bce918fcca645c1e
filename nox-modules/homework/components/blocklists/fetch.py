"""A list's URL, checked when the household gives it (the API, the CLI and a restore
use this one check); the fetch itself is httpout.download (a total deadline, a size cap,
never to a local address unless allowed)."""
from __future__ import annotations

import urllib.parse


class FetchError(ValueError):
    """The list could not be fetched; the message is for the household."""


def check_url(url: object) -> str:
    if not isinstance(url, str) or not url.strip():
        raise FetchError("give the list's URL (http:// or https://)")
    url = url.strip()
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port       # noqa: B018 - raises for a port out of range
    except ValueError as exc:
        raise FetchError(f"{url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"{url!r} is not an http:// or https:// URL")
    if len(url) > 2000 or any(c.isspace() or ord(c) < 0x20 for c in url):
        raise FetchError("the URL is too long or contains spaces or control characters")
    return url
