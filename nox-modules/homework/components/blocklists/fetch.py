"""Fetch a list over HTTP(S) with the standard library: a timeout, a size cap, and an
error that says what went wrong (the API shows it; nothing is stored on error)."""
from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request

DEFAULT_TIMEOUT = 30.0
DEFAULT_CAP = 64 * 1024 * 1024
USER_AGENT = "homework-router blocklists"


class FetchError(ValueError):
    """The list could not be fetched; the message is for the household."""


def check_url(url: object) -> str:
    if not isinstance(url, str) or not url.strip():
        raise FetchError("give the list's URL (http:// or https://)")
    url = url.strip()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"{url!r} is not an http:// or https:// URL")
    if len(url) > 2000 or any(c.isspace() or ord(c) < 0x20 for c in url):
        raise FetchError("the URL is too long or contains spaces or control characters")
    return url


def fetch(url: str, timeout: float = DEFAULT_TIMEOUT, cap: int = DEFAULT_CAP) -> str:
    """The list's text (UTF-8; undecodable bytes replaced)."""
    url = check_url(url)
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:   # noqa: S310 (scheme checked)
            length = resp.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > cap:
                raise FetchError(f"the list is {int(length)} bytes, more than the {cap} allowed")
            body = resp.read(cap + 1)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{url} answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise FetchError(f"cannot fetch {url}: {exc.reason}") from None
    except (TimeoutError, OSError) as exc:
        raise FetchError(f"cannot fetch {url}: {exc}") from None
    if len(body) > cap:
        raise FetchError(f"the list is larger than the {cap} bytes allowed")
    return body.decode("utf-8", errors="replace")
