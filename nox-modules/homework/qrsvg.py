"""Text as a QR code in SVG, by Debian's qrencode: a remote-access client's WireGuard file
(components/remote) and a wall tablet's pairing link (components/api/panels.py)."""
from __future__ import annotations

import subprocess


def qr_svg(text: str) -> str:
    """The QR code of `text` as SVG ('' when qrencode is missing or fails)."""
    try:
        res = subprocess.run(["qrencode", "-t", "SVG", "-o", "-", "-m", "2", "-l", "M"], input=text.encode(),
                             capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return res.stdout.decode() if res.returncode == 0 else ""
